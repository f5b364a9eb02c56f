"""Billed against tracked, per day × provider × model, every gap classified, so an owner sees
why the bill and costtrack differ (docs/guides/reconciliation.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal, get_args

from costtrack_service.domain.reconciliation.bill import INPUT_KINDS, BilledLine

CENT = Decimal("0.01")
MILLION = Decimal(1_000_000)
#: The bill's kinds → the catalogue's price keys (USD per 1M tokens).
PRICE_KEYS = {
    "input": "input_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write_5m": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
    "output": "output_mtok",
}
#: What a bill's difference from the tracked cost is put down to.
DriftClass = Literal["untracked", "price_drift", "timing", "unbilled"]
CLASSES: tuple[DriftClass, ...] = get_args(DriftClass)


@dataclass(frozen=True)
class Tracked:
    """A day's model rollup: prompt and completion tokens as reported, and the tracked USD."""

    input_tokens: int = 0
    output_tokens: int = 0
    usd: Decimal = Decimal(0)
    events: int = 0


@dataclass(frozen=True)
class Settings:
    token_tolerance: Decimal = Decimal("0.001")  # a share of the billed tokens
    usd_tolerance: Decimal = CENT


#: (provider, model, day) → (catalogue entry id, {price key: USD per 1M}) or None.
RatesLookup = Callable[[str, str, str], tuple[str, dict[str, Decimal]] | None]


@dataclass
class Finding:
    day: str
    provider: str
    model: str
    billed_input: int = 0
    billed_output: int = 0
    tracked_input: int = 0
    tracked_output: int = 0
    billed_usd: Decimal = Decimal(0)
    tracked_usd: Decimal = Decimal(0)
    untracked_usd: Decimal = Decimal(0)
    drift_usd: Decimal = Decimal(0)
    classes: list[str] = field(default_factory=list)
    entry: str | None = None
    applied_rates: dict[str, Decimal] = field(default_factory=dict)
    implied_rates: dict[str, Decimal] = field(default_factory=dict)

    @property
    def gap_usd(self) -> Decimal:
        return self.billed_usd - self.tracked_usd

    def to_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "provider": self.provider,
            "model": self.model,
            "classes": list(self.classes),
            "billed": {
                "input_tokens": self.billed_input,
                "output_tokens": self.billed_output,
                "usd": money(self.billed_usd),
            },
            "tracked": {
                "input_tokens": self.tracked_input,
                "output_tokens": self.tracked_output,
                "usd": money(self.tracked_usd),
            },
            "gap_usd": money(self.gap_usd),
            "untracked_usd": money(self.untracked_usd),
            "drift_usd": money(self.drift_usd),
            "entry": self.entry,
            "applied_rates": {key: str(rate.normalize()) for key, rate in self.applied_rates.items()},
            "implied_rates": {key: str(rate.normalize()) for key, rate in self.implied_rates.items()},
        }


def money(value: Decimal) -> str:
    return format(value.quantize(Decimal("0.000001")).normalize(), "f")


def cents(value: Decimal) -> str:
    return str(value.quantize(CENT))


def billed_input(line: BilledLine, includes_cached: bool) -> int:
    return sum(line.tokens.get(kind, 0) for kind in INPUT_KINDS) if includes_cached else line.tokens.get("input", 0)


def _close(billed: int, tracked: int, settings: Settings) -> bool:
    return abs(billed - tracked) <= settings.token_tolerance * max(billed, tracked, 1)


def _token_usd(line: BilledLine) -> tuple[Decimal, Decimal]:
    """The bill's USD for input kinds and for output (``other`` line items left out)."""
    return sum((line.usd.get(kind, Decimal(0)) for kind in INPUT_KINDS), Decimal(0)), line.usd.get("output", Decimal(0))


def implied(line: BilledLine) -> dict[str, Decimal]:
    return {
        PRICE_KEYS[kind]: (usd * MILLION / line.tokens[kind]).quantize(Decimal("0.000001"))
        for kind, usd in line.usd.items()
        if kind in PRICE_KEYS and line.tokens.get(kind)
    }


def compare(
    line: BilledLine | None,
    tracked: Tracked | None,
    includes_cached: bool,
    settings: Settings,
) -> Finding:
    """One day × model, before the timing pass.

    * ``untracked``: the bill has more tokens than costtrack saw (calls that bypass costtrack).
      Their USD is the bill's own USD for the share of each kind's tokens costtrack did not see.
    * ``price_drift``: what remains once untracked usage is taken out: tokens agree, USD does not.
      The finding names the catalogue entry, the rates it applied and the rates the bill implies.
    * ``timing``: a day with more tracked than billed next to one with more billed than tracked,
      whose two-day sums agree (an event counted on the provider's other day).
    * ``unbilled``: tracked and not billed (a free tier, a wrong provider name, another account).

    Tracked figures come from the daily model rollups (their ``input_tokens`` are prompt tokens as
    clients reported them: with cached input for OpenAI-style providers, without for Anthropic
    and Bedrock, so the billed side is summed the same way).
    """
    assert line is not None or tracked is not None
    day, provider, model = line.key if line is not None else ("", "", "")
    finding = Finding(day, provider, model)
    tracked = tracked or Tracked()
    finding.tracked_input, finding.tracked_output, finding.tracked_usd = (
        tracked.input_tokens,
        tracked.output_tokens,
        tracked.usd,
    )
    if line is None:
        finding.classes.append("unbilled")
        return finding
    finding.billed_input, finding.billed_output = billed_input(line, includes_cached), line.tokens.get("output", 0)
    usd_in, usd_out = _token_usd(line)
    finding.billed_usd = usd_in + usd_out
    d_in = finding.billed_input - finding.tracked_input
    d_out = finding.billed_output - finding.tracked_output
    agree_in = _close(finding.billed_input, finding.tracked_input, settings)
    agree_out = _close(finding.billed_output, finding.tracked_output, settings)
    if (not agree_in and d_in < 0) or (not agree_out and d_out < 0):
        finding.classes.append("unbilled")  # more tracked than billed: the timing pass may explain it
        return finding
    if not agree_in:
        finding.untracked_usd += usd_in * d_in / finding.billed_input
    if not agree_out:
        finding.untracked_usd += usd_out * d_out / finding.billed_output
    if finding.untracked_usd:
        finding.classes.append("untracked")
    drift = finding.billed_usd - finding.untracked_usd - finding.tracked_usd
    if abs(drift) > settings.usd_tolerance:
        finding.drift_usd = drift
        finding.classes.append("price_drift")
        finding.implied_rates = implied(line)
    return finding


