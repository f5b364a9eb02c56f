"""``costtrack.integrations.litellm.CosttrackLogger`` driven by litellm itself: ``completion``,
``acompletion`` and streaming against the canned OpenAI and Anthropic servers on 127.0.0.1
(``api_base``). LiteLLM's usage is OpenAI-shaped for every provider, with its own counting
conventions (read from its source, litellm/llms/anthropic/chat/transformation.py
``calculate_usage``: Anthropic's ``prompt_tokens`` adds ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` to ``input_tokens``); the tracked event equals what the direct
helper makes of the provider's own response: no cached or reasoning token counted twice."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Iterator

import pytest
from canned_provider import (
    Canned,
    CannedProvider,
    anthropic_error,
    anthropic_message,
    chat_completion,
    chat_stream,
    chat_usage,
    openai_error,
)
from instrumented import Recorder, without_latency

import costtrack
from costtrack.providers import from_anthropic, from_openai

litellm = pytest.importorskip("litellm")

from costtrack.integrations.litellm import CosttrackLogger  # noqa: E402

MODEL = "gpt-5-mini-2025-08-07"
CLAUDE = "claude-sonnet-4-5-20250929"
ASK = [{"role": "user", "content": "Capital of France?"}]
OPENAI_USAGE = chat_usage(1200, 300, cached=1000, reasoning=200)
ANTHROPIC_USAGE = {
    "input_tokens": 100,
    "output_tokens": 400,
    "cache_read_input_tokens": 2000,
    "cache_creation_input_tokens": 500,
}


#: LiteLLM keeps the callbacks it was first given in lists of its own (its callback manager):
#: one logger for the module, its recorder emptied for each test.
RECORDER = Recorder()
LOGGER = CosttrackLogger(tracker=RECORDER, feature="litellm")


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    RECORDER.events.clear()
    RECORDER.errors.clear()
    litellm.callbacks = [LOGGER]
    try:
        yield RECORDER
    finally:
        litellm.callbacks = []


@pytest.fixture
def logger(recorder: Recorder) -> CosttrackLogger:
    return LOGGER


def settled(recorder: Recorder, count: int = 1) -> Recorder:
    """LiteLLM runs sync success hooks on its own thread pool: wait for them."""
    deadline = time.monotonic() + 10
    while len(recorder.events) + len(recorder.errors) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # a second (duplicate) event would show up by now
    return recorder


def openai_call(canned: CannedProvider, **options: Any) -> Any:
    return {"model": "openai/gpt-5-mini", "messages": ASK, "api_base": canned.url + "/v1", "api_key": "test", **options}


def test_completion_is_priced_as_from_openai_with_the_callers_attributes(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    body = chat_completion(MODEL, OPENAI_USAGE)
    canned.route("POST", "/v1/chat/completions", Canned(body=body))
    with costtrack.attributes(customer_id="cus_42"):
        response = litellm.completion(**openai_call(canned))
    assert response.choices[0].message.content == "Paris."
    # Tracked on LiteLLM's thread pool; for a plain completion LiteLLM submits the hook with a
    # copy of the caller's context (litellm/utils.py, ``ctx.run``), so this holds with or without
    # the logger's own attribution: the stream test below is the one that needs it.
    event = settled(recorder).event
    expected = from_openai(body, feature="litellm", customer_id="cus_42", status="success")
    assert without_latency(event) == {**expected, "model": "gpt-5-mini"}
    assert event["cached_input_tokens"] == 1000 and event["completion_tokens"] == 300  # reasoning inside


def test_acompletion_anthropic_leaves_the_cache_out_of_the_prompt(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    message = anthropic_message(CLAUDE, ANTHROPIC_USAGE)
    canned.route("POST", "/v1/messages", Canned(body=message))

    async def main() -> Any:
        with costtrack.attributes(customer_id="cus_7"):
            response = await litellm.acompletion(
                model=f"anthropic/{CLAUDE}", messages=ASK, api_base=canned.url, api_key="test"
            )
        for _ in range(500):  # LiteLLM runs the async hooks as tasks of the loop, after the call
            if recorder.events or recorder.errors:
                break
            await asyncio.sleep(0.01)
        return response

    response = asyncio.run(main())
    assert response.usage.prompt_tokens == 2600  # LiteLLM's all-in count
    event = settled(recorder).event
    assert without_latency(event) == {
        **from_anthropic(message, feature="litellm", customer_id="cus_7"),
        "status": "success",
    }
    assert event["prompt_tokens"] == 100 and event["cached_input_tokens"] == 2000


def test_a_stream_is_tracked_once_from_litellms_assembled_response(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    canned.route(
        "POST", "/v1/chat/completions", Canned(body=chat_stream(MODEL, OPENAI_USAGE), content_type="text/event-stream")
    )
    # LiteLLM's stream wrapper runs the sync success hook on its thread pool without the caller's
    # context: the customer comes from what the logger took in log_pre_api_call (without it, as
    # tried by disabling that hook, ``customer_id`` is missing and this test fails).
    with costtrack.attributes(customer_id="cus_9"):
        chunks = list(litellm.completion(**openai_call(canned, stream=True, stream_options={"include_usage": True})))
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == "w0 w1 "
    event = settled(recorder).event
    assert event["prompt_tokens"] == 1200 and event["completion_tokens"] == 300
    assert event["cached_input_tokens"] == 1000 and event["customer_id"] == "cus_9"
    assert event["status"] == "success" and "reasoning_tokens" not in event


def test_a_failed_call_is_tracked_with_zero_tokens(canned: CannedProvider, recorder: Recorder, logger: Any) -> None:
    canned.route("POST", "/v1/messages", anthropic_error(529))
    with pytest.raises(litellm.exceptions.InternalServerError), costtrack.attributes(customer_id="cus_3"):
        litellm.completion(model=f"anthropic/{CLAUDE}", messages=ASK, api_base=canned.url, api_key="test")
    event = settled(recorder).event
    assert without_latency(event) == {
        "provider": "anthropic",
        "model": CLAUDE,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "feature": "litellm",
        "customer_id": "cus_3",
        "status": "error",
    }


def test_xai_reasoning_that_litellm_already_folded_into_the_completion_is_not_added_again(
    canned: CannedProvider, recorder: Recorder
) -> None:
    """xAI counts reasoning apart from ``completion_tokens``; LiteLLM folds it in (OpenAI's
    convention, which the route's ``usage_convention`` says): it is not added a second time."""
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 50,
        "total_tokens": 1250,
        "completion_tokens_details": {"reasoning_tokens": 200},
    }
    canned.route("POST", "/v1/chat/completions", Canned(body=chat_completion("grok-4", usage)))
    response = litellm.completion(model="xai/grok-4", messages=ASK, api_base=canned.url + "/v1", api_key="test")
    assert response.usage.completion_tokens == 250  # LiteLLM folded xAI's reasoning in
    event = settled(recorder).event
    assert event["provider"] == "xai"
    assert event["completion_tokens"] == 250 and "reasoning_tokens" not in event


