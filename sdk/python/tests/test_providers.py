"""Provider helpers, checked against the providers' own response types where installable."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from canned_provider import converse_response, responses_usage, token_details
from hypothesis import given, settings
from hypothesis import strategies as st

from costtrack.providers import from_anthropic, from_bedrock_converse, from_gemini, from_openai
from costtrack.validation import EventValidationError, validate_event

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
    "usage": responses_usage(10000, 3000, cached=8000, reasoning=2000),
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

BEDROCK_CONVERSE = converse_response(1000, 500, cache_read=10000, cache_write=2000)

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


def test_helpers_take_the_run_identity_fields() -> None:
    identity = {"trace_id": "run-7", "session_id": "conv-1", "parent_id": "step-2", "run_name": "Answer"}
    assert valid(from_openai(OPENAI_CHAT, **ATTRIBUTION, **identity)) == {**OPENAI_EXPECTED, **identity}
    assert valid(from_anthropic(ANTHROPIC_MESSAGE, **identity)) == {
        **{k: v for k, v in ANTHROPIC_EXPECTED.items() if k not in ATTRIBUTION},
        **identity,
    }


def test_openai_pricing_context_and_audio() -> None:
    usage = {
        **OPENAI_CHAT["usage"],
        "prompt_tokens_details": {"cached_tokens": 8000, "audio_tokens": 900},
        "completion_tokens_details": {"reasoning_tokens": 2000, "audio_tokens": 700},
    }
    chat = {**OPENAI_CHAT, "usage": usage, "service_tier": "priority"}
    event = valid(from_openai(chat, processing="batch", metadata={"route": "/chat"}))
    assert event["metadata"] == {
        "service_tier": "priority",
        "input_audio_tokens": 900,
        "output_audio_tokens": 700,
        "processing": "batch",
        "route": "/chat",
    }
    # The caller's keys win, also over processing=.
    event = valid(from_openai(chat, processing="batch", metadata={"service_tier": "flex", "processing": "x"}))
    assert (event["metadata"]["service_tier"], event["metadata"]["processing"]) == ("flex", "x")
    # No tier, an empty one, or one that is not a string: no service_tier.
    for tier in (None, "", 3, "t" * 65):
        assert "metadata" not in from_openai({**OPENAI_CHAT, "service_tier": tier})
    responses_usage = {
        **OPENAI_RESPONSE["usage"],
        "input_tokens_details": {"cached_tokens": 8000, "audio_tokens": 100},
        "output_tokens_details": {"reasoning_tokens": 2000, "audio_tokens": 50},
    }
    event = valid(from_openai({**OPENAI_RESPONSE, "usage": responses_usage, "service_tier": "flex"}))
    assert event["metadata"] == {"service_tier": "flex", "input_audio_tokens": 100, "output_audio_tokens": 50}


def test_openai_inconsistent_audio_is_left_out() -> None:
    usage = {**OPENAI_CHAT["usage"], "prompt_tokens": 10, "prompt_tokens_details": {"audio_tokens": 11}}
    event = valid(from_openai({**OPENAI_CHAT, "usage": usage}))
    assert "metadata" not in event
    assert event["prompt_tokens"] == 10


def test_deepseek_cache_hits() -> None:
    usage = {
        "prompt_tokens": 1500,
        "completion_tokens": 10,
        "prompt_cache_hit_tokens": 1000,
        "prompt_cache_miss_tokens": 500,
    }
    event = valid(from_openai({"model": "deepseek-chat", "usage": usage}, provider="deepseek"))
    assert (event["prompt_tokens"], event["cached_input_tokens"]) == (1500, 1000)
    with_details = {**usage, "prompt_tokens_details": {"cached_tokens": 900}}
    assert from_openai({"model": "deepseek-chat", "usage": with_details})["cached_input_tokens"] == 900


def test_metadata_that_is_not_an_object_is_passed_as_given() -> None:
    event = from_anthropic(
        {**ANTHROPIC_MESSAGE, "usage": {**ANTHROPIC_MESSAGE["usage"], "speed": "fast"}}, metadata=[1]
    )  # type: ignore[arg-type]
    assert event["metadata"] == [1]  # type: ignore[comparison-overlap]
    with pytest.raises(EventValidationError) as caught:
        validate_event(event)
    assert caught.value.fields == ("metadata",)


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


def test_anthropic_cache_write_lifetimes_travel_in_metadata() -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }
    message = {**ANTHROPIC_MESSAGE, "usage": usage}
    event = valid(from_anthropic(message, metadata={"route": "/chat"}))
    assert event["cache_write_tokens"] == 3000
    assert event["metadata"] == {"cache_write_1h_tokens": 2000, "cache_write_5m_tokens": 1000, "route": "/chat"}
    five_minutes_only = {**usage, "cache_creation": {"ephemeral_5m_input_tokens": 3000, "ephemeral_1h_input_tokens": 0}}
    event = from_anthropic({**ANTHROPIC_MESSAGE, "usage": five_minutes_only})
    assert event["metadata"] == {"cache_write_5m_tokens": 3000}  # a count of 0 is left out
    anthropic = pytest.importorskip("anthropic")
    if hasattr(anthropic.types, "CacheCreation"):  # SDK versions that type the split
        typed = anthropic.types.Message.model_validate(message)
        assert from_anthropic(typed)["metadata"] == {"cache_write_1h_tokens": 2000, "cache_write_5m_tokens": 1000}


def test_anthropic_tier_speed_and_web_searches() -> None:
    usage = {
        **ANTHROPIC_MESSAGE["usage"],
        "server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 4},
        "service_tier": "batch",
        "speed": "fast",
    }
    event = valid(from_anthropic({**ANTHROPIC_MESSAGE, "usage": usage}))
    assert event["metadata"] == {"service_tier": "batch", "processing": "batch", "speed": "fast", "web_searches": 2}
    standard = {**usage, "service_tier": "standard", "server_tool_use": {"web_search_requests": 0}}
    event = valid(from_anthropic({**ANTHROPIC_MESSAGE, "usage": standard}, processing="batch"))
    assert event["metadata"] == {"service_tier": "standard", "speed": "fast", "processing": "batch"}


def test_anthropic_inconsistent_cache_lifetimes_are_left_out() -> None:
    """A lifetime count larger than cache_write_tokens would make the event invalid: it is
    left out, and the rest of the event is kept."""
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 100,
        "cache_creation": {"ephemeral_5m_input_tokens": 50, "ephemeral_1h_input_tokens": 500},
    }
    event = valid(from_anthropic({**ANTHROPIC_MESSAGE, "usage": usage}))
    assert event["cache_write_tokens"] == 100
    assert event["metadata"] == {"cache_write_5m_tokens": 50}
    no_total = {**usage, "cache_creation_input_tokens": None}
    assert "metadata" not in valid(from_anthropic({**ANTHROPIC_MESSAGE, "usage": no_total}))


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


GEMINI_MODALITIES: Dict[str, Any] = {
    "prompt_token_count": 3000,
    "cached_content_token_count": 1000,
    "candidates_token_count": 600,
    "tool_use_prompt_token_count": 200,
    "total_token_count": 3800,
    "prompt_tokens_details": token_details("token_count", TEXT=500, AUDIO=1500, IMAGE=500, DOCUMENT=258, VIDEO=242),
    "tool_use_prompt_tokens_details": token_details("token_count", TEXT=150, AUDIO=50),
    "cache_tokens_details": token_details("token_count", AUDIO=700, VIDEO=100),
    "candidates_tokens_details": token_details("token_count", TEXT=100, AUDIO=500),
}
GEMINI_MODALITY_METADATA = {
    "input_audio_tokens": 1550,  # prompt 1500 + tool-use prompt 50
    "input_image_tokens": 758,  # IMAGE + DOCUMENT
    "input_video_tokens": 242,
    "cache_audio_read_tokens": 700,
    "cache_video_read_tokens": 100,
    "output_audio_tokens": 500,
}


def test_gemini_modalities_from_the_sdks_types() -> None:
    genai_types = pytest.importorskip("google.genai.types")
    response = genai_types.GenerateContentResponse(
        model_version="gemini-2.5-flash",
        usage_metadata=genai_types.GenerateContentResponseUsageMetadata(**GEMINI_MODALITIES),
        sdk_http_response=genai_types.HttpResponse(headers={"X-Gemini-Service-Tier": "priority"}),
    )
    modality = response.usage_metadata.prompt_tokens_details[1].modality
    assert modality is not None and type(modality) is not str  # an enum, as the SDK parses it
    event = valid(from_gemini(response))
    assert event["prompt_tokens"] == 3200
    assert event["metadata"] == {"service_tier": "priority", **GEMINI_MODALITY_METADATA}


def test_gemini_modalities_from_rest_json() -> None:
    def camel(name: str) -> str:
        head, *rest = name.split("_")
        return head + "".join(part.title() for part in rest)

    def to_rest(value: Any) -> Any:
        if isinstance(value, dict):
            return {camel(key): to_rest(item) for key, item in value.items()}
        if isinstance(value, list):
            return [to_rest(item) for item in value]
        return value

    rest = {"modelVersion": "gemini-2.5-flash", "usageMetadata": to_rest(GEMINI_MODALITIES)}
    assert "promptTokensDetails" in rest["usageMetadata"]
    event = valid(from_gemini(rest))
    assert (event["model"], event["prompt_tokens"], event["total_tokens"]) == ("gemini-2.5-flash", 3200, 3800)
    assert event["metadata"] == GEMINI_MODALITY_METADATA


def test_gemini_inconsistent_modalities_are_left_out() -> None:
    usage = {
        "prompt_token_count": 100,
        "cached_content_token_count": 50,
        "candidates_token_count": 10,
        "prompt_tokens_details": [{"modality": "AUDIO", "token_count": 40}],
        "cache_tokens_details": [{"modality": "AUDIO", "token_count": 45}],  # more than the prompt's audio
        "candidates_tokens_details": [{"modality": "IMAGE", "token_count": 11}],  # more than the candidates
    }
    event = valid(from_gemini({"model_version": "gemini-2.5-flash", "usage_metadata": usage}))
    assert event["metadata"] == {"input_audio_tokens": 40}
    weird = {**usage, "prompt_tokens_details": [{"modality": None, "token_count": 1}, {"modality": "AUDIO"}, "x"]}
    assert "metadata" not in from_gemini({"usage_metadata": weird})


def test_bedrock_converse_from_a_plain_dict() -> None:
    event = from_bedrock_converse(BEDROCK_CONVERSE, model="anthropic.claude-sonnet-4-5-v1:0", **ATTRIBUTION)
    assert valid(event) == BEDROCK_EXPECTED
    assert from_bedrock_converse(
        BEDROCK_CONVERSE, model_id="anthropic.claude-sonnet-4-5-v1:0"
    ) == from_bedrock_converse(BEDROCK_CONVERSE, model="anthropic.claude-sonnet-4-5-v1:0")
    with pytest.raises(TypeError, match="modelId"):
        from_bedrock_converse(BEDROCK_CONVERSE)


def test_bedrock_cache_details_and_service_tier() -> None:
    usage = {
        **BEDROCK_CONVERSE["usage"],
        "cacheDetails": [{"ttl": "1h", "inputTokens": 1500}, {"ttl": "5m", "inputTokens": 500}],
    }
    response = {**BEDROCK_CONVERSE, "usage": usage, "serviceTier": {"type": "flex"}}
    event = valid(from_bedrock_converse(response, model="us.anthropic.claude-sonnet-4-5-20250929-v1:0"))
    assert event["model"] == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert event["metadata"] == {"service_tier": "flex", "cache_write_1h_tokens": 1500, "cache_write_5m_tokens": 500}
    too_many = {**usage, "cacheDetails": [{"ttl": "1h", "inputTokens": 2500}, {"ttl": "12h", "inputTokens": 7}]}
    event = valid(from_bedrock_converse({**BEDROCK_CONVERSE, "usage": too_many}, model="m"))
    assert "metadata" not in event  # 2500 > cacheWriteInputTokens 2000: left out; unknown TTLs ignored


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


#: Each helper with a response it reads and the model it needs.
HELPER_CALLS = [
    (from_openai, OPENAI_CHAT, {}),
    (from_anthropic, ANTHROPIC_MESSAGE, {}),
    (from_gemini, {"usage_metadata": GEMINI_USAGE}, {"model": "gemini-2.5-pro"}),
    (from_bedrock_converse, BEDROCK_CONVERSE, {"model": "anthropic.claude-sonnet-4-5-v1:0"}),
]


@pytest.mark.parametrize(("helper", "response", "model"), HELPER_CALLS, ids=[call[0].__name__ for call in HELPER_CALLS])
def test_every_helper_takes_the_event_fields_and_no_other_keyword(helper: Any, response: Any, model: Any) -> None:
    """The helpers declare their shared keywords once (HelperFields); each takes all of them,
    and an unknown keyword is a TypeError, as for a function that lists its keywords."""
    given = {
        "feature": "chat",
        "customer_id": "c_1",
        "customer_name": "Acme",
        "environment": "staging",
        "latency_ms": 120,
        "status": "error",
    }
    event = valid(helper(response, **model, **given, metadata={"route": "/chat"}, processing="batch"))
    assert {name: event[name] for name in given} == given
    assert (event["metadata"]["route"], event["metadata"]["processing"]) == ("/chat", "batch")
    with pytest.raises(TypeError, match=rf"^{helper.__name__}\(\) got an unexpected keyword argument 'feture'$"):
        helper(response, **model, feture="chat")


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


COUNT_VALUES = st.none() | st.integers(min_value=-5, max_value=3000) | st.floats(allow_nan=True) | st.booleans()


@settings(max_examples=200, deadline=None)
@given(
    values=st.fixed_dictionaries(
        {name: COUNT_VALUES for name in ("a", "b", "c", "d", "e", "f", "g", "h")},
    ),
    tier=st.none() | st.text(max_size=70) | st.integers(),
)
def test_helpers_never_break_the_metadata_rules(values: Dict[str, Any], tier: Any) -> None:
    """Whatever usage a provider reports, the helpers' own metadata is valid: any error is
    about the provider's standard counts, never about a metadata name the helper added."""
    a, b, c, d, e, f, g, h = (values[name] for name in "abcdefgh")
    events = [
        from_openai(
            {
                "model": "m",
                "service_tier": tier,
                "usage": {
                    "prompt_tokens": a,
                    "completion_tokens": b,
                    "prompt_tokens_details": {"cached_tokens": c, "audio_tokens": d},
                    "completion_tokens_details": {"audio_tokens": e},
                },
            }
        ),
        from_anthropic(
            {
                "model": "m",
                "usage": {
                    "input_tokens": a,
                    "output_tokens": b,
                    "cache_creation_input_tokens": c,
                    "cache_creation": {"ephemeral_1h_input_tokens": d, "ephemeral_5m_input_tokens": e},
                    "server_tool_use": {"web_search_requests": f},
                    "service_tier": tier,
                    "speed": tier,
                },
            }
        ),
        from_gemini(
            {
                "model_version": "m",
                "usage_metadata": {
                    "prompt_token_count": a,
                    "cached_content_token_count": b,
                    "candidates_token_count": c,
                    "prompt_tokens_details": [{"modality": "AUDIO", "token_count": d}],
                    "cache_tokens_details": [{"modality": "AUDIO", "token_count": e}],
                    "candidates_tokens_details": [{"modality": "IMAGE", "token_count": f}],
                    "tool_use_prompt_tokens_details": [{"modality": "AUDIO", "token_count": g}],
                },
            }
        ),
        from_bedrock_converse(
            {
                "usage": {
                    "inputTokens": a,
                    "cacheWriteInputTokens": b,
                    "cacheDetails": [{"ttl": "1h", "inputTokens": c}, {"ttl": "5m", "inputTokens": h}],
                },
                "serviceTier": {"type": tier},
            },
            model="m",
        ),
    ]
    for event in events:
        try:
            validate_event(event)
        except EventValidationError as error:
            assert not [field for field in error.fields if field.startswith("metadata")], error


def test_xai_chat_reasoning_is_folded_into_the_completion() -> None:
    """xAI counts reasoning apart from completion_tokens; folded in, it is charged once."""
    response = {
        "model": "grok-4",
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "completion_tokens_details": {"reasoning_tokens": 300},
        },
    }
    event = from_openai(response, provider="xai")
    assert (event["completion_tokens"], event.get("reasoning_tokens")) == (320, None)
    assert from_openai(response)["completion_tokens"] == 20  # OpenAI's own count already includes it
