"""Usage totals (events, tokens, cost) by day and by feature, model, customer, environment or
status, read from daily rollups written with each event, so a report never reads a
workspace's history and always equals its accepted events (docs/guides/dashboard.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal, NamedTuple, Protocol, get_args

from costtrack_service.domain.ingest.records import EventRecord, PricingStatus
from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.invoices.invoice_rows import invoice_dimension, line_value
from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.pricing.reported import REPORTED, reported_cost
from costtrack_service.domain.workspaces.plans import Charge

NO_VALUE = "(none)"
TOTAL = "total"
HIDDEN = "hidden"
UNKNOWN_MODELS = "unknown_model"
CHARGE = "charge"
CUSTOMER = "customer"

#: What usage can be grouped by.
Grouping = Literal["feature", "model", "customer", "environment", "status", "day"]
GROUPINGS: tuple[Grouping, ...] = get_args(Grouping)

#: DynamoDB's limit for a sort key, in UTF-8 bytes.
MAX_SORT_KEY_BYTES = 1024
#: The longest value a rollup key holds as it is (the dimension and day take at most 25 bytes).
MAX_KEY_VALUE_BYTES = 512
#: How a hashed value starts in a key; a value that itself starts so is hashed too, so the two
#: kinds never meet.
HASHED_VALUE_PREFIX = "#sha256:"


def key_value(value: str) -> str:
    """``value`` as a rollup key holds it: itself when it is short enough, else its hash."""
    encoded = value.encode("utf-8", "surrogatepass")
    if len(encoded) <= MAX_KEY_VALUE_BYTES and not value.startswith(HASHED_VALUE_PREFIX):
        return value
    return HASHED_VALUE_PREFIX + hashlib.sha256(encoded).hexdigest()


class RollupKey(NamedTuple):
    """``dimension#day#value``: sorts by dimension, then day, so one query reads one dimension
    over a range of days. ``value`` is always the whole value; the key's text holds
    :func:`key_value` of it. (A named tuple: every accepted event hashes a dozen of these.)"""

    dimension: str
    day: str  # YYYY-MM-DD, UTC
    value: str = ""

    def __str__(self) -> str:
        return f"{self.dimension}#{self.day}#{key_value(self.value)}"

    @property
    def hashed(self) -> bool:
        """Whether the key's text holds a hash of the value (so the row must keep the value)."""
        return key_value(self.value) != self.value

    @classmethod
    def parse(cls, text: str, value: str | None = None) -> RollupKey:
        """The key of a stored row: its text, and the row's ``value`` attribute when it has one."""
        dimension, day, stored = text.split("#", 2)
        return cls(dimension, day, stored if value is None else value)

    @staticmethod
    def range(dimension: str, first_day: str, last_day: str) -> tuple[str, str]:
        """Inclusive bounds of every key of ``dimension`` from ``first_day`` to ``last_day``:
        ``$`` sorts right after ``#`` and before every other character."""
        return f"{dimension}#{first_day}#", f"{dimension}#{last_day}$"


@dataclass
class Counts:
    events: int = 0
    tokens: int = 0
    cost: Decimal = field(default_factory=Decimal)
    unknown_model_events: int = 0
    #: ``prompt_tokens`` and ``completion_tokens`` as clients reported them (statements show
    #: them; ``tokens`` is the events' ``total_tokens``). Rows written before they were counted
    #: hold 0.
    input_tokens: int = 0
    output_tokens: int = 0
    #: A customer row's ``customer_name``: the name the last event written to it carried, and
    #: that event's ``received_at``. Rows add up in any order (days, rollup shards), so the name
    #: with the latest time wins; a row written before the time was kept counts as the oldest.
    #: A label, not a count: never compared, and adding a row without one keeps the name.
    #: A ``reported`` row's sum of the cost its events' providers reported (0 on other rows).
    reported_cost: Decimal = field(default_factory=Decimal)
    #: What the events' customers are charged (docs/api-rules.md#charge): the sum of their exact
    #: charges, beside their cost, so margins and invoices read rollups, never events.
    charge: Decimal = field(default_factory=Decimal)
    customer_name: str | None = field(default=None, compare=False)
    customer_name_at: str | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Counts:
        """A stored rollup row's counts: a counter it does not hold is 0 (rows written before
        the counter existed, or whose events never added to it)."""
        name, name_at = row.get("customer_name"), row.get("customer_name_at")
        counters: dict[str, Any] = {counter: _KINDS.get(counter, int)(row.get(counter, 0)) for counter in COUNTERS}
        return cls(
            **counters,
            customer_name=None if name is None else str(name),
            customer_name_at=None if name_at is None else str(name_at),
        )

    def counters(self) -> dict[str, Any]:
        mine = vars(self)
        return {counter: mine[counter] for counter in COUNTERS}

    def add(self, other: Counts) -> None:
        # Through the instances' dicts: ingestion adds every event to each of its rows, and this
        # is as fast as written-out additions (getattr/setattr would double it).
        mine, theirs = vars(self), vars(other)
        for counter in COUNTERS:
            mine[counter] += theirs[counter]
        if other.customer_name is not None and (other.customer_name_at or "") >= (self.customer_name_at or ""):
            self.customer_name, self.customer_name_at = other.customer_name, other.customer_name_at

    def minus(self, other: Counts) -> Counts:
        return Counts(**{counter: value - getattr(other, counter) for counter, value in self.counters().items()})

    def to_dict(self) -> dict[str, Any]:
        """What usage reports show of a row (statements show the token split too)."""
        shown = {counter: getattr(self, counter) for counter in _REPORTED} | {"cost": format_decimal(self.cost)}
        if self.charge:  # only workspaces that charge their customers see it
            shown["charge"] = format_decimal(self.charge)
        return shown


