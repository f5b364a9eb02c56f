"""``costtrack.instrument`` on the official ``openai`` clients against the canned provider:
Chat Completions and Responses, sync and async, streams (whole, cancelled midway), HTTP errors
and timeouts, Azure OpenAI; the event is the one ``from_openai`` makes of the same response."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any, List

import pytest
from canned_provider import (
    Canned,
    CannedProvider,
    chat_completion,
    chat_stream,
    chat_usage,
    openai_error,
    responses_stream,
    responses_usage,
)
from instrumented import Recorder, as_helper_gives, failed, without_latency

import costtrack
from costtrack.providers import from_openai

openai = pytest.importorskip("openai")

MODEL = "gpt-5-mini-2025-08-07"
USAGE = chat_usage(1200, 300, cached=1000, reasoning=200)
COMPLETION = chat_completion(MODEL, USAGE, service_tier="default")
MESSAGES = [{"role": "user", "content": "Capital of France?"}]
RESPONSE = {
    "id": "resp_01",
    "object": "response",
    "created_at": 1_763_800_000,
    "status": "completed",
    "model": "gpt-5-2025-08-07",
    "output": [
        {
            "type": "message",
            "id": "msg_01",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Paris.", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "service_tier": "priority",
    "usage": responses_usage(10000, 3000, cached=4000, reasoning=1000),
}


def client_for(canned: CannedProvider, cls: Any = None, **options: Any) -> Any:
    cls = cls or openai.OpenAI
    return cls(
        base_url=canned.url + "/v1", api_key="test", max_retries=0, timeout=options.pop("timeout", 10), **options
    )


def test_a_chat_completion_is_tracked_as_from_openai_prices_it(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION))
    client = client_for(canned)
    assert costtrack.instrument(client, tracker=recorder, feature="chat", customer_id="cus_1") is client
    completion = client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)

    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].message.content == "Paris."
    as_helper_gives(recorder.event, from_openai(completion, feature="chat", customer_id="cus_1"))
    assert recorder.event["cached_input_tokens"] == 1000 and "reasoning_tokens" not in recorder.event


def test_async_chat_completion(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION))

    async def main() -> Any:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        try:
            return await client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
        finally:
            await client.close()

    completion = asyncio.run(main())
    as_helper_gives(recorder.event, from_openai(completion))


def stream_chunks(canned: CannedProvider, instrumented: bool, recorder: Recorder, **request: Any) -> List[Any]:
    canned.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=chat_stream(MODEL, USAGE, chunks=4), content_type="text/event-stream"),
    )
    client = client_for(canned)
    if instrumented:
        costtrack.instrument(client, tracker=recorder)
    with client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES, stream=True, **request) as stream:
        assert isinstance(stream, openai.Stream)
        return [chunk.model_dump() for chunk in stream]


def test_a_stream_asks_for_usage_and_keeps_the_usage_chunk_from_the_caller(
    canned: CannedProvider, recorder: Recorder
) -> None:
    chunks = stream_chunks(canned, True, recorder)

    assert canned.calls[0].json["stream_options"] == {"include_usage": True}
    assert len(chunks) == 4 and all(chunk["choices"] for chunk in chunks)  # the usage-only chunk is not shown
    last = openai.types.chat.ChatCompletionChunk.model_validate(
        {**chunks[-1], "choices": [], "usage": USAGE}
    )  # what the usage chunk is
    as_helper_gives(recorder.event, from_openai(last))
    assert recorder.event["prompt_tokens"] == 1200 and recorder.event["completion_tokens"] == 300


def test_a_caller_who_asked_for_usage_still_gets_the_usage_chunk(canned: CannedProvider, recorder: Recorder) -> None:
    asked = stream_chunks(canned, True, recorder, stream_options={"include_usage": True})
    bare = stream_chunks(canned, False, Recorder(), stream_options={"include_usage": True})

    assert asked == bare and len(asked) == 5 and asked[-1]["usage"]["prompt_tokens"] == 1200
    assert recorder.event["prompt_tokens"] == 1200


def test_a_stream_closed_midway_is_cancelled_with_what_it_had(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=chat_stream(MODEL, USAGE, chunks=4), content_type="text/event-stream"),
    )
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES, stream=True) as stream:
        first = next(iter(stream))
        assert first.choices[0].delta.content == "w0 "
    assert without_latency(recorder.event) == failed("openai", MODEL, "cancelled")


def test_a_dropped_stream_is_cancelled(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=chat_stream(MODEL, USAGE, chunks=4), content_type="text/event-stream"),
    )
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    stream = client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES, stream=True)
    for _ in stream:
        break
    del stream
    gc.collect()
    assert recorder.event["status"] == "cancelled"


def test_an_async_stream(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=chat_stream(MODEL, USAGE, chunks=3), content_type="text/event-stream"),
    )

    async def main() -> List[Any]:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        stream = await client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES, stream=True)
        assert isinstance(stream, openai.AsyncStream)
        chunks = [chunk async for chunk in stream]
        await client.close()
        return chunks

    chunks = asyncio.run(main())
    assert len(chunks) == 3
    assert recorder.event["status"] == "success" and recorder.event["completion_tokens"] == 300


def test_an_async_stream_closed_midway(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=chat_stream(MODEL, USAGE, chunks=4), content_type="text/event-stream"),
    )

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        async with await client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES, stream=True) as stream:
            async for _ in stream:
                break
        await client.close()

    asyncio.run(main())
    assert without_latency(recorder.event) == failed("openai", MODEL, "cancelled")


def test_an_http_error_is_tracked_and_raised_unchanged(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", openai_error(500))
    client = costtrack.instrument(client_for(canned), tracker=recorder, feature="chat")
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
    assert raised.value.status_code == 500
    assert without_latency(recorder.event) == failed("openai", "gpt-5-mini", "error", feature="chat")


def test_a_timeout(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION, delay=1.0))
    client = costtrack.instrument(client_for(canned, timeout=0.2), tracker=recorder)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
    event = recorder.event
    assert without_latency(event) == failed("openai", "gpt-5-mini", "timeout")
    assert 150 <= event["latency_ms"] < 1000


def test_async_cancellation(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION, delay=1.0))

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        task = asyncio.ensure_future(client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.close()

    asyncio.run(main())
    assert without_latency(recorder.event) == failed("openai", "gpt-5-mini", "cancelled")


def test_responses_api_sync_and_stream(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/responses", Canned(body=RESPONSE))
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    response = client.responses.create(model="gpt-5", input="Capital of France?")
    as_helper_gives(recorder.event, from_openai(response))
    assert recorder.event["metadata"] == {"service_tier": "priority", "usage_convention": "openai"}

    canned.route("POST", "/v1/responses", Canned(body=responses_stream(RESPONSE), content_type="text/event-stream"))
    events = list(client.responses.create(model="gpt-5", input="Capital of France?", stream=True))
    assert [event.type for event in events][-1] == "response.completed"
    assert len(recorder.events) == 2
    assert without_latency(recorder.events[1]) == without_latency(recorder.events[0])


def test_responses_stream_helper_goes_through_create(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/responses", Canned(body=responses_stream(RESPONSE), content_type="text/event-stream"))
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with client.responses.stream(model="gpt-5", input="Capital of France?") as stream:
        final = stream.get_final_response()
    as_helper_gives(recorder.event, from_openai(final))


def test_azure_openai_is_tracked_as_azure(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/openai/deployments/prod-mini/chat/completions", Canned(body=COMPLETION))
    client = openai.AzureOpenAI(
        azure_endpoint=canned.url, api_key="test", api_version="2024-10-21", azure_deployment="prod-mini", max_retries=0
    )
    costtrack.instrument(client, tracker=recorder)
    completion = client.chat.completions.create(model="prod-mini", messages=MESSAGES)
    as_helper_gives(recorder.event, from_openai(completion, provider="azure"))


def test_twice_tracks_once_and_uninstrument_restores(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION))
    client, other = client_for(canned), client_for(canned)
    create = client.chat.completions.create
    costtrack.instrument(client, tracker=recorder)
    costtrack.instrument(client, tracker=recorder)
    client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
    other.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)  # another client: untouched
    assert len(recorder.events) == 1
    assert "create" not in vars(other.chat.completions)

    assert costtrack.uninstrument(client) is client
    assert client.chat.completions.create == create and "create" not in vars(client.chat.completions)
    client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
    assert len(recorder.events) == 1
    costtrack.instrument(client, tracker=recorder)  # and again
    client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
    assert len(recorder.events) == 2


def test_a_raw_response_is_tracked_from_what_it_parses(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION))
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    raw = client.chat.completions.with_raw_response.create(model="gpt-5-mini", messages=MESSAGES)
    assert raw.headers["content-type"] == "application/json"
    assert raw.parse().usage.prompt_tokens == 1200
    as_helper_gives(recorder.event, from_openai(raw.parse()))


def test_a_failing_tracker_never_breaks_the_call(canned: CannedProvider) -> None:
    class Broken(Recorder):
        def track(self, event: Any) -> None:
            raise RuntimeError("tracker down")

    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION))
    tracker = Broken()
    client = costtrack.instrument(client_for(canned), tracker=tracker)
    completion = client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
    assert completion.usage.prompt_tokens == 1200
    assert [str(error) for error in tracker.errors] == ["tracker down"]


def test_instrument_checks_its_arguments(recorder: Recorder) -> None:
    with pytest.raises(TypeError, match="featur"):
        costtrack.instrument(openai.OpenAI(api_key="test"), tracker=recorder, featur="x")
    with pytest.raises(TypeError, match="does not know"):
        costtrack.instrument(object(), tracker=recorder)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio.wait_for cancels through asyncio.timeout from 3.12")
def test_async_wait_for_timing_out_is_a_timeout(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION, delay=1.0))

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES), 0.2)
        await asyncio.sleep(0)  # the status is decided once the cancellation has left the step
        await client.close()

    asyncio.run(main())
    event = recorder.event
    assert without_latency(event) == failed("openai", "gpt-5-mini", "timeout")
    assert 150 <= event["latency_ms"] < 1000


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is new in 3.11")
def test_a_cancel_inside_an_asyncio_timeout_block_is_still_cancelled(
    canned: CannedProvider, recorder: Recorder
) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION, delay=1.0))

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)

        async def within_a_timeout() -> Any:
            async with asyncio.timeout(5):  # Python 3.11+
                return await client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)

        task = asyncio.ensure_future(within_a_timeout())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.close()

    asyncio.run(main())
    assert without_latency(recorder.event) == failed("openai", "gpt-5-mini", "cancelled")
