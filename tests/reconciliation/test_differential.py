"""The issue's differential test: a month of synthetic traffic, a known share of it untracked
and one model mispriced; the reconciliation recovers untracked USD and drifted USD to the cent
and flags nothing else."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache

from costtrack_service import catalogue
from costtrack_service.catalogue import reconciliation_view as catalogue_view
from costtrack_service.domain.pricing.cost import counts_of
from costtrack_service.domain.pricing.pricer import Call, Pricer
from costtrack_service.domain.reconciliation.bill import Lines
from costtrack_service.domain.reconciliation.reconcile import Tracked, reconcile, totals

CENT = Decimal("0.01")
#: (provider, name the events use, name the bill uses, the provider's true rates per 1M: input, output)
MODELS = [
    ("openai", "gpt-4o-mini", "gpt-4o-mini-2024-07-18", (Decimal("0.15"), Decimal("0.6"))),
    ("openai", "gpt-4.1", "gpt-4.1-2025-04-14", (Decimal("2.5"), Decimal("9"))),  # catalogue: 2 / 8
    ("anthropic", "claude-haiku-4-5", "claude-haiku-4-5-20251001", (Decimal("1"), Decimal("5"))),
]
MISPRICED = ("openai", "gpt-4.1")
UNTRACKED_EVERY = 7  # one call in seven bypasses costtrack


@cache
def pricer() -> Pricer:
    return Pricer(cache(catalogue.book), catalogue.registry(), catalogue.flags_for)


def month() -> tuple[Lines, dict[tuple[str, str, str], Tracked], Decimal, Decimal]:
    rng = random.Random(32)
    lines = Lines()
    tracked: dict[tuple[str, str, str], Tracked] = {}
    untracked_usd = drift_usd = Decimal(0)
    for offset in range(30):
        day = (date(2026, 10, 1) + timedelta(days=offset)).isoformat()
        at = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
        for provider, name, billed_name, (rate_in, rate_out) in MODELS:
            line = lines.line(day, provider, billed_name)
            sums = [0, 0, Decimal(0), 0]
            for call in range(rng.randint(20, 60)):
                prompt, completion = rng.randint(50, 40_000), rng.randint(10, 4_000)
                true_cost = (prompt * rate_in + completion * rate_out) / 1_000_000
                line.add_tokens("input", prompt)
                line.add_tokens("output", completion)
                line.add_usd("input", prompt * rate_in / 1_000_000)
                line.add_usd("output", completion * rate_out / 1_000_000)
                line.requests += 1
                if call % UNTRACKED_EVERY == 0:
                    untracked_usd += true_cost
                    continue
                priced = pricer().price(Call(provider, name, counts_of(prompt, completion, 0, 0, 0, None), None), at)
                assert priced.priced
                sums[0] += prompt
                sums[1] += completion
                sums[2] += priced.cost
                sums[3] += 1
                if (provider, name) == MISPRICED:
                    drift_usd += true_cost - priced.cost
            tracked[(day, provider, name)] = Tracked(int(sums[0]), int(sums[1]), Decimal(sums[2]), int(sums[3]))
    return lines, tracked, untracked_usd, drift_usd


def test_a_month_with_untracked_calls_and_a_mispriced_model_is_classified_exactly() -> None:
    lines, tracked, untracked_usd, drift_usd = month()
    findings = reconcile(
        lines.sorted(), tracked, catalogue_view.resolve, catalogue_view.includes_cached, catalogue_view.rates
    )
    assert len(findings) == 30 * len(MODELS)  # the bill's dated names met the events' aliases
    summary = totals(findings)
    assert summary["untracked_usd"] == str(untracked_usd.quantize(CENT))
    assert summary["price_drift_usd"] == str(drift_usd.quantize(CENT))
    assert drift_usd > 1 and untracked_usd > 1
    assert (summary["timing_usd"], summary["unbilled_usd"]) == ("0.00", "0.00")
    for finding in findings:
        assert "untracked" in finding.classes  # every day has its untracked calls
        drifted = (finding.provider, finding.model) == ("openai", "gpt-4.1")
        assert ("price_drift" in finding.classes) is drifted, finding.to_dict()
        assert set(finding.classes) <= {"untracked", "price_drift"}
        if drifted:
            assert finding.entry is not None and finding.entry.startswith("openai/gpt-4.1")
            assert finding.applied_rates == {
                "input_mtok": Decimal("2"),
                "cache_read_mtok": Decimal("0.5"),
                "output_mtok": Decimal("8"),
            }
            assert finding.implied_rates == {"input_mtok": Decimal("2.5"), "output_mtok": Decimal("9")}
    assert summary["worst_models"][0]["model"] == "gpt-4.1"


def test_a_day_counted_on_the_next_day_is_timing_and_a_model_never_billed_is_unbilled() -> None:
    lines = Lines()
    for day, prompt in (("2026-10-01", 1000), ("2026-10-02", 3000)):
        line = lines.line(day, "openai", "gpt-4o-mini-2024-07-18")
        line.add_tokens("input", prompt)
        line.add_tokens("output", 100)
        line.add_usd("input", prompt * Decimal("0.15") / 1_000_000)
        line.add_usd("output", 100 * Decimal("0.6") / 1_000_000)
    tracked = {
        ("2026-10-01", "openai", "gpt-4o-mini"): Tracked(2000, 100, Decimal("0.00036"), 2),
        ("2026-10-02", "openai", "gpt-4o-mini"): Tracked(2000, 100, Decimal("0.00036"), 2),
        ("2026-10-02", "openai", "gpt-5-nano"): Tracked(500, 50, Decimal("0.000045"), 1),
    }
    findings = reconcile(
        lines.sorted(), tracked, catalogue_view.resolve, catalogue_view.includes_cached, catalogue_view.rates
    )
    classes = {(f.day, f.model): f.classes for f in findings}
    assert classes == {
        ("2026-10-01", "gpt-4o-mini"): ["timing"],
        ("2026-10-02", "gpt-4o-mini"): ["timing"],
        ("2026-10-02", "gpt-5-nano"): ["unbilled"],
    }
    assert totals(findings)["unbilled_usd"] == "0.00"  # 0.000045 USD, under a cent
