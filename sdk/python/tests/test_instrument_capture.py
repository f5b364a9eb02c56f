"""``costtrack.instrument`` in the paths where a call's capture can go wrong, with the real
clients against the canned provider: a server that refuses ``stream_options``, attribution and
reservations fixed when the call starts, streams read only to ``finish_reason``, clients made
from an instrumented one, and the calls of each client that are tracked as their own events."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest
from canned_provider import Canned, CannedProvider, chat_stream, chat_usage, openai_error
from instrumented import Recorder
from test_instrument_google_aws import BEDROCK_MODEL, BEDROCK_PATH, bedrock_client

import costtrack

openai = pytest.importorskip("openai")

MODEL = "gpt-5-mini-2025-08-07"
USAGE = chat_usage(1200, 300, cached=1000, reasoning=200)
MESSAGES = [{"role": "user", "content": "Capital of France?"}]
REFUSED = "Unrecognized request argument supplied: stream_options"


def client_for(canned: CannedProvider, cls: Any = None) -> Any:
    return (cls or openai.OpenAI)(base_url=canned.url + "/v1", api_key="test", max_retries=0, timeout=10)


def refuses_stream_options(canned: CannedProvider) -> None:
    """A server that answers 400 to a request naming ``stream_options`` and streams without
    usage otherwise (older Azure api-versions, several self-hosted servers)."""

    def reply(url: str) -> Canned:
        if "stream_options" in canned.calls[-1].json:
            return openai_error(400, REFUSED)
        return Canned(body=chat_stream(MODEL, USAGE, chunks=3, include_usage=False), content_type="text/event-stream")

    canned.route("POST", "/v1/chat/completions", reply)


class Warned(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.warnings: List[Any] = []

    def _warn(self, warning: Any) -> None:
        self.warnings.append(warning)


def test_a_server_that_refuses_stream_options_streams_as_the_plain_client_does(canned: CannedProvider) -> None:
    refuses_stream_options(canned)
    plain = client_for(canned)
    expected = [
        chunk.model_dump() for chunk in plain.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    ]
    canned.calls.clear()
    tracker = Warned()
    client = costtrack.instrument(client_for(canned), tracker=tracker)
    got = [chunk.model_dump() for chunk in client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)]

    assert got == expected and len(got) == 3
    assert ["stream_options" in call.json for call in canned.calls] == [True, False]
    event = tracker.event
    assert (event["status"], event["prompt_tokens"], event["completion_tokens"]) == ("success", 0, 0)
    assert event["metadata"]["usage_missing"] == "stream_without_usage"
    assert [warning.code for warning in tracker.warnings] == ["usage_missing"]

    # the client has learnt: the next stream goes without it at once
    canned.calls.clear()
    list(client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True))
    assert ["stream_options" in call.json for call in canned.calls] == [False]


def test_an_async_client_retries_without_stream_options_too(canned: CannedProvider, recorder: Recorder) -> None:
    refuses_stream_options(canned)

    async def main() -> List[Any]:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
        chunks = [chunk async for chunk in stream]
        await client.close()
        return chunks

    assert len(asyncio.run(main())) == 3
    assert recorder.event["metadata"]["usage_missing"] == "stream_without_usage"


def test_stream_usage_false_never_adds_stream_options(canned: CannedProvider, recorder: Recorder) -> None:
    refuses_stream_options(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder, stream_usage=False)
    assert len(list(client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True))) == 3
    assert ["stream_options" in call.json for call in canned.calls] == [False]
    assert recorder.event["metadata"] == {"usage_missing": "stream_without_usage"}


def test_stream_usage_true_keeps_asking_and_the_refusal_is_the_callers(
    canned: CannedProvider, recorder: Recorder
) -> None:
    refuses_stream_options(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder, stream_usage=True)
    with pytest.raises(openai.BadRequestError, match="stream_options"):
        client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    assert len(canned.calls) == 1 and recorder.event["status"] == "error"


def test_another_400_is_not_retried(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/chat/completions", openai_error(400, "Invalid model"))
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    assert len(canned.calls) == 1 and recorder.event["status"] == "error"


def test_stream_usage_is_checked() -> None:
    with pytest.raises(TypeError, match="stream_usage"):
        costtrack.instrument(openai.OpenAI(api_key="test"), tracker=Recorder(), stream_usage="yes")


# -- a call's attribution and reservation are fixed when it starts -------------------------------


def chat_streams(canned: CannedProvider) -> None:
    canned.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=chat_stream(MODEL, USAGE, chunks=3), content_type="text/event-stream"),
    )


def test_a_stream_read_after_its_block_is_the_blocks(canned: CannedProvider, recorder: Recorder) -> None:
    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder, feature="chat")
    with costtrack.attributes(customer_id="cus_A", metadata={"plan": "pro"}):
        stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    with costtrack.attributes(customer_id="cus_B", feature="other", metadata={"plan": "free"}):
        list(stream)
    event = recorder.event
    assert (event["customer_id"], event["feature"]) == ("cus_A", "chat")
    assert event["metadata"] == {"plan": "pro", "usage_convention": "openai"}
    assert event["prompt_tokens"] == 1200


def test_a_stream_read_on_another_thread_is_its_callers(canned: CannedProvider, recorder: Recorder) -> None:
    import threading

    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with costtrack.attributes(customer_id="cus_A"):
        stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)

    def read() -> None:
        with costtrack.attributes(customer_id="cus_B"):
            list(stream)

    reader = threading.Thread(target=read)
    reader.start()
    reader.join()
    assert recorder.event["customer_id"] == "cus_A"


def test_an_async_stream_read_in_another_task_is_its_callers(canned: CannedProvider, recorder: Recorder) -> None:
    chat_streams(canned)

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        with costtrack.attributes(customer_id="cus_A"):
            stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)

        async def read() -> None:
            with costtrack.attributes(customer_id="cus_B"):
                async for _ in stream:
                    pass

        await asyncio.ensure_future(read())
        await client.close()

    asyncio.run(main())
    assert recorder.event["customer_id"] == "cus_A"


def test_a_stream_read_after_its_reservation_block_settles_that_reservation(
    canned: CannedProvider, service: Any, tracker_for: Any
) -> None:
    chat_streams(canned)
    tracker = tracker_for()
    client = costtrack.instrument(client_for(canned), tracker=tracker)
    with tracker.reservation(provider="openai", model=MODEL, customer_id="cus_1", amount="0.10") as reservation:
        stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    with tracker.reservation(provider="openai", model=MODEL, customer_id="cus_1", amount="0.10") as other:
        list(stream)
        tracker.track({"provider": "openai", "model": MODEL, "prompt_tokens": 1, "completion_tokens": 1})
    assert tracker.flush(5)
    events = service.tracked()
    assert [(event["prompt_tokens"], event.get("reservation_id")) for event in events] == [
        (1200, reservation.reservation_id),
        (1, other.reservation_id),
    ]
    assert service.requests("DELETE", "/") == []  # the first block's hold was not released


def test_a_call_refused_for_its_arguments_is_not_tracked_and_leaves_the_reservation(
    canned: CannedProvider, service: Any, tracker_for: Any
) -> None:
    chat_streams(canned)
    tracker = tracker_for()
    client = costtrack.instrument(client_for(canned), tracker=tracker)
    with tracker.reservation(provider="openai", model=MODEL, customer_id="cus_1", amount="0.10") as reservation:
        with pytest.raises(TypeError):
            client.chat.completions.create(model=MODEL)  # no messages: the client makes no call
        list(client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True))
    assert tracker.flush(5)
    assert [event.get("reservation_id") for event in service.tracked()] == [reservation.reservation_id]
    assert canned.calls and len(canned.calls) == 1


# -- a caller who stops reading at finish_reason ---------------------------------------------------


def read_to_finish_reason(stream: Any) -> None:
    for chunk in stream:
        if chunk.choices and chunk.choices[0].finish_reason:
            break


def test_a_stream_closed_at_finish_reason_still_gets_its_usage(canned: CannedProvider, recorder: Recorder) -> None:
    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as stream:
        read_to_finish_reason(stream)
    event = recorder.event
    assert (event["status"], event["prompt_tokens"], event["completion_tokens"]) == ("success", 1200, 300)


def test_a_stream_dropped_at_finish_reason_still_gets_its_usage(canned: CannedProvider, recorder: Recorder) -> None:
    import gc

    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    read_to_finish_reason(stream)
    del stream
    gc.collect()
    event = recorder.event
    assert (event["status"], event["prompt_tokens"], event["completion_tokens"]) == ("success", 1200, 300)


def test_an_async_stream_closed_at_finish_reason_still_gets_its_usage(
    canned: CannedProvider, recorder: Recorder
) -> None:
    chat_streams(canned)

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        async with await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as stream:
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].finish_reason:
                    break
        await client.close()

    asyncio.run(main())
    event = recorder.event
    assert (event["status"], event["prompt_tokens"], event["completion_tokens"]) == ("success", 1200, 300)


def test_a_stream_closed_before_its_end_is_still_cancelled(canned: CannedProvider, recorder: Recorder) -> None:
    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as stream:
        next(iter(stream))
    assert (recorder.event["status"], recorder.event["prompt_tokens"]) == ("cancelled", 0)


# -- a dropped stream ----------------------------------------------------------------------------


@pytest.fixture
def no_automatic_gc() -> Any:
    import gc

    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_a_dropped_stream_is_tracked_when_dropped_without_a_garbage_collection(
    canned: CannedProvider, recorder: Recorder, no_automatic_gc: None
) -> None:
    import weakref

    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    next(iter(stream))
    gone = weakref.ref(stream)
    del stream
    assert gone() is None  # no cycle keeps it
    assert recorder.event["status"] == "cancelled"


def test_a_dropped_stream_s_latency_ends_when_it_is_dropped(
    canned: CannedProvider, recorder: Recorder, no_automatic_gc: None
) -> None:
    import time

    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    started = time.perf_counter()
    stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    next(iter(stream))
    del stream
    took = (time.perf_counter() - started) * 1000
    time.sleep(0.5)
    import gc

    gc.collect()
    assert recorder.event["latency_ms"] <= took + 1


# -- clients made from an instrumented client; instrumenting again -------------------------------


def completions(canned: CannedProvider) -> None:
    from canned_provider import chat_completion

    canned.route("POST", "/v1/chat/completions", Canned(body=chat_completion(MODEL, USAGE)))


def test_a_client_made_with_with_options_or_copy_is_instrumented_too(
    canned: CannedProvider, recorder: Recorder
) -> None:
    completions(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder, feature="chat")
    quick = client.with_options(timeout=5)
    copied = client.copy(max_retries=1)
    nested = quick.with_options(max_retries=2)
    for made in (quick, copied, nested):
        made.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert [(event["feature"], event["prompt_tokens"]) for event in recorder.events] == [("chat", 1200)] * 3
    assert "create" not in vars(client_for(canned).chat.completions)  # still per instance

    costtrack.uninstrument(client)
    for made in (client, quick, copied, nested):
        made.chat.completions.create(model=MODEL, messages=MESSAGES)
        assert "create" not in vars(made.chat.completions)
    assert len(recorder.events) == 3


def test_an_anthropic_client_made_with_with_options_is_instrumented_too(
    canned: CannedProvider, recorder: Recorder
) -> None:
    anthropic = pytest.importorskip("anthropic")
    from canned_provider import anthropic_message

    usage = {"input_tokens": 10, "output_tokens": 5}
    canned.route("POST", "/v1/messages", Canned(body=anthropic_message("claude-sonnet-4-5-20250929", usage)))
    client = anthropic.Anthropic(base_url=canned.url, api_key="test", max_retries=0)
    costtrack.instrument(client, tracker=recorder)
    client.with_options(timeout=5).messages.create(
        model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
    )
    assert recorder.event["prompt_tokens"] == 10


def test_instrumenting_again_switches_to_the_latest_tracker(canned: CannedProvider, recorder: Recorder) -> None:
    completions(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder, feature="first")
    child = client.with_options(timeout=5)
    latest = Recorder()
    assert costtrack.instrument(client, tracker=latest, feature="second") is client
    client.chat.completions.create(model=MODEL, messages=MESSAGES)
    child.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert recorder.events == []
    assert [event["feature"] for event in latest.events] == ["second", "second"]


# -- calls tracked as their own events -----------------------------------------------------------

CLAUDE = "claude-sonnet-4-5-20250929"
CLAUDE_USAGE = {
    "input_tokens": 1000,
    "output_tokens": 500,
    "cache_read_input_tokens": 10000,
    "cache_creation_input_tokens": 2000,
}
CLAUDE_REQUEST = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "Hi"}]}


def anthropic_client(canned: CannedProvider, cls: Any = None) -> Any:
    anthropic = pytest.importorskip("anthropic")
    return (cls or anthropic.Anthropic)(base_url=canned.url, api_key="test", max_retries=0)


def test_anthropic_beta_messages_create_and_stream(canned: CannedProvider, recorder: Recorder) -> None:
    from canned_provider import anthropic_message, anthropic_stream

    canned.route("POST", "/v1/messages", Canned(body=anthropic_message(CLAUDE, CLAUDE_USAGE)))
    client = costtrack.instrument(anthropic_client(canned), tracker=recorder)
    client.beta.messages.create(**CLAUDE_REQUEST, betas=["context-1m-2025-08-07"])
    canned.route(
        "POST", "/v1/messages", Canned(body=anthropic_stream(CLAUDE, CLAUDE_USAGE), content_type="text/event-stream")
    )
    with client.beta.messages.stream(**CLAUDE_REQUEST) as stream:
        stream.get_final_message()
    assert [(event["prompt_tokens"], event["cached_input_tokens"], event["status"]) for event in recorder.events] == [
        (1000, 10000, "success")
    ] * 2


def test_anthropic_beta_tool_runner_calls_are_each_tracked(canned: CannedProvider, recorder: Recorder) -> None:
    anthropic = pytest.importorskip("anthropic")
    from anthropic import beta_tool
    from canned_provider import anthropic_message

    tool_use = {
        **anthropic_message(CLAUDE, {"input_tokens": 100, "output_tokens": 20}),
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "capital", "input": {"country": "France"}}],
        "stop_reason": "tool_use",
    }
    final = anthropic_message(CLAUDE, {"input_tokens": 150, "output_tokens": 10})
    replies = iter([tool_use, final])
    canned.route("POST", "/v1/messages", lambda url: Canned(body=next(replies)))

    @beta_tool
    def capital(country: str) -> str:
        """The capital of a country."""
        return "Paris"

    client = costtrack.instrument(anthropic_client(canned), tracker=recorder)
    runner = client.beta.messages.tool_runner(**CLAUDE_REQUEST, tools=[capital])
    messages = list(runner)
    assert len(messages) == 2 and isinstance(messages[-1], anthropic.types.beta.BetaMessage)
    assert [event["prompt_tokens"] for event in recorder.events] == [100, 150]


def test_openai_embeddings(canned: CannedProvider, recorder: Recorder) -> None:
    body = {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    }
    canned.route("POST", "/v1/embeddings", Canned(body=body))
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    client.embeddings.create(model="text-embedding-3-small", input="Paris")
    event = recorder.event
    assert (event["model"], event["prompt_tokens"], event["completion_tokens"]) == ("text-embedding-3-small", 8, 0)


def test_with_raw_response_streams_are_tracked(canned: CannedProvider, recorder: Recorder) -> None:
    chat_streams(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, stream=True)
    chunks = list(raw.parse())
    assert len(chunks) == 3  # the usage chunk costtrack asked for is kept from the caller
    assert (recorder.event["status"], recorder.event["prompt_tokens"]) == ("success", 1200)


def test_with_streaming_response_is_tracked_when_parsed_or_read_as_json(
    canned: CannedProvider, recorder: Recorder
) -> None:
    completions(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response:
        assert response.parse().usage.prompt_tokens == 1200
    with client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response:
        assert response.json()["usage"]["prompt_tokens"] == 1200
    chat_streams(canned)
    with client.chat.completions.with_streaming_response.create(
        model=MODEL, messages=MESSAGES, stream=True
    ) as response:
        assert len(list(response.parse())) == 3
    assert [(event["status"], event["prompt_tokens"]) for event in recorder.events] == [("success", 1200)] * 3


def test_with_streaming_response_read_as_lines_is_tracked_without_usage(canned: CannedProvider) -> None:
    chat_streams(canned)
    tracker = Warned()
    client = costtrack.instrument(client_for(canned), tracker=tracker)
    with client.chat.completions.with_streaming_response.create(
        model=MODEL, messages=MESSAGES, stream=True
    ) as response:
        assert any(line.startswith("data:") for line in response.iter_lines())
    assert tracker.event["metadata"]["usage_missing"] == "raw_body_not_parsed"
    assert [warning.code for warning in tracker.warnings] == ["usage_missing"]


def test_async_with_streaming_response_and_anthropic_with_raw_response(
    canned: CannedProvider, recorder: Recorder
) -> None:
    from canned_provider import anthropic_message

    completions(canned)
    canned.route("POST", "/v1/messages", Canned(body=anthropic_message(CLAUDE, CLAUDE_USAGE)))

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        async with client.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as response:
            await response.parse()
        await client.close()

    asyncio.run(main())
    claude = costtrack.instrument(anthropic_client(canned), tracker=recorder)
    claude.messages.with_raw_response.create(**CLAUDE_REQUEST)
    assert [event["prompt_tokens"] for event in recorder.events] == [1200, 1000]


def background_response(status: str, usage: Any = None) -> Canned:
    from canned_provider import responses_usage

    return Canned(
        body={
            "id": "resp_bg1",
            "object": "response",
            "created_at": 1_763_800_000,
            "status": status,
            "background": True,
            "model": "gpt-5-2025-08-07",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage and responses_usage(*usage),
        }
    )


def test_a_background_response_is_tracked_once_when_a_retrieve_sees_it_done(
    canned: CannedProvider, recorder: Recorder
) -> None:
    canned.route("POST", "/v1/responses", background_response("queued"))
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with costtrack.attributes(customer_id="cus_A"):
        created = client.responses.create(model="gpt-5", input="Write a report", background=True)
    assert created.status == "queued" and recorder.events == []

    canned.route("GET", "/v1/responses/resp_bg1", background_response("in_progress"))
    client.responses.retrieve("resp_bg1")
    assert recorder.events == []
    canned.route("GET", "/v1/responses/resp_bg1", background_response("completed", (5000, 1500)))
    with costtrack.attributes(customer_id="cus_B"):
        client.responses.retrieve("resp_bg1")
        client.responses.retrieve("resp_bg1")  # seen done again: not tracked again
    event = recorder.event
    assert (event["status"], event["prompt_tokens"], event["completion_tokens"]) == ("success", 5000, 1500)
    assert event["customer_id"] == "cus_A" and event["model"] == "gpt-5-2025-08-07"


def test_a_background_response_that_fails_or_is_cancelled(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/responses", background_response("in_progress"))

    async def main() -> None:
        client = costtrack.instrument(client_for(canned, openai.AsyncOpenAI), tracker=recorder)
        await client.responses.create(model="gpt-5", input="Write a report", background=True)
        canned.route("POST", "/v1/responses/resp_bg1/cancel", background_response("cancelled", (100, 0)))
        await client.responses.cancel("resp_bg1")
        await client.close()

    asyncio.run(main())
    assert (recorder.event["status"], recorder.event["prompt_tokens"]) == ("cancelled", 100)


def test_bedrock_invoke_model_is_tracked_from_its_count_headers(canned: CannedProvider, recorder: Recorder) -> None:
    import json

    from canned_provider import anthropic_message

    body = anthropic_message(CLAUDE, {"input_tokens": 1000, "output_tokens": 500})
    headers = {"x-amzn-bedrock-input-token-count": "1000", "x-amzn-bedrock-output-token-count": "500"}
    canned.route("POST", f"/model/{BEDROCK_PATH}/invoke", Canned(body=body, headers=headers))
    client = costtrack.instrument(bedrock_client(canned), tracker=recorder)
    request = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100, "messages": CLAUDE_REQUEST["messages"]}
    response = client.invoke_model(modelId=BEDROCK_MODEL, body=json.dumps(request))
    assert json.loads(response["body"].read())["usage"]["input_tokens"] == 1000  # the body is left to the caller
    event = recorder.event
    assert (event["provider"], event["model"], event["prompt_tokens"], event["completion_tokens"]) == (
        "bedrock",
        BEDROCK_MODEL,
        1000,
        500,
    )


def test_bedrock_invoke_model_with_response_stream(canned: CannedProvider, recorder: Recorder) -> None:
    import base64
    import json

    from canned_provider import event_stream_message

    def chunk(payload: Any) -> bytes:
        return event_stream_message("chunk", {"bytes": base64.b64encode(json.dumps(payload).encode()).decode()})

    metrics = {"inputTokenCount": 1000, "outputTokenCount": 500, "invocationLatency": 900, "firstByteLatency": 300}
    body = chunk({"type": "message_start", "message": {"usage": {"input_tokens": 1000}}}) + chunk(
        {"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics}
    )
    canned.route(
        "POST",
        f"/model/{BEDROCK_PATH}/invoke-with-response-stream",
        Canned(body=body, content_type="application/vnd.amazon.eventstream"),
    )
    client = costtrack.instrument(bedrock_client(canned), tracker=recorder)
    request = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100, "messages": CLAUDE_REQUEST["messages"]}
    response = client.invoke_model_with_response_stream(modelId=BEDROCK_MODEL, body=json.dumps(request))
    assert len(list(response["body"])) == 2
    event = recorder.event
    assert (event["status"], event["prompt_tokens"], event["completion_tokens"]) == ("success", 1000, 500)


GEMINI = "gemini-2.5-flash"


def genai_client(canned: CannedProvider) -> Any:
    genai = pytest.importorskip("google.genai")
    options = genai.types.HttpOptions(base_url=canned.url, api_version="v1beta", timeout=10_000)
    return genai.Client(api_key="test", http_options=options)


def test_each_model_call_of_automatic_function_calling_is_tracked(canned: CannedProvider, recorder: Recorder) -> None:
    from canned_provider import gemini_response

    call_tool = {
        **gemini_response(GEMINI, {"promptTokenCount": 1000, "candidatesTokenCount": 20, "totalTokenCount": 1020}),
        "candidates": [
            {
                "content": {
                    "parts": [{"functionCall": {"name": "capital", "args": {"country": "France"}}}],
                    "role": "model",
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
    }
    answer = gemini_response(GEMINI, {"promptTokenCount": 2000, "candidatesTokenCount": 10, "totalTokenCount": 2010})
    replies = iter([call_tool, answer])
    canned.route("POST", f"/v1beta/models/{GEMINI}:generateContent", lambda url: Canned(body=next(replies)))

    def capital(country: str) -> str:
        """The capital of a country."""
        return "Paris"

    genai = pytest.importorskip("google.genai")
    client = costtrack.instrument(genai_client(canned), tracker=recorder)
    config = genai.types.GenerateContentConfig(tools=[capital])
    response = client.models.generate_content(model=GEMINI, contents="Capital of France?", config=config)
    assert response.text == "Paris." and len(canned.calls) == 2
    assert [(event["prompt_tokens"], event["completion_tokens"]) for event in recorder.events] == [
        (1000, 20),
        (2000, 10),
    ]


def test_gemini_embed_content_is_tracked(canned: CannedProvider, recorder: Recorder) -> None:
    body = {"embeddings": [{"values": [0.1, 0.2]}]}
    canned.route("POST", "/v1beta/models/gemini-embedding-001:batchEmbedContents", Canned(body=body))
    client = costtrack.instrument(genai_client(canned), tracker=recorder)
    client.models.embed_content(model="gemini-embedding-001", contents="Paris")
    event = recorder.event
    assert (event["model"], event["prompt_tokens"], event["metadata"]) == (
        "gemini-embedding-001",
        0,
        {"usage_missing": "not_reported"},
    )


# -- whose counting convention an event follows ----------------------------------------------------


def test_anthropic_vertex_is_priced_by_anthropics_convention(canned: CannedProvider, recorder: Recorder) -> None:
    """Claude on Vertex AI counts as Anthropic does (the prompt without the cache): the event
    names provider ``anthropic``, whose rule prices 1,000 input + 10,000 cache read + 2,000
    cache write + 500 output at 0.0210 (Google's rule would take the cache out of the prompt
    again: 0.0180 and ``usage_inconsistent``)."""
    anthropic = pytest.importorskip("anthropic")
    from canned_provider import anthropic_message

    path = f"/projects/proj/locations/us-east5/publishers/anthropic/models/{CLAUDE}:rawPredict"
    canned.route("POST", path, Canned(body=anthropic_message(CLAUDE, CLAUDE_USAGE)))
    client = anthropic.AnthropicVertex(
        region="us-east5", project_id="proj", access_token="test", base_url=canned.url, max_retries=0
    )
    costtrack.instrument(client, tracker=recorder)
    client.messages.create(**{**CLAUDE_REQUEST, "model": CLAUDE})
    event = recorder.event
    assert (event["provider"], event["metadata"]["usage_convention"]) == ("anthropic", "anthropic")
    counts = [
        event[name] for name in ("prompt_tokens", "cached_input_tokens", "cache_write_tokens", "completion_tokens")
    ]
    assert counts == [1000, 10000, 2000, 500]


def test_anthropic_bedrock_follows_anthropics_convention_as_bedrock(canned: CannedProvider, recorder: Recorder) -> None:
    anthropic = pytest.importorskip("anthropic")
    from canned_provider import anthropic_message

    canned.route("POST", f"/model/{BEDROCK_MODEL}/invoke", Canned(body=anthropic_message(CLAUDE, CLAUDE_USAGE)))
    client = anthropic.AnthropicBedrock(
        base_url=canned.url, aws_region="us-east-1", aws_access_key="test", aws_secret_key="test", max_retries=0
    )
    costtrack.instrument(client, tracker=recorder)
    client.messages.create(**{**CLAUDE_REQUEST, "model": BEDROCK_MODEL})
    assert (recorder.event["provider"], recorder.event["metadata"]["usage_convention"]) == ("bedrock", "anthropic")


def test_an_openai_compatible_provider_follows_its_own_route(canned: CannedProvider, recorder: Recorder) -> None:
    from canned_provider import chat_completion

    usage = {"prompt_tokens": 1000, "completion_tokens": 50, "completion_tokens_details": {"reasoning_tokens": 200}}
    canned.route("POST", "/v1/chat/completions", Canned(body=chat_completion("grok-4", usage)))
    xai = costtrack.instrument(client_for(canned), tracker=recorder, provider="xai")
    xai.chat.completions.create(model="grok-4", messages=MESSAGES)
    groq = costtrack.instrument(client_for(canned), tracker=recorder, provider="groq")
    groq.chat.completions.create(model="grok-4", messages=MESSAGES)
    assert [(event["provider"], event["completion_tokens"]) for event in recorder.events] == [
        ("xai", 250),  # xAI's reasoning, counted apart, folded in
        ("groq", 50),
    ]
