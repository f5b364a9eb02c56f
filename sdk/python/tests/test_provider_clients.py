"""The provider helpers fed by the providers' official client libraries.

A canned provider on a free 127.0.0.1 port answers with the JSON each provider documents
(service tiers, audio token details, one-hour cache writes, web searches, DeepSeek's cache hits,
Bedrock's cacheDetails); the real clients (openai, anthropic, google-genai, boto3) call it and
parse the answer into their own response objects, and the helpers turn those into events. So
the helpers are checked against what the clients really hand back, not against objects built by
hand. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest
from canned_provider import (
    Canned,
    CannedProvider,
    anthropic_message,
    chat_completion,
    chat_usage,
    converse_response,
    gemini_response,
    responses_usage,
    token_details,
)

from costtrack.providers import from_anthropic, from_bedrock_converse, from_gemini, from_openai
from costtrack.validation import validate_event

pytestmark = [
    # Notices about the clients themselves, not about what is tested here.
    pytest.mark.filterwarnings("ignore:Boto3 will no longer support Python"),
    pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning"),
]


@pytest.fixture
def provider(canned: CannedProvider) -> CannedProvider:
    """The canned provider (conftest's ``canned``: no client finds a real key, credentials, a
    proxy or an instance metadata service)."""
    return canned


def valid(event: Any) -> Dict[str, Any]:
    """The event as the service would store it: validation must pass."""
    return validate_event(event).fields


# -- OpenAI (and OpenAI-compatible APIs) ----------------------------------------------------


def openai_client(provider: CannedProvider, prefix: str = "/v1") -> Any:
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=provider.url + prefix, api_key="test", max_retries=0, timeout=10)


OPENAI_FLEX = chat_completion(
    "o4-mini-2025-04-16", chat_usage(10000, 3000, cached=8000, reasoning=2000), service_tier="flex"
)

OPENAI_AUDIO = chat_completion(
    "gpt-audio-2025-08-28", chat_usage(1500, 900, input_audio=1200, output_audio=850), service_tier="default"
)
OPENAI_AUDIO["choices"][0]["message"] = {
    "role": "assistant",
    "content": None,
    "refusal": None,
    "annotations": [],
    "audio": {"id": "audio_01", "data": "UklGRiQAAABXQVZF", "expires_at": 1_763_803_600, "transcript": "Paris."},
}

OPENAI_RESPONSE_PRIORITY: Dict[str, Any] = {
    "id": "resp_01",
    "object": "response",
    "created_at": 1_763_800_000,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "model": "gpt-5-2025-08-07",
    "output": [
        {
            "type": "reasoning",
            "id": "rs_01",
            "summary": [],
        },
        {
            "type": "message",
            "id": "msg_01",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Paris.", "annotations": []}],
        },
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "temperature": 1.0,
    "top_p": 1.0,
    "service_tier": "priority",
    "usage": responses_usage(10000, 3000, cached=4000, reasoning=2000),
}


def test_openai_chat_completion_on_the_flex_tier(provider: CannedProvider) -> None:
    provider.route("POST", "/v1/chat/completions", Canned(body=OPENAI_FLEX))
    client = openai_client(provider)
    completion = client.chat.completions.create(
        model="o4-mini", messages=[{"role": "user", "content": "Capital of France?"}], service_tier="flex"
    )
    client.close()

    assert provider.calls[0].json["service_tier"] == "flex"
    assert valid(from_openai(completion, feature="qa")) == {
        "provider": "openai",
        "model": "o4-mini-2025-04-16",
        "prompt_tokens": 10000,
        "completion_tokens": 3000,  # includes the 2000 reasoning tokens
        "total_tokens": 13000,
        "cached_input_tokens": 8000,
        "feature": "qa",
        "metadata": {"service_tier": "flex"},  # audio_tokens 0: nothing to price apart
    }


def test_openai_chat_completion_with_audio(provider: CannedProvider) -> None:
    provider.route("POST", "/v1/chat/completions", Canned(body=OPENAI_AUDIO))
    client = openai_client(provider)
    completion = client.chat.completions.create(
        model="gpt-audio",
        modalities=["text", "audio"],
        audio={"voice": "alloy", "format": "wav"},
        messages=[{"role": "user", "content": "Capital of France?"}],
    )
    client.close()

    assert valid(from_openai(completion, metadata={"session": "s-1"})) == {
        "provider": "openai",
        "model": "gpt-audio-2025-08-28",
        "prompt_tokens": 1500,
        "completion_tokens": 900,
        "total_tokens": 2400,
        "cached_input_tokens": 0,
        "metadata": {
            "service_tier": "default",
            "input_audio_tokens": 1200,  # part of prompt_tokens
            "output_audio_tokens": 850,  # part of completion_tokens
            "session": "s-1",
        },
    }


def test_openai_responses_api_on_the_priority_tier(provider: CannedProvider) -> None:
    provider.route("POST", "/v1/responses", Canned(body=OPENAI_RESPONSE_PRIORITY))
    client = openai_client(provider)
    response = client.responses.create(model="gpt-5", input="Capital of France?", service_tier="priority")
    client.close()

    assert valid(from_openai(response, customer_id="cus_42")) == {
        "provider": "openai",
        "model": "gpt-5-2025-08-07",
        "prompt_tokens": 10000,
        "completion_tokens": 3000,
        "total_tokens": 13000,
        "cached_input_tokens": 4000,
        "cache_write_tokens": 0,
        "customer_id": "cus_42",
        "metadata": {"service_tier": "priority"},
    }


def test_openai_batch_results_are_marked_as_batch(provider: CannedProvider) -> None:
    """A Batch API output file holds one JSON line per request; its ``response.body`` is the
    same ChatCompletion, which does not say that it was a batch: ``processing="batch"`` does."""
    line = {
        "id": "batch_req_01",
        "custom_id": "request-1",
        "response": {"status_code": 200, "request_id": "req_01", "body": {**OPENAI_FLEX, "service_tier": "default"}},
        "error": None,
    }
    provider.route(
        "GET",
        "/v1/files/file-out01/content",
        Canned(body=json.dumps(line) + "\n", content_type="application/octet-stream"),
    )
    client = openai_client(provider)
    content = client.files.content("file-out01")
    client.close()

    body = json.loads(content.text.splitlines()[0])["response"]["body"]
    event = valid(from_openai(body, processing="batch"))
    assert event["metadata"] == {"service_tier": "default", "processing": "batch"}
    assert (event["prompt_tokens"], event["cached_input_tokens"]) == (10000, 8000)


def test_deepseek_cache_hits_through_the_openai_client(provider: CannedProvider) -> None:
    """DeepSeek reports its context cache as prompt_cache_hit_tokens / prompt_cache_miss_tokens
    (https://api-docs.deepseek.com/api/create-chat-completion); prompt_tokens is their sum."""
    body = chat_completion(
        "deepseek-reasoner",
        {
            "prompt_tokens": 1500,
            "completion_tokens": 700,
            "total_tokens": 2200,
            "prompt_cache_hit_tokens": 1000,
            "prompt_cache_miss_tokens": 500,
            "completion_tokens_details": {"reasoning_tokens": 400},
        },
    )
    provider.route("POST", "/chat/completions", Canned(body=body))
    client = openai_client(provider, prefix="")
    completion = client.chat.completions.create(
        model="deepseek-reasoner", messages=[{"role": "user", "content": "Capital of France?"}]
    )
    client.close()

    assert valid(from_openai(completion, provider="deepseek")) == {
        "provider": "deepseek",
        "model": "deepseek-reasoner",
        "prompt_tokens": 1500,  # hits + misses
        "completion_tokens": 700,  # includes the 400 reasoning tokens
        "total_tokens": 2200,
        "cached_input_tokens": 1000,
    }


# -- Anthropic -------------------------------------------------------------------------------


def anthropic_client(provider: CannedProvider) -> Any:
    anthropic = pytest.importorskip("anthropic")
    return anthropic.Anthropic(base_url=provider.url, api_key="test", max_retries=0, timeout=10)


ANTHROPIC_CACHE_AND_SEARCH = anthropic_message(
    "claude-sonnet-4-5-20250929",
    {
        "input_tokens": 1200,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 10000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
        "output_tokens": 500,
        "server_tool_use": {"web_search_requests": 3, "web_fetch_requests": 1},
        "service_tier": "priority",
        "inference_geo": "global",
    },
)


def create_message(provider: CannedProvider, reply: Dict[str, Any], **request: Any) -> Any:
    """The Message the official client makes of ``reply``, the canned answer to its ``POST /v1/messages``."""
    provider.route("POST", "/v1/messages", Canned(body=reply))
    client = anthropic_client(provider)
    try:
        return client.messages.create(messages=[{"role": "user", "content": "Capital of France?"}], **request)
    finally:
        client.close()


def test_anthropic_one_hour_cache_writes_and_web_searches(provider: CannedProvider) -> None:
    message = create_message(
        provider,
        ANTHROPIC_CACHE_AND_SEARCH,
        model="claude-sonnet-4-5-20250929",
        max_tokens=512,
        tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
    )

    request = provider.calls[0]
    assert request.json["model"] == "claude-sonnet-4-5-20250929"
    assert "test" in (request.headers.get("x-api-key"), request.headers.get("authorization", "")[len("Bearer ") :])
    assert valid(from_anthropic(message, feature="qa", metadata={"route": "eu"})) == {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5-20250929",
        "prompt_tokens": 1200,  # excludes cache reads and writes
        "completion_tokens": 500,
        "cached_input_tokens": 10000,
        "cache_write_tokens": 3000,
        "feature": "qa",
        "metadata": {
            "service_tier": "priority",
            "cache_write_1h_tokens": 2000,
            "cache_write_5m_tokens": 1000,
            "web_searches": 3,  # web_fetch_requests is not billed per request: not passed
            "route": "eu",  # the caller's own
        },
    }


def test_anthropic_fast_mode(provider: CannedProvider) -> None:
    body = anthropic_message(
        "claude-opus-4-6",
        {"input_tokens": 40, "output_tokens": 900, "service_tier": "standard", "speed": "fast"},
    )
    message = create_message(provider, body, model="claude-opus-4-6", max_tokens=1024, extra_body={"speed": "fast"})

    assert provider.calls[0].json["speed"] == "fast"
    assert valid(from_anthropic(message)) == {
        "provider": "anthropic",
        "model": "claude-opus-4-6",
        "prompt_tokens": 40,
        "completion_tokens": 900,
        "metadata": {"service_tier": "standard", "speed": "fast"},
    }


def test_anthropic_message_batch_results_are_marked_as_batch(provider: CannedProvider) -> None:
    """Message Batches results report ``usage.service_tier: "batch"``, priced as batch."""
    batch_message = anthropic_message(
        "claude-haiku-4-5-20251001",
        {
            "input_tokens": 800,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 120,
            "service_tier": "batch",
        },
    )

    def batch(url: str) -> Canned:
        return Canned(
            body={
                "id": "msgbatch_01",
                "type": "message_batch",
                "processing_status": "ended",
                "request_counts": {"processing": 0, "succeeded": 1, "errored": 0, "canceled": 0, "expired": 0},
                "created_at": "2026-11-22T09:00:00Z",
                "ended_at": "2026-11-22T09:30:00Z",
                "expires_at": "2026-11-23T09:00:00Z",
                "archived_at": None,
                "cancel_initiated_at": None,
                "results_url": f"{url}/v1/messages/batches/msgbatch_01/results",
            }
        )

    result = {"custom_id": "request-1", "result": {"type": "succeeded", "message": batch_message}}
    provider.route("GET", "/v1/messages/batches/msgbatch_01", batch)
    provider.route(
        "GET",
        "/v1/messages/batches/msgbatch_01/results",
        Canned(body=json.dumps(result) + "\n", content_type="application/binary"),
    )
    client = anthropic_client(provider)
    results = list(client.messages.batches.results("msgbatch_01"))
    client.close()

    assert [r.custom_id for r in results] == ["request-1"]
    assert valid(from_anthropic(results[0].result.message)) == {
        "provider": "anthropic",
        "model": "claude-haiku-4-5-20251001",
        "prompt_tokens": 800,
        "completion_tokens": 120,
        "cached_input_tokens": 0,
        "cache_write_tokens": 0,
        "metadata": {"service_tier": "batch", "processing": "batch"},
    }


# -- Gemini ----------------------------------------------------------------------------------


def generate_content(
    provider: CannedProvider, model: str, reply: Dict[str, Any], service_tier: str, contents: str
) -> Any:
    """The response the official client makes of ``reply``, the canned answer to its
    generateContent call for ``model``, with the tier in a header as Gemini sends it."""
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    headers = {"x-gemini-service-tier": service_tier}
    provider.route("POST", f"/v1beta/models/{model}:generateContent", Canned(body=reply, headers=headers))
    options = types.HttpOptions(base_url=provider.url, api_version="v1beta", timeout=10_000)
    client = genai.Client(api_key="test", http_options=options)
    return client.models.generate_content(model=model, contents=contents)


GEMINI_AUDIO = gemini_response(
    "gemini-2.5-flash",
    {
        "promptTokenCount": 2000,
        "candidatesTokenCount": 400,
        "totalTokenCount": 2700,
        "cachedContentTokenCount": 1000,
        "thoughtsTokenCount": 300,
        "promptTokensDetails": token_details("tokenCount", TEXT=800, AUDIO=1200),
        "cacheTokensDetails": token_details("tokenCount", TEXT=200, AUDIO=800),
        "candidatesTokensDetails": token_details("tokenCount", TEXT=400),
    },
)

GEMINI_AUDIO_EVENT = {
    "provider": "google",
    "model": "gemini-2.5-flash",
    "prompt_tokens": 2000,  # includes the cached 1000
    "completion_tokens": 400,
    "reasoning_tokens": 300,  # thoughts are not part of the candidates count
    "total_tokens": 2700,
    "cached_input_tokens": 1000,
}

GEMINI_IMAGES = gemini_response(
    "gemini-2.5-flash-image",
    {
        "promptTokenCount": 794,
        "candidatesTokenCount": 1290,
        "totalTokenCount": 2084,
        "promptTokensDetails": token_details("tokenCount", TEXT=20, IMAGE=258, DOCUMENT=516),
        "candidatesTokensDetails": token_details("tokenCount", IMAGE=1290),
    },
)


def test_gemini_audio_on_the_flex_tier(provider: CannedProvider) -> None:
    response = generate_content(provider, "gemini-2.5-flash", GEMINI_AUDIO, "flex", "Transcribe and answer.")

    assert provider.calls[0].headers["x-goog-api-key"] == "test"
    expected_metadata = {"input_audio_tokens": 1200, "cache_audio_read_tokens": 800}
    assert valid(from_gemini(response)) == {
        **GEMINI_AUDIO_EVENT,
        "metadata": {"service_tier": "flex", **expected_metadata},
    }
    # The REST JSON itself (camelCase) gives the same counts; the tier is a header, not in it.
    assert valid(from_gemini(GEMINI_AUDIO)) == {**GEMINI_AUDIO_EVENT, "metadata": expected_metadata}


def test_gemini_images_in_and_out(provider: CannedProvider) -> None:
    response = generate_content(provider, "gemini-2.5-flash-image", GEMINI_IMAGES, "standard", "Draw the Eiffel tower.")

    assert valid(from_gemini(response, processing="batch")) == {
        "provider": "google",
        "model": "gemini-2.5-flash-image",
        "prompt_tokens": 794,
        "completion_tokens": 1290,
        "total_tokens": 2084,
        "metadata": {
            "service_tier": "standard",
            "input_image_tokens": 774,  # IMAGE 258 + DOCUMENT 516, as genai-prices counts them
            "output_image_tokens": 1290,
            "processing": "batch",
        },
    }


# -- Amazon Bedrock --------------------------------------------------------------------------

BEDROCK_MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

BEDROCK_CONVERSE = converse_response(
    1000,
    500,
    cache_read=10000,
    cache_write=5000,
    cache_details=[{"ttl": "1h", "inputTokens": 3000}, {"ttl": "5m", "inputTokens": 2000}],
    service_tier="priority",
)


def test_bedrock_converse_with_one_hour_cache_writes(provider: CannedProvider) -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config

    provider.route(
        "POST",
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse",
        Canned(body=BEDROCK_CONVERSE, headers={"x-amzn-RequestId": "0e4c8a3e-1b7e-4b8e-9a55-6b1f5e0f2a11"}),
    )
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=provider.url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"total_max_attempts": 1}),
    )
    shape = client.meta.service_model.shape_for("TokenUsage")
    if "cacheDetails" not in shape.members:  # botocore older than the TTL breakdown drops it
        pytest.skip("this botocore does not model TokenUsage.cacheDetails")
    response = client.converse(
        modelId=BEDROCK_MODEL_ID, messages=[{"role": "user", "content": [{"text": "Capital of France?"}]}]
    )

    assert provider.calls[0].headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=test/")
    assert valid(from_bedrock_converse(response, model_id=BEDROCK_MODEL_ID, feature="qa")) == {
        "provider": "bedrock",
        "model": BEDROCK_MODEL_ID,  # the regional profile as called: priced apart from global
        "prompt_tokens": 1000,
        "completion_tokens": 500,
        "total_tokens": 16500,
        "cached_input_tokens": 10000,
        "cache_write_tokens": 5000,
        "latency_ms": 850,
        "feature": "qa",
        "metadata": {"service_tier": "priority", "cache_write_1h_tokens": 3000, "cache_write_5m_tokens": 2000},
    }