#: What a rollup row adds up, in the order the row's fields are declared: every field of
#: :class:`Counts` but its label.
COUNTERS = tuple(counter.name for counter in fields(Counts) if counter.compare)
#: The counters in dollars; the others are whole numbers.
_KINDS: dict[str, type[int] | type[Decimal]] = {"cost": Decimal, "reported_cost": Decimal, "charge": Decimal}
_REPORTED = ("events", "tokens", "cost", "unknown_model_events")


@lru_cache(maxsize=4096)
def model_name(provider: str, model: str) -> str:
    return f"{normalize_provider(provider)}/{normalize_name(model)}"


def rollup_rows(record: EventRecord) -> tuple[tuple[RollupKey, ...], Counts]:
    """The rollup rows one accepted event adds to, and what it adds to each. ``counts`` carries
    the event's ``customer_name``, which only the customer row keeps (statements show it).

    Every accepted event adds its counts to a few rollup rows, in the same write that stores it,
    so the rollups always equal the sum of the accepted events, retries and races included:

    * ``total``        one row per day (the day chart, and the totals);
    * ``feature``, ``model``, ``environment``, ``status``, ``customer`` (when given): one row
      per day and value;
    * ``unknown_model``: one row per day and model that had no pricing entry;
    * ``reported``:      one row per day and model of the events whose provider or exporter
      reported a cost itself (:func:`reported_cost`): their count, priced ``cost`` and
      ``reported_cost``; an event without one adds nothing here (and writes no extra row);
    * ``charge``:        one row per day and charge (``included``, ``credit``) for every event,
      hidden ones too: what a month used of the plan (``Usage``) is read from these;
    * ``invoice.<customer digest>``: one row per day and provider, model and feature for every
      event charged to a customer, hidden ones too (:func:`invoice_dimension`): its invoice's
      lines and the customer portal's usage are read from these;
    * ``hidden``:        instead of all the above, one row per day and reason for an event hidden
      from the dashboard (a free-plan key's other sources). Hidden events never reach charts or
      groups; they are counted apart so nobody wonders where they went.

    Rows are small and independent, so a workspace with many features or customers never grows
    one item towards DynamoDB's size limit. A row's sort key holds its value only while that value
    is short in UTF-8 bytes: DynamoDB refuses sort keys over 1,024 bytes, and a customer id of 256
    emoji is 1,024 bytes by itself. A longer value goes into the key as its SHA-256 and is kept
    whole in the row's ``value`` attribute, which is what reports show.
    """
    day = record.received_at[:10]
    unknown = record.pricing_status == PricingStatus.UNKNOWN_MODEL
    event = record.event
    reported = reported_cost(event.metadata)
    counts = Counts(
        1,
        event.total_tokens,
        record.cost,
        1 if unknown else 0,
        event.prompt_tokens or 0,
        event.completion_tokens or 0,
        Decimal(0) if reported is None else reported,
        record.charge_amount or Decimal(0),
        customer_name=event.customer_name if event.customer_id is not None else None,
        customer_name_at=record.received_at
        if event.customer_name is not None and event.customer_id is not None
        else None,
    )
    charge = RollupKey(CHARGE, day, record.charge.value)
    billed: tuple[RollupKey, ...] = ()
    if record.charge_amount is not None and event.customer_id is not None:
        line = line_value(normalize_provider(event.provider), normalize_name(event.model), event.feature)
        billed = (RollupKey(invoice_dimension(event.customer_id), day, line),)
    if not record.visibility.dashboard_visible:
        return (RollupKey(HIDDEN, day, record.visibility.reason or HIDDEN), charge, *billed), counts
    model = model_name(event.provider, event.model)
    keys = [
        RollupKey(TOTAL, day),
        RollupKey("feature", day, event.feature),
        RollupKey("model", day, model),
        RollupKey("environment", day, event.environment),
        RollupKey("status", day, event.status),
    ]
    if event.customer_id is not None:
        keys.append(RollupKey(CUSTOMER, day, event.customer_id))
    if unknown:
        keys.append(RollupKey(UNKNOWN_MODELS, day, model))
    if reported is not None:
        keys.append(RollupKey(REPORTED, day, model))
    keys.append(charge)
    keys += billed
    return tuple(keys), counts


