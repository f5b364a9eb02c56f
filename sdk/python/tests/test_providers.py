"""Provider helpers, checked against the providers' own response types where installable."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from costtrack.providers import from_anthropic, from_bedrock_converse, from_gemini, from_openai
from costtrack.validation import validate_event

OPENAI_CHAT: Dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_760_000_000,
    "model": "gpt-5-2025-08-07",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}, "logprobs": None}
    ],
    "usage": {
        "prompt_tokens": 10000,
        "completion_tokens": 3000,
        "total_tokens": 13000,
        "prompt_tokens_details": {"cached_tokens": 8000, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 2000, "audio_tokens": 0},
    },
}

OPENAI_RESPONSE: Dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1_760_000_000,
    "model": "gpt-5-2025-08-07",
    "status": "completed",
    "output": [],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 10000,
        "input_tokens_details": {"cached_tokens": 8000, "cache_write_tokens": 0},
        "output_tokens": 3000,
        "output_tokens_details": {"reasoning_tokens": 2000},
        "total_tokens": 13000,
    },
}

ANTHROPIC_MESSAGE: Dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "hi"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 1000,
        "output_tokens": 500,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 10000,
    },
}

GEMINI_USAGE: Dict[str, Any] = {
    "prompt_token_count": 250000,
    "cached_content_token_count": 200000,
    "candidates_token_count": 1000,
    "thoughts_token_count": 2000,
    "total_token_count": 253000,
}

BEDROCK_CONVERSE: Dict[str, Any] = {
    "output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
    "stopReason": "end_turn",
    "usage": {
        "inputTokens": 1000,
        "outputTokens": 500,
        "totalTokens": 13500,
        "cacheReadInputTokens": 10000,
        "cacheWriteInputTokens": 2000,
    },
    "metrics": {"latencyMs": 850},
}

ATTRIBUTION = {"feature": "chat", "customer_id": "c_1", "metadata": {"route": "/chat"}}

OPENAI_EXPECTED = {
    "provider": "openai",
    "model": "gpt-5-2025-08-07",
    "prompt_tokens": 10000,
    "completion_tokens": 3000,  # includes the 2000 reasoning tokens: not passed again
    "total_tokens": 13000,
    "cached_input_tokens": 8000,
    **ATTRIBUTION,
}
OPENAI_RESPONSES_EXPECTED = {**OPENAI_EXPECTED, "cache_write_tokens": 0}
ANTHROPIC_EXPECTED = {
    "provider": "anthropic",
    "model": "claude-sonnet-4-5-20250929",
    "prompt_tokens": 1000,
    "completion_tokens": 500,
    "cached_input_tokens": 10000,
    "cache_write_tokens": 2000,
    **ATTRIBUTION,
}
GEMINI_EXPECTED = {
    "provider": "google",
    "model": "gemini-2.5-pro",
    "prompt_tokens": 250000,
    "completion_tokens": 1000,
    "reasoning_tokens": 2000,  # not part of Gemini's candidates count
    "total_tokens": 253000,
    "cached_input_tokens": 200000,
    **ATTRIBUTION,
}
BEDROCK_EXPECTED = {
    "provider": "bedrock",
    "model": "anthropic.claude-sonnet-4-5-v1:0",
    "prompt_tokens": 1000,
    "completion_tokens": 500,
    "total_tokens": 13500,
    "cached_input_tokens": 10000,
    "cache_write_tokens": 2000,
    "latency_ms": 850,
    **ATTRIBUTION,
}


def valid(event: Any) -> Dict[str, Any]:
    return validate_event(event).fields


def test_openai_from_plain_dicts() -> None:
    assert valid(from_openai(OPENAI_CHAT, **ATTRIBUTION)) == OPENAI_EXPECTED
    assert valid(from_openai(OPENAI_RESPONSE, **ATTRIBUTION)) == OPENAI_RESPONSES_EXPECTED
    usage = {**OPENAI_CHAT["usage"], "prompt_tokens_details": {"cached_tokens": 8000, "cache_write_tokens": 1500}}
    assert from_openai({**OPENAI_CHAT, "usage": usage})["cache_write_tokens"] == 1500


def test_openai_with_the_sdks_types() -> None:
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    assert valid(from_openai(ChatCompletion.model_validate(OPENAI_CHAT), **ATTRIBUTION)) == OPENAI_EXPECTED
    response = Response.model_validate(OPENAI_RESPONSE)
    assert valid(from_openai(response, **ATTRIBUTION)) == OPENAI_RESPONSES_EXPECTED


def test_openai_compatible_providers_and_stream_chunks() -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "llama-3.3-70b", "choices": [], "usage": None}
    assert valid(from_openai(chunk, provider="groq")) == {"provider": "groq", "model": "llama-3.3-70b"}
    event = from_openai(OPENAI_CHAT, provider="azure", model="my-deployment", status="error", latency_ms=12)
    assert (event["provider"], event["model"], event["status"], event["latency_ms"]) == (
        "azure",
        "my-deployment",
        "error",
        12,
    )


def test_anthropic_from_a_plain_dict() -> None:
    assert valid(from_anthropic(ANTHROPIC_MESSAGE, **ATTRIBUTION)) == ANTHROPIC_EXPECTED


def test_anthropic_with_the_sdks_types() -> None:
    pytest.importorskip("anthropic")
    from anthropic.types import Message

    message = Message.model_validate(ANTHROPIC_MESSAGE)
    assert valid(from_anthropic(message, **ATTRIBUTION)) == ANTHROPIC_EXPECTED
    thinking = Message.model_validate({**ANTHROPIC_MESSAGE, "usage": {"input_tokens": 10, "output_tokens": 900}})
    assert "reasoning_tokens" not in from_anthropic(thinking)  # thinking is inside output_tokens


def test_anthropic_one_hour_cache_writes_travel_in_metadata() -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }
    message = {**ANTHROPIC_MESSAGE, "usage": usage}
    event = valid(from_anthropic(message, metadata={"route": "/chat"}))
    assert event["cache_write_tokens"] == 3000
    assert event["metadata"] == {"cache_write_1h_tokens": 2000, "route": "/chat"}
    no_one_hour = {**usage, "cache_creation": {"ephemeral_5m_input_tokens": 3000, "ephemeral_1h_input_tokens": 0}}
    assert "metadata" not in from_anthropic({**ANTHROPIC_MESSAGE, "usage": no_one_hour})
    anthropic = pytest.importorskip("anthropic")
    if hasattr(anthropic.types, "CacheCreation"):  # SDK versions that type the split
        typed = anthropic.types.Message.model_validate(message)
        assert from_anthropic(typed)["metadata"] == {"cache_write_1h_tokens": 2000}


def test_gemini_from_a_plain_dict() -> None:
    response = {"model_version": "gemini-2.5-pro", "usage_metadata": GEMINI_USAGE}
    assert valid(from_gemini(response, **ATTRIBUTION)) == GEMINI_EXPECTED


def test_gemini_with_the_sdks_types() -> None:
    genai_types = pytest.importorskip("google.genai.types")
    response = genai_types.GenerateContentResponse(
        model_version="gemini-2.5-pro",
        usage_metadata=genai_types.GenerateContentResponseUsageMetadata(**GEMINI_USAGE),
    )
    assert valid(from_gemini(response, **ATTRIBUTION)) == GEMINI_EXPECTED
    with_tools = genai_types.GenerateContentResponse(
        model_version="gemini-2.5-flash",
        usage_metadata=genai_types.GenerateContentResponseUsageMetadata(
            prompt_token_count=100, tool_use_prompt_token_count=40, candidates_token_count=10, total_token_count=150
        ),
    )
    event = from_gemini(with_tools)
    assert (event["prompt_tokens"], event["total_tokens"]) == (140, 150)


def test_bedrock_converse_from_a_plain_dict() -> None:
    event = from_bedrock_converse(BEDROCK_CONVERSE, model="anthropic.claude-sonnet-4-5-v1:0", **ATTRIBUTION)
    assert valid(event) == BEDROCK_EXPECTED


def test_bedrock_converse_checked_by_botocore() -> None:
    """botocore's Stubber validates the canned response against the service model, so the
    dict above is the shape boto3 really returns."""
    botocore_session = pytest.importorskip("botocore.session")
    from botocore.stub import Stubber

    client = botocore_session.get_session().create_client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    with Stubber(client) as stubber:
        stubber.add_response("converse", BEDROCK_CONVERSE)
        response = client.converse(
            modelId="anthropic.claude-sonnet-4-5-v1:0", messages=[{"role": "user", "content": [{"text": "hi"}]}]
        )
    event = from_bedrock_converse(response, model="anthropic.claude-sonnet-4-5-v1:0", **ATTRIBUTION)
    assert valid(event) == BEDROCK_EXPECTED


def test_helpers_never_count_reasoning_twice() -> None:
    """Where the provider's output count already includes reasoning, no reasoning_tokens is sent;
    so the service's computed total (prompt + completion + reasoning) is the provider's total."""
    openai_event = from_openai(OPENAI_CHAT)
    assert "reasoning_tokens" not in openai_event
    assert openai_event["prompt_tokens"] + openai_event["completion_tokens"] == openai_event["total_tokens"]
    gemini_event = from_gemini({"model_version": "gemini-2.5-pro", "usage_metadata": GEMINI_USAGE})
    assert (
        gemini_event["prompt_tokens"] + gemini_event["completion_tokens"] + gemini_event["reasoning_tokens"]
        == gemini_event["total_tokens"]
    )
