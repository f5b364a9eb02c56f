"""The importers against canned providers on 127.0.0.1 (OpenAI, Anthropic) and moto's Cost
Explorer (Bedrock): pagination, 429 + retry-after, Decimal amounts from the raw text, cents,
the usage-type table, raw pages kept, keys never in an error."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from decimal import Decimal

import boto3
import pytest
from moto import mock_aws
from moto.ce.models import ce_backends
from moto.core import DEFAULT_ACCOUNT_ID

from costtrack_service.domain.reconciliation.bedrock_usage import parse_usage_type
from costtrack_service.jobs.bills import anthropic, bedrock, openai
from costtrack_service.jobs.bills.admin_pages import Api, ImportFailed
from tests.reconciliation.canned_billing import ANTHROPIC_KEY, OPENAI_KEY, Bill, serve

FIRST, LAST = date(2026, 11, 1), date(2026, 11, 3)
#: More digits than a float keeps: read through a float it would not be this Decimal.
LONG_AMOUNT = "0.12345678901234567891"


@pytest.fixture
def bill() -> Bill:
    bill = Bill()
    for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
        bill.openai[day] = {
            "gpt-4o-mini-2024-07-18": {
                "input": 1_000_000,
                "cached": 200_000,
                "output": 100_000,
                "requests": 40,
                "usd": {"input": "0.15", "cached input": "0.015", "output": LONG_AMOUNT},
            }
        }
        bill.anthropic[day] = {
            "claude-sonnet-4-5-20250929": {
                "input": 1_000_000,
                "write_5m": 10_000,
                "write_1h": 5_000,
                "cache_read": 300_000,
                "output": 50_000,
                "cents": {
                    "uncached_input_tokens": "300",
                    "output_tokens": "75.0000001",
                    "cache_read_input_tokens": "9",
                },
            }
        }
    return bill


@pytest.fixture
def base_url(bill: Bill) -> Iterator[str]:
    with serve(bill) as url:
        yield url


def test_openai_usage_and_costs_are_read_page_by_page_after_a_429(bill: Bill, base_url: str) -> None:
    lines, fetched = openai.import_days(Api(base_url), OPENAI_KEY, FIRST, LAST)
    days = lines.sorted()
    assert [line.day for line in days] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    line = days[0]
    assert line.model == "gpt-4o-mini-2024-07-18"
    assert line.tokens == {"input": 1_000_000, "cache_read": 200_000, "output": 100_000}  # cached split out
    assert line.requests == 40
    assert line.usd == {"input": Decimal("0.15"), "cache_read": Decimal("0.015"), "output": Decimal(LONG_AMOUNT)}
    assert line.usd["output"] != Decimal(float(LONG_AMOUNT))
    # one day per page, two lists, and each path's first request answered 429 then retried
    assert len(fetched.pages) == 6
    assert bill.requests.count("/v1/organization/usage/completions") == 4
    assert all(("bucket_width", "1d") in page.params for page in fetched.pages)


def test_anthropic_usage_and_cost_report_amounts_are_cents(base_url: str) -> None:
    lines, fetched = anthropic.import_days(Api(base_url), ANTHROPIC_KEY, FIRST, LAST)
    line = lines.sorted()[0]
    assert line.tokens == {
        "input": 1_000_000,
        "cache_read": 300_000,
        "cache_write_5m": 10_000,
        "cache_write_1h": 5_000,
        "output": 50_000,
    }
    assert line.usd == {"input": Decimal("3"), "output": Decimal("0.750000001"), "cache_read": Decimal("0.09")}
    assert len(fetched.pages) == 6


def test_a_wrong_key_fails_the_import_without_quoting_the_key(base_url: str) -> None:
    with pytest.raises(ImportFailed) as raised:
        openai.import_days(Api(base_url), "sk-admin-wrong-secret", FIRST, LAST)
    assert "401" in str(raised.value) and "sk-admin" not in str(raised.value)


def test_only_https_or_loopback() -> None:
    with pytest.raises(ValueError, match="https"):
        Api("http://api.openai.com")
    Api("https://api.openai.com")


@pytest.mark.parametrize(
    ("usage_type", "expected"),
    [
        ("USE1-Claude4.6Sonnet-input-tokens", ("regional.anthropic.claude-sonnet-4-6-v1:0", "input")),
        (
            "USE1-Claude4.6Sonnet-cache-read-input-token-count-cross-region-global",
            ("global.anthropic.claude-sonnet-4-6-v1:0", "cache_read"),
        ),
        (
            "USW2-Claude4.5Haiku-output-tokens-flex",
            ("regional.anthropic.claude-haiku-4-5-20251001-v1:0@flex", "output"),
        ),
        ("MP:USE1-Claude4.5Sonnet-output-tokens", ("regional.anthropic.claude-sonnet-4-5-20250929-v1:0", "output")),
        ("USE1-NovaPro-input-tokens", ("amazon.nova-pro-v1:0", "input")),
        ("USE1-SomeNewModel-input-tokens", ("SomeNewModel", "input")),
        ("USE1-ModelInvocation-Guardrail", ("USE1-ModelInvocation-Guardrail", "other")),
    ],
)
def test_bedrock_usage_types_map_to_catalogue_ids(usage_type: str, expected: tuple[str, str]) -> None:
    assert parse_usage_type(usage_type) == expected


def test_every_billing_name_maps_to_a_catalogue_model() -> None:
    from costtrack_service import catalogue
    from costtrack_service.domain.reconciliation.bedrock_usage import BILLING_NAMES

    models = catalogue.book("bedrock").by_model
    assert all(model in models for pair in BILLING_NAMES.values() for model in pair)


def _group(usage_type: str, usd: str, quantity: str) -> dict[str, object]:
    return {
        "Keys": [usage_type],
        "Metrics": {
            "UnblendedCost": {"Amount": usd, "Unit": "USD"},
            "UsageQuantity": {"Amount": quantity, "Unit": "N/A"},
        },
    }


@mock_aws
def test_bedrock_reads_cost_explorer_grouped_by_usage_type(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    ce = boto3.client("ce", region_name="us-east-1")
    pages = [
        {
            "ResultsByTime": [
                {
                    "TimePeriod": {"Start": "2026-11-01", "End": "2026-11-02"},
                    "Groups": [
                        _group("USE1-Claude4.5Sonnet-input-tokens", "3.3", "1000000"),
                        _group("USE1-Claude4.5Sonnet-output-tokens", "1.65", "100000"),
                    ],
                    "Estimated": True,
                }
            ],
            "NextPageToken": "next",
        },
        {
            "ResultsByTime": [
                {
                    "TimePeriod": {"Start": "2026-11-02", "End": "2026-11-03"},
                    "Groups": [_group("USE1-NovaPro-input-tokens-cross-region-global", "0.8", "1000000")],
                    "Estimated": True,
                }
            ]
        },
    ]
    backend = ce_backends[DEFAULT_ACCOUNT_ID]["global"]
    backend.cost_usage_results_queue.extend(pages)
    lines, fetched = bedrock.import_days(ce, date(2026, 11, 1), date(2026, 11, 2))
    found = {line.key: line for line in lines.sorted()}
    sonnet = found[("2026-11-01", "bedrock", "regional.anthropic.claude-sonnet-4-5-20250929-v1:0")]
    assert sonnet.tokens == {"input": 1_000_000, "output": 100_000}
    assert sonnet.usd == {"input": Decimal("3.3"), "output": Decimal("1.65")}
    assert found[("2026-11-02", "bedrock", "amazon.nova-pro-v1:0")].usd == {"input": Decimal("0.8")}
    assert len(fetched.pages) == 2