def rollup_deltas(record: EventRecord) -> dict[RollupKey, Counts]:
    """The rollup rows one accepted event adds to, and what it adds."""
    return summed_deltas((record,))


def summed_deltas(records: Iterable[EventRecord]) -> dict[RollupKey, Counts]:
    """The rows many events add to, summed: one update per row. Events that share all their
    rows (same day, feature, model, customer, …) are summed first, then spread over the rows;
    a customer's name goes to its customer row only (the latest event's, as written), a
    reported cost to the reported row only."""
    groups: dict[tuple[RollupKey, ...], Counts] = {}
    for record in records:
        keys, counts = rollup_rows(record)
        groups.setdefault(keys, Counts()).add(counts)
    deltas: dict[RollupKey, Counts] = {}
    for keys, counts in groups.items():
        unnamed = (
            replace(counts, customer_name=None, customer_name_at=None) if counts.customer_name is not None else counts
        )
        reported = unnamed
        if counts.reported_cost:
            counts, unnamed = replace(counts, reported_cost=Decimal(0)), replace(unnamed, reported_cost=Decimal(0))
        for key in keys:
            shares = reported if key.dimension == REPORTED else counts if key.dimension == CUSTOMER else unnamed
            deltas.setdefault(key, Counts()).add(shares)
    return deltas


def repricing_deltas(old: EventRecord, new: EventRecord) -> dict[RollupKey, Counts]:
    """What the rollups move by when ``old`` is priced as ``new`` (a backfill): the added cost
    on every row, and the event leaves the unknown-model rows. Never counts an event twice."""
    before, after = rollup_deltas(old), rollup_deltas(new)
    deltas = {}
    for key in dict.fromkeys([*before, *after]):
        delta = after.get(key, Counts()).minus(before.get(key, Counts()))
        if delta != Counts():
            deltas[key] = delta
    return deltas


@dataclass
class UsageReport:
    by: str
    totals: Counts = field(default_factory=Counts)
    groups: dict[str, Counts] = field(default_factory=dict)
    hidden: dict[str, Counts] = field(default_factory=dict)
    #: By customer: the visible events sent without a customer id (shown as the ``(none)`` group).
    unattributed: Counts = field(default_factory=Counts)
    #: Each group's counts per day (the dashboard's stacked chart), and the visible totals per day.
    daily: dict[str, dict[str, Counts]] = field(default_factory=dict)
    total_daily: dict[str, Counts] = field(default_factory=dict)

    @property
    def hidden_events(self) -> int:
        return sum(counts.events for counts in self.hidden.values())

    def hidden_notice(self) -> str | None:
        """The dashboard's troubleshooting hints (docs/guides/dashboard.md), where they apply."""
        if not self.hidden:
            return None
        parts = ", ".join(f"{counts.events} events hidden: {reason}" for reason, counts in sorted(self.hidden.items()))
        return (
            f"{parts}. They were accepted and counted against the allowance but are not shown: a free-plan key "
            "only shows the provider/model/feature it is bound to. Check the key's binding, or the "
            "dashboard_visible and visibility_reason fields of the responses."
        )

    def unattributed_daily(self) -> dict[str, Counts]:
        """By customer: each day's visible events without a customer id."""
        days: dict[str, Counts] = {}
        for day, total in self.total_daily.items():
            attributed = Counts()
            for per_day in self.daily.values():
                if day in per_day:
                    attributed.add(per_day[day])
            left = total.minus(attributed)
            if left != Counts():
                days[day] = left
        return days

    def group_dict(self, key: str, counts: Counts, daily: bool) -> dict[str, Any]:
        """A group as reports show it: by customer with the customer's name (the latest an event
        carried, or null), and with ``daily`` its counts per day, oldest first."""
        group = {"key": key, **counts.to_dict()}
        if self.by == CUSTOMER:
            group["customer_name"] = counts.customer_name
        if daily and self.by != "day":
            days = self.unattributed_daily() if counts is self.unattributed else self.daily.get(key, {})
            group["days"] = [{"day": day, **days[day].to_dict()} for day in sorted(days)]
        return group

    def to_dict(self, daily: bool = False) -> dict[str, Any]:
        groups = list(self.groups.items())
        if self.unattributed.events:
            groups.append((NO_VALUE, self.unattributed))
        ordered = sorted(
            groups,
            key=lambda item: (item[0],) if self.by == "day" else (-item[1].cost, -item[1].events, item[0]),
        )
        return {
            "group_by": self.by,
            "currency": CURRENCY,
            "totals": self.totals.to_dict(),
            "groups": [self.group_dict(key, counts, daily) for key, counts in ordered],
            "hidden": {reason: counts.to_dict() for reason, counts in sorted(self.hidden.items())},
            "hidden_events": self.hidden_events,
            "hidden_notice": self.hidden_notice(),
        }


