"""``costtrack.integrations.litellm``: the ``CustomLogger`` hooks called as LiteLLM documents them
(``log_success_event(kwargs, response_obj, start_time, end_time)``, ``log_failure_event`` and the
``async_`` variants), with ``kwargs`` and ``response_obj`` shaped as LiteLLM documents them: the
call's ``model``, ``litellm_params.custom_llm_provider``, ``litellm_call_id``, ``exception`` and
``complete_streaming_response``, and an OpenAI-shaped ``ModelResponse.usage``. litellm itself
(a 44 MB wheel) is not installed for the tests: the objects are its documented shapes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import datetime, timedelta
from typing import Any, Dict, Optional

import pytest
from instrumented import Recorder

import costtrack
from costtrack.integrations.litellm import CosttrackLogger, litellm_provider
from costtrack.providers import from_anthropic, from_gemini, from_openai

START = datetime(2026, 11, 26, 12, 0, 0)
END = START + timedelta(milliseconds=1234)


def model_response(model: str, usage: Dict[str, Any]) -> Dict[str, Any]:
    """A LiteLLM ``ModelResponse`` (OpenAI's Chat Completions shape, whatever the provider)."""
    return {
        "id": "chatcmpl-01",
        "object": "chat.completion",
        "created": 1_763_800_000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Paris."}}],
        "usage": usage,
    }


def call_kwargs(model: str, provider: str, call_id: str = "call-1", **extra: Any) -> Dict[str, Any]:
    """The ``kwargs`` LiteLLM passes to its callbacks (its model call details)."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": "Capital of France?"}],
        "litellm_call_id": call_id,
        "litellm_params": {"custom_llm_provider": provider, "metadata": {}, "api_base": None},
        **extra,
    }


OPENAI_USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 300,
    "total_tokens": 1500,
    "prompt_tokens_details": {"cached_tokens": 1000, "audio_tokens": None},
    "completion_tokens_details": {"reasoning_tokens": 200, "audio_tokens": None},
}
# LiteLLM's Anthropic usage: the prompt counts the cache reads and writes, which it also reports
# as cache_read_input_tokens / cache_creation_input_tokens.
ANTHROPIC_USAGE = {
    "prompt_tokens": 2600,
    "completion_tokens": 400,
    "total_tokens": 3000,
    "prompt_tokens_details": {"cached_tokens": 2000},
    "cache_creation_input_tokens": 500,
    "cache_read_input_tokens": 2000,
}
# LiteLLM's Gemini usage: the completion counts the thoughts (completion_tokens_details.reasoning_tokens).
GEMINI_USAGE = {
    "prompt_tokens": 800,
    "completion_tokens": 700,
    "total_tokens": 1500,
    "completion_tokens_details": {"reasoning_tokens": 500},
}


def test_success_is_the_event_from_openai_gives_with_latency_and_attribution(recorder: Recorder) -> None:
    logger = CosttrackLogger(tracker=recorder, feature="chat")
    response = model_response("gpt-5-mini-2025-08-07", OPENAI_USAGE)
    with costtrack.attributes(customer_id="cus_42"):
        logger.log_success_event(call_kwargs("gpt-5-mini-2025-08-07", "openai"), response, START, END)
    expected = from_openai(response, feature="chat", customer_id="cus_42", latency_ms=1234, status="success")
    assert recorder.event == expected


def test_anthropics_prompt_leaves_the_cache_out_as_from_anthropic_does(recorder: Recorder) -> None:
    logger = CosttrackLogger(tracker=recorder)
    model = "claude-sonnet-4-5-20250929"
    logger.log_success_event(call_kwargs(model, "anthropic"), model_response(model, ANTHROPIC_USAGE), START, END)
    native = {
        "model": model,
        "usage": {
            "input_tokens": 100,
            "output_tokens": 400,
            "cache_read_input_tokens": 2000,
            "cache_creation_input_tokens": 500,
        },
    }
    assert recorder.event == from_anthropic(native, latency_ms=1234, status="success")


def test_async_gemini_passes_the_reasoning_apart_as_from_gemini_does(recorder: Recorder) -> None:
    logger = CosttrackLogger(tracker=recorder)
    kwargs = call_kwargs("gemini/gemini-2.5-flash", "gemini")
    asyncio.run(logger.async_log_success_event(kwargs, model_response("gemini-2.5-flash", GEMINI_USAGE), START, END))
    native = {
        "model_version": "gemini-2.5-flash",
        "usage_metadata": {"prompt_token_count": 800, "candidates_token_count": 200, "thoughts_token_count": 500},
    }
    assert recorder.event == from_gemini(native, latency_ms=1234, status="success")


def test_a_stream_is_read_from_its_complete_response(recorder: Recorder) -> None:
    logger = CosttrackLogger(tracker=recorder, provider="groq")
    whole = model_response(
        "llama-3.3-70b-versatile", {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
    )
    last_chunk = {
        "id": "chatcmpl-01",
        "object": "chat.completion.chunk",
        "model": "llama-3.3-70b-versatile",
        "choices": [],
    }
    kwargs = call_kwargs("llama-3.3-70b-versatile", "groq", stream=True, complete_streaming_response=whole)
    logger.log_success_event(kwargs, last_chunk, START, END)
    assert recorder.event == {
        "provider": "groq",
        "model": "llama-3.3-70b-versatile",
        "prompt_tokens": 50,
        "completion_tokens": 20,
        "total_tokens": 70,
        "latency_ms": 1234,
        "status": "success",
    }


class Timeout(Exception):
    """Named as litellm.exceptions.Timeout is."""


@pytest.mark.parametrize(
    ("exception", "status"),
    [(Timeout("Request timed out"), "timeout"), (RuntimeError("RateLimitError"), "error"), (None, "error")],
)
def test_a_failure_is_tracked_with_zero_tokens_and_its_status(
    recorder: Recorder, exception: Optional[Exception], status: str
) -> None:
    logger = CosttrackLogger(tracker=recorder)
    kwargs = call_kwargs("claude-sonnet-4-5", "vertex_ai", exception=exception)
    asyncio.run(logger.async_log_failure_event(kwargs, None, START, END))
    assert recorder.event == {
        "provider": "anthropic",  # Claude on Vertex AI: Anthropic's model and conventions
        "model": "claude-sonnet-4-5",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "latency_ms": 1234,
        "status": status,
    }


def test_a_call_is_tracked_once_whichever_hooks_run(recorder: Recorder) -> None:
    logger = CosttrackLogger(tracker=recorder)
    kwargs = call_kwargs("gpt-5", "openai", call_id="call-7")
    response = model_response("gpt-5", OPENAI_USAGE)
    logger.log_success_event(kwargs, response, START, END)
    asyncio.run(logger.async_log_success_event(kwargs, response, START, END))
    logger.log_success_event(call_kwargs("gpt-5", "openai", call_id="call-8"), response, START, END)
    assert len(recorder.events) == 2 and not recorder.errors


def test_a_tracker_failure_is_reported_not_raised() -> None:
    class Broken(Recorder):
        def track(self, event: Any) -> None:
            raise RuntimeError("tracker down")

    broken = Broken()
    CosttrackLogger(tracker=broken).log_success_event(
        call_kwargs("gpt-5", "openai"), model_response("gpt-5", OPENAI_USAGE), START, END
    )
    assert [str(error) for error in broken.errors] == ["tracker down"]


def test_providers_arguments_and_no_litellm_import(recorder: Recorder) -> None:
    assert [litellm_provider(name) for name in ("gemini", "together_ai", "bedrock", "", None)] == [
        "google",
        "together",
        "bedrock",
        None,
        None,
    ]
    with pytest.raises(TypeError, match="unexpected keyword argument 'model'"):
        CosttrackLogger(tracker=recorder, model="x")
    with pytest.raises(TypeError, match="tracker="):
        CosttrackLogger(tracker=object())
    code = "import costtrack, costtrack.providers, costtrack.integrations, sys; print('litellm' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_the_logger_is_litellms_custom_logger(recorder: Recorder) -> None:
    """LiteLLM calls a callback's hooks only if it is an instance of its ``CustomLogger``."""
    custom_logger = pytest.importorskip("litellm.integrations.custom_logger")
    assert isinstance(CosttrackLogger(tracker=recorder), custom_logger.CustomLogger)
