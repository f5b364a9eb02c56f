"""From a span to a usage event: token semantics and precedence, providers, attributes, the
workspace's attribute map, and which spans are not model calls. Pure: no HTTP, no store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from costtrack_service.domain.otlp.spans import (
    SpanData,
    parse_attribute_map,
    provider_of,
    span_event,
    span_item,
)
from costtrack_service.domain.otlp.tokens import TOKEN_ATTRIBUTES, SpanTokens, read_tokens
from costtrack_service.domain.pricing.cost import ReportingFlags

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
START = 1_795_428_000_000_000_000


def span(attributes: dict[str, Any], resource: dict[str, Any] | None = None, **fields: Any) -> SpanData:
    return SpanData(
        trace_id=fields.pop("trace_id", TRACE),
        span_id=fields.pop("span_id", SPAN),
        start_ns=START,
        end_ns=START + 1_250_000_000,
        attributes=attributes,
        resource=resource or {},
        **fields,
    )


def event_of(attributes: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    item = span_item(span(attributes), **kwargs)
    assert item is not None and item.event is not None, item
    return item.event.fields


OPENAI = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-5"}
ANTHROPIC = {"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5"}
GEMINI = {"gen_ai.provider.name": "gcp.gemini", "gen_ai.request.model": "gemini-2.5-pro"}


def test_semantic_conventions_openai_span_is_the_contract_vector() -> None:
    event = event_of(
        {
            **OPENAI,
            "gen_ai.response.model": "gpt-5-2025-08-07",
            "gen_ai.usage.input_tokens": 10_000,
            "gen_ai.usage.cache_read.input_tokens": 8_000,
            "gen_ai.usage.output_tokens": 3_000,
            "gen_ai.usage.reasoning.output_tokens": 2_000,
        }
    )
    assert event == {
        "provider": "openai",
        "model": "gpt-5-2025-08-07",  # the response model wins over the request model
        "prompt_tokens": 10_000,
        "cached_input_tokens": 8_000,
        "completion_tokens": 3_000,
        "reasoning_tokens": 2_000,
        "status": "success",
        "latency_ms": 1250,
        "trace_id": TRACE,  # the run (CONTRACT §11; test_otlp_runs.py)
    }


def test_anthropic_input_includes_cache_in_the_conventions_and_not_in_costtrack() -> None:
    event = event_of(
        {
            **ANTHROPIC,
            "gen_ai.usage.input_tokens": 13_000,
            "gen_ai.usage.cache_read.input_tokens": 10_000,
            "gen_ai.usage.cache_creation.input_tokens": 2_000,
            "gen_ai.usage.output_tokens": 500,
        }
    )
    assert (event["prompt_tokens"], event["cached_input_tokens"], event["cache_write_tokens"]) == (1000, 10_000, 2000)
    assert event["completion_tokens"] == 500


def test_a_source_that_reported_raw_uncached_input_is_read_as_such() -> None:
    # Input smaller than the cache counts it should contain: the provider's raw count.
    anthropic = event_of({**ANTHROPIC, "gen_ai.usage.input_tokens": 100, "gen_ai.usage.cache_read_input_tokens": 5000})
    assert (anthropic["prompt_tokens"], anthropic["cached_input_tokens"]) == (100, 5000)
    openai = event_of({**OPENAI, "gen_ai.usage.input_tokens": 100, "gen_ai.usage.cache_read.input_tokens": 5000})
    assert (openai["prompt_tokens"], openai["cached_input_tokens"]) == (5100, 5000)


def test_gemini_completion_excludes_reasoning_in_costtrack() -> None:
    event = event_of({**GEMINI, "gen_ai.usage.output_tokens": 3000, "gen_ai.usage.reasoning.output_tokens": 2000})
    assert (event["provider"], event["completion_tokens"], event["reasoning_tokens"]) == ("google", 1000, 2000)
    raw = event_of({**GEMINI, "gen_ai.usage.output_tokens": 1000, "gen_ai.usage.reasoning.output_tokens": 2000})
    assert raw["completion_tokens"] == 1000


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        # The conventions win over every older spelling of the same count: one is charged.
        ({"gen_ai.usage.input_tokens": 10, "gen_ai.usage.prompt_tokens": 99, "ai.usage.promptTokens": 7}, 10),
        ({"gen_ai.usage.prompt_tokens": 99, "ai.usage.inputTokens": 7}, 99),
        ({"ai.usage.inputTokens": 7, "ai.usage.promptTokens": 5}, 7),
        ({"ai.usage.promptTokens": 5}, 5),
    ],
)
def test_one_spelling_of_each_count_is_taken(attributes: dict[str, Any], expected: int) -> None:
    assert event_of({**OPENAI, **attributes})["prompt_tokens"] == expected


def test_every_variant_of_every_count_is_read() -> None:
    for field, names in TOKEN_ATTRIBUTES.items():
        for name in names:
            tokens = read_tokens({name: 42})
            assert tokens is not None and getattr(tokens, field) == 42, name


def test_no_token_is_charged_twice_whatever_the_mix() -> None:
    """Every combination of spellings gives the counts of the first spelling of each."""
    flags = ReportingFlags(prompt_includes_cached=False)
    mixed = {
        "gen_ai.usage.prompt_tokens": 1300,
        "gen_ai.usage.input_tokens": 1300,
        "ai.usage.cachedInputTokens": 1000,
        "gen_ai.usage.cache_read_input_tokens": 1000,
        "gen_ai.usage.completion_tokens": 50,
        "ai.usage.outputTokens": 50,
    }
    tokens = read_tokens(mixed)
    assert tokens == SpanTokens(input=1300, output=50, cache_read=1000)
    assert tokens.event_fields(flags) == {"prompt_tokens": 300, "completion_tokens": 50, "cached_input_tokens": 1000}


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        ("openai", "openai"),
        ("anthropic", "anthropic"),
        ("Anthropic", "anthropic"),  # OpenLLMetry's spelling
        ("aws.bedrock", "bedrock"),
        ("gcp.gemini", "google"),
        ("gcp.vertex_ai", "google"),
        ("gcp.gen_ai", "google"),
        ("azure.ai.openai", "azure"),
        ("az.ai.openai", "azure"),
        ("mistral_ai", "mistral"),
        ("x_ai", "xai"),
        ("deepseek", "deepseek"),
        ("groq", "groq"),
        ("openai.chat", "openai"),  # Vercel AI SDK provider strings
        ("openai.responses", "openai"),
        ("google.vertex.chat", "google"),
        ("amazon-bedrock", "bedrock"),
        ("ibm.watsonx.ai", "ibm.watsonx.ai"),  # unknown: kept, unpriced
    ],
)
def test_provider_names(name: str, provider: str) -> None:
    assert provider_of(span({"gen_ai.provider.name": name})) == provider


def test_provider_name_wins_over_the_older_system_attribute() -> None:
    assert provider_of(span({"gen_ai.system": "openai", "gen_ai.provider.name": "azure.ai.openai"})) == "azure"
    assert provider_of(span({"gen_ai.system": "anthropic"})) == "anthropic"


def test_attributes_come_from_the_span_then_the_resource() -> None:
    item = span_item(
        span(
            {**OPENAI, "gen_ai.usage.input_tokens": 5, "costtrack.feature": "search", "costtrack.metadata.route": "/a"},
            {
                "costtrack.feature": "resource-feature",
                "costtrack.customer_id": 42,
                "deployment.environment.name": "staging",
                "costtrack.metadata.team": "core",
            },
        )
    )
    assert item is not None and item.event is not None
    fields = item.event.fields
    assert (fields["feature"], fields["customer_id"], fields["environment"]) == ("search", "42", "staging")
    assert fields["metadata"] == {"team": "core", "route": "/a"}


def test_the_workspace_map_is_read_before_the_defaults() -> None:
    mapping = parse_attribute_map({"feature": ["app.feature", "service.name"], "metadata.team": "team.name"})
    attributes = {**OPENAI, "gen_ai.usage.input_tokens": 5, "costtrack.feature": "default"}
    resource = {"service.name": "support-bot", "team.name": "core"}
    event = span_event(span(attributes, resource), read_tokens(attributes), mapping)  # type: ignore[arg-type]
    assert event["feature"] == "support-bot"
    assert event["metadata"] == {"team": "core"}
    unmapped = span_event(span(attributes, resource), read_tokens(attributes))  # type: ignore[arg-type]
    assert unmapped["feature"] == "default"


@pytest.mark.parametrize(
    "raw",
    [
        {"model": ["x"]},
        {"feature": []},
        {"feature": ["a"] * 6},
        {"feature": [""]},
        {"metadata.": ["a"]},
        {"metadata.a b": ["a"]},
        {f"metadata.m{n}": "a" for n in range(21)},
    ],
)
def test_a_bad_attribute_map_is_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message is checked where it is shown
        parse_attribute_map(raw)


def test_spans_without_usage_and_aggregate_spans_are_not_events() -> None:
    assert span_item(span({**OPENAI})) is None
    assert span_item(span({"http.method": "GET"})) is None
    usage = {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}
    assert span_item(span({**OPENAI, **usage, "gen_ai.operation.name": "invoke_agent"})) is None
    assert span_item(span({**OPENAI, **usage, "ai.operationId": "ai.generateText"})) is None
    assert span_item(span({**OPENAI, **usage, "ai.operationId": "ai.generateText.doGenerate"})) is not None
    assert span_item(span({**OPENAI, **usage, "gen_ai.operation.name": "chat"})) is not None


def test_status_key_cost_and_time() -> None:
    attributes = {**OPENAI, "gen_ai.usage.input_tokens": 5, "gen_ai.usage.cost": 0.25, "error.type": "TimeoutError"}
    item = span_item(span(attributes, status_code=2))
    assert item is not None and item.event is not None
    assert item.idempotency_key == f"otel-{TRACE}-{SPAN}"
    assert item.received_at is not None and item.received_at.timestamp() == pytest.approx(1_795_428_001.25)
    assert item.event.fields["status"] == "timeout"
    assert item.event.fields["metadata"] == {"reported_cost": "0.25"}
    failed = span_item(span({**OPENAI, "gen_ai.usage.input_tokens": 5}, status_code=2))
    assert failed is not None and failed.event is not None and failed.event.fields["status"] == "error"


@pytest.mark.parametrize(
    ("attributes", "field"),
    [
        ({**OPENAI, "gen_ai.usage.input_tokens": -1}, "gen_ai.usage.input_tokens"),
        ({**OPENAI, "gen_ai.usage.input_tokens": "12"}, "gen_ai.usage.input_tokens"),
        ({**OPENAI, "gen_ai.usage.output_tokens": 1.5}, "gen_ai.usage.output_tokens"),
        ({"gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 1}, "model"),
        ({"gen_ai.request.model": "gpt-5", "gen_ai.usage.input_tokens": 1}, "provider"),
        ({**OPENAI, "gen_ai.usage.input_tokens": 1, "costtrack.metadata.web_searches": -2}, "metadata.web_searches"),
    ],
)
def test_invalid_usage_rejects_the_span_naming_the_field(attributes: dict[str, Any], field: str) -> None:
    item = span_item(span(attributes))
    assert item is not None and item.error is not None and item.event is None
    assert item.error.code == "INVALID_PAYLOAD"
    assert field in {detail["field"] for detail in item.error.details}


def test_whole_number_doubles_are_counts() -> None:
    assert event_of({**OPENAI, "gen_ai.usage.input_tokens": 12.0})["prompt_tokens"] == 12


def test_bad_ids_reject_the_span() -> None:
    item = span_item(span({**OPENAI, "gen_ai.usage.input_tokens": 1}, trace_id="0" * 32))
    assert item is not None and item.error is not None and item.error.details[0]["field"] == "traceId"


def test_the_readme_token_table_is_the_precedence_the_code_uses() -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "opentelemetry.md").read_text(encoding="utf-8")
    table = readme.split("<!-- otlp-tokens -->")[1].split("<!-- /otlp-tokens -->")[0]
    rows = [line.split("|") for line in table.strip().splitlines()[2:]]
    documented: dict[str, list[str]] = {}
    for row in rows:
        documented.setdefault(row[3].strip(), []).append(row[1].strip().strip("`"))
    assert documented == {field: list(names) for field, names in TOKEN_ATTRIBUTES.items()}