def _next_day(day: str) -> str:
    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def _timing_pass(findings: dict[tuple[str, str, str], Finding], settings: Settings) -> None:
    for (day, provider, model), finding in sorted(findings.items()):
        neighbour = findings.get((_next_day(day), provider, model))
        if neighbour is None or "timing" in finding.classes or not finding.classes or not neighbour.classes:
            continue
        pair = (finding, neighbour)
        billed = (sum(f.billed_input for f in pair), sum(f.billed_output for f in pair))
        tracked = (sum(f.tracked_input for f in pair), sum(f.tracked_output for f in pair))
        if any("unbilled" in f.classes for f in pair) and all(
            _close(b, t, settings) for b, t in zip(billed, tracked, strict=True)
        ):
            for f in pair:
                f.classes, f.untracked_usd, f.drift_usd, f.implied_rates = ["timing"], Decimal(0), Decimal(0), {}


def reconcile(
    billed: Iterable[BilledLine],
    tracked: Mapping[tuple[str, str, str], Tracked],
    resolve: Callable[[str, str], str],
    includes_cached: Callable[[str], bool],
    rates: RatesLookup,
    settings: Settings = Settings(),
) -> list[Finding]:
    """Findings for every day × provider × model either side has, in key order. ``resolve``
    maps a provider's model name to the catalogue's model (both sides go through it, so a
    dated name on the bill meets the alias the events used)."""
    lines: dict[tuple[str, str, str], BilledLine] = {}
    for line in billed:
        key = (line.day, line.provider, resolve(line.provider, line.model))
        if key in lines:
            merged = lines[key]
            for kind, count in line.tokens.items():
                merged.add_tokens(kind, count)
            for kind, usd in line.usd.items():
                merged.add_usd(kind, usd)
            merged.requests += line.requests
        else:
            lines[key] = BilledLine(key[0], key[1], key[2], dict(line.tokens), dict(line.usd), line.requests)
    sums: dict[tuple[str, str, str], Tracked] = {}
    for (day, provider, name), counts in tracked.items():
        key = (day, provider, resolve(provider, name))
        was = sums.get(key, Tracked())
        sums[key] = Tracked(
            was.input_tokens + counts.input_tokens,
            was.output_tokens + counts.output_tokens,
            was.usd + counts.usd,
            was.events + counts.events,
        )
    findings: dict[tuple[str, str, str], Finding] = {}
    for key in sorted(lines.keys() | sums.keys()):
        finding = compare(lines.get(key), sums.get(key), includes_cached(key[1]), settings)
        finding.day, finding.provider, finding.model = key
        findings[key] = finding
    _timing_pass(findings, settings)
    for finding in findings.values():
        if "price_drift" in finding.classes:
            found = rates(finding.provider, finding.model, finding.day)
            if found is not None:
                finding.entry, finding.applied_rates = found[0], dict(found[1])
    return list(findings.values())


def totals(findings: Iterable[Finding]) -> dict[str, Any]:
    """Billed, tracked and the gap by class, in USD (to the cent), and the worst models."""
    billed = tracked = untracked = drift = timing = unbilled = Decimal(0)
    by_model: dict[tuple[str, str], Decimal] = {}
    for finding in findings:
        billed += finding.billed_usd
        tracked += finding.tracked_usd
        untracked += finding.untracked_usd
        drift += finding.drift_usd
        if "timing" in finding.classes:
            timing += finding.gap_usd
        if "unbilled" in finding.classes:
            unbilled += finding.tracked_usd - finding.billed_usd
        model = (finding.provider, finding.model)
        by_model[model] = by_model.get(model, Decimal(0)) + abs(finding.gap_usd)
    worst = sorted(by_model.items(), key=lambda item: (-item[1], item[0]))[:5]
    return {
        "billed_usd": cents(billed),
        "tracked_usd": cents(tracked),
        "untracked_usd": cents(untracked),
        "price_drift_usd": cents(drift),
        "timing_usd": cents(timing),
        "unbilled_usd": cents(unbilled),
        "worst_models": [{"provider": p, "model": m, "gap_usd": cents(g)} for (p, m), g in worst if g],
    }
