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