def dimensions_for(by: str) -> tuple[str, ...]:
    """The rollup dimensions a report grouped by ``by`` reads."""
    check_grouping(by)
    return (TOTAL, HIDDEN) if by in ("day", TOTAL) else (TOTAL, HIDDEN, by)


def check_grouping(by: str) -> None:
    if by not in GROUPINGS:
        raise ValueError(f"cannot group by {by!r}; choose one of {', '.join(GROUPINGS)}")


def report(rows: Iterable[tuple[RollupKey, Counts]], by: str) -> UsageReport:
    """A usage report from rollup rows (any extra dimensions are ignored)."""
    check_grouping(by)
    result = UsageReport(by=by)
    for key, counts in rows:
        if key.dimension == HIDDEN:
            result.hidden.setdefault(key.value, Counts()).add(counts)
        elif key.dimension == TOTAL:
            result.totals.add(counts)
            result.total_daily.setdefault(key.day, Counts()).add(counts)
            if by == "day":
                result.groups.setdefault(key.day, Counts()).add(counts)
        elif key.dimension == by:
            result.groups.setdefault(key.value, Counts()).add(counts)
            result.daily.setdefault(key.value, {}).setdefault(key.day, Counts()).add(counts)
    if by == "customer":
        # Events without a customer have no customer rows: they are what the groups miss.
        attributed = Counts()
        for counts in result.groups.values():
            attributed.add(counts)
        result.unattributed = result.totals.minus(attributed)
    return result


def summarize(records: Iterable[EventRecord], by: str) -> UsageReport:
    """The same report computed straight from events: what the rollups must always equal."""
    rows = [(key, counts) for record in records for key, counts in rollup_deltas(record).items()]
    return report(rows, by)


def unknown_models(rows: Iterable[tuple[RollupKey, Counts]]) -> list[dict[str, Any]]:
    """Models that came in without a pricing entry, most frequent first, with the last day seen."""
    seen: dict[str, tuple[Counts, str]] = {}
    for key, counts in rows:
        if key.dimension != UNKNOWN_MODELS or counts.events <= 0:
            continue  # a backfill moved every event of that row out
        total, last = seen.get(key.value, (Counts(), key.day))
        total.add(counts)
        seen[key.value] = (total, max(last, key.day))
    ordered = sorted(seen.items(), key=lambda item: (-item[1][0].events, item[0]))
    return [
        {"model": model, "events": counts.events, "tokens": counts.tokens, "last_seen": last}
        for model, (counts, last) in ordered
    ]


def month_usage(rows: Iterable[tuple[RollupKey, Counts]]) -> tuple[int, int]:
    """Included events and credits used, from a month's ``charge`` rows."""
    used = {Charge.INCLUDED.value: 0, Charge.CREDIT.value: 0}
    for key, counts in rows:
        if key.dimension == CHARGE and key.value in used:
            used[key.value] += counts.events
    return used[Charge.INCLUDED.value], used[Charge.CREDIT.value]


class RollupReader(Protocol):
    """The daily rollups, read by day range and dimensions (the store's rollup part)."""

    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]: ...