# -- LiteLLM beside zero-code capture (``costtrack.instrument``) ---------------------------------
# LiteLLM makes an OpenAI request through an ``openai`` client, the caller's own when given one
# (``client=``, as apps with their own HTTP settings do): an instrumented client under a tracked
# LiteLLM is still one event per call, and LiteLLM's answers and errors are its own.


def openai_client(canned: CannedProvider, asynchronous: bool = False) -> Any:
    from openai import AsyncOpenAI, OpenAI

    return (AsyncOpenAI if asynchronous else OpenAI)(api_key="test", base_url=canned.url + "/v1", max_retries=0)


def instrumented_openai(canned: CannedProvider, tracker: Any, asynchronous: bool = False) -> Any:
    return costtrack.instrument(openai_client(canned, asynchronous), tracker=tracker)


def answer(response: Any) -> Any:
    """What the caller reads of a LiteLLM response (its own ids and timings left out)."""
    dumped = response.model_dump()
    return {name: dumped.get(name) for name in ("model", "object", "choices", "usage")}


def test_completion_through_an_instrumented_client_is_one_event(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    """LiteLLM sends a chat completion through the client's low-level ``post`` (not
    ``chat.completions.create``): the logger's event is the call's one event."""
    body = chat_completion(MODEL, OPENAI_USAGE)
    canned.route("POST", "/v1/chat/completions", Canned(body=body))
    plain = litellm.completion(**openai_call(canned), client=openai_client(canned))
    settled(recorder)
    recorder.events.clear()
    client = instrumented_openai(canned, recorder)
    with costtrack.attributes(customer_id="cus_42"):
        response = litellm.completion(**openai_call(canned), client=client)
    assert answer(response) == answer(plain)  # LiteLLM's answer is the same through the instrumented client
    assert len(canned.calls) == 2  # one request each: nothing retried or doubled
    event = settled(recorder).event
    assert event["provider"] == "openai" and event["model"] == "gpt-5-mini"
    assert event["prompt_tokens"] == 1200 and event["completion_tokens"] == 300
    assert event["cached_input_tokens"] == 1000 and event["customer_id"] == "cus_42"
    assert event["status"] == "success"


EMBEDDING = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 8, "total_tokens": 8},
}