# OpenRouter's chat completion (its API reference: usage accounting is always on): ``usage.cost``
# is what the call cost in credits (USD), a JSON number; ``cost_details`` and ``is_byok`` beside it.
OPENROUTER_TEXT = """{"id": "gen-1763800000-abc", "object": "chat.completion", "created": 1763800000,
 "model": "openai/gpt-4o-mini", "provider": "OpenAI",
 "choices": [{"index": 0, "finish_reason": "stop", "native_finish_reason": "stop",
              "message": {"role": "assistant", "content": "Paris.", "refusal": null}}],
 "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240, "cost": %s, "is_byok": false,
           "prompt_tokens_details": {"cached_tokens": 1024}, "cost_details": {"upstream_inference_cost": null},
           "completion_tokens_details": {"reasoning_tokens": 0}}}"""


@pytest.mark.parametrize(
    ("cost", "reported"),
    [("0.000123456", "0.000123456"), ("7.65e-06", "0.00000765"), ("0", "0"), ("12", "12"), ("-1", None)],
)
def test_openrouter_reported_cost_travels_as_metadata(provider: CannedProvider, cost: str, reported: Any) -> None:
    """``usage.cost`` from the official client's ``ChatCompletion`` (an extra field it keeps) →
    ``metadata.reported_cost``, a plain decimal string; a negative figure is not a cost."""
    provider.route("POST", "/api/v1/chat/completions", Canned(body=OPENROUTER_TEXT % cost))
    client = openai_client(provider, "/api/v1")
    completion = client.chat.completions.create(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "x"}])
    event = valid(from_openai(completion, provider="openrouter", metadata={"team": "search"}))
    assert event["model"] == "openai/gpt-4o-mini" and event["cached_input_tokens"] == 1024
    expected = {"team": "search"}
    if reported is not None:
        expected["reported_cost"] = reported
    assert event["metadata"] == expected
    # The caller's own key wins, as for every figure a helper reads.
    assert from_openai(completion, provider="openrouter", metadata={"reported_cost": "1"})["metadata"] == {
        "reported_cost": "1"
    }