def test_an_embedding_through_an_instrumented_client_is_one_event(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    """An embedding through the client given: one event, the logger's (LiteLLM posts through
    the client's low-level ``post``, as for chat completions), with no completion tokens."""
    canned.route("POST", "/v1/embeddings", Canned(body=EMBEDDING))
    call = {"model": "openai/text-embedding-3-small", "input": ["Paris"], "api_base": canned.url + "/v1"}
    plain = litellm.embedding(**call, api_key="test", client=openai_client(canned))
    settled(recorder)
    recorder.events.clear()
    with costtrack.attributes(customer_id="cus_5"):
        response = litellm.embedding(**call, api_key="test", client=instrumented_openai(canned, recorder))
    assert response.data[0]["embedding"] == plain.data[0]["embedding"] == [0.25, -0.5]
    event = settled(recorder).event
    assert event["provider"] == "openai" and event["model"] == "text-embedding-3-small"
    assert event["prompt_tokens"] == 8 and event["completion_tokens"] == 0
    assert event["customer_id"] == "cus_5" and event["status"] == "success"
    assert len(canned.calls) == 2


def test_acompletion_through_an_instrumented_async_client_is_one_event(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    body = chat_completion(MODEL, OPENAI_USAGE)
    canned.route("POST", "/v1/chat/completions", Canned(body=body))

    async def main() -> Any:
        client = instrumented_openai(canned, recorder, asynchronous=True)
        with costtrack.attributes(customer_id="cus_7"):
            response = await litellm.acompletion(**openai_call(canned), client=client)
        await asyncio.sleep(0.3)  # LiteLLM's async hooks run as tasks of the loop, after the call
        return response

    response = asyncio.run(main())
    assert response.choices[0].message.content == "Paris."
    event = settled(recorder).event
    assert event["provider"] == "openai" and event["prompt_tokens"] == 1200 and event["completion_tokens"] == 300
    assert event["customer_id"] == "cus_7" and event["status"] == "success"


def test_a_stream_through_an_instrumented_client_is_one_event(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    canned.route(
        "POST", "/v1/chat/completions", Canned(body=chat_stream(MODEL, OPENAI_USAGE), content_type="text/event-stream")
    )
    client = instrumented_openai(canned, recorder)
    with costtrack.attributes(customer_id="cus_9"):
        stream = litellm.completion(
            **openai_call(canned, stream=True, stream_options={"include_usage": True}), client=client
        )
        chunks = list(stream)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == "w0 w1 "
    event = settled(recorder).event
    assert event["prompt_tokens"] == 1200 and event["completion_tokens"] == 300
    assert event["customer_id"] == "cus_9" and event["status"] == "success"


def test_a_failure_through_an_instrumented_client_raises_litellms_error_and_is_one_event(
    canned: CannedProvider, recorder: Recorder, logger: Any
) -> None:
    canned.route("POST", "/v1/chat/completions", openai_error(500))
    with pytest.raises(litellm.exceptions.InternalServerError) as plain:
        litellm.completion(**openai_call(canned), client=openai_client(canned))
    settled(recorder)
    recorder.events.clear()
    with pytest.raises(litellm.exceptions.InternalServerError) as raised:
        litellm.completion(**openai_call(canned), client=instrumented_openai(canned, recorder))
    assert raised.value.status_code == plain.value.status_code == 500
    event = settled(recorder).event
    assert event["status"] == "error" and event["prompt_tokens"] == 0 and event["provider"] == "openai"
