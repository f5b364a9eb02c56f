"""The cost-per-run sketch: a fixed-bucket logarithmic histogram (the DDSketch mapping),
mergeable and subtractable, so percentiles come from small rows within a known relative error
(docs/guides/runs.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

#: The documented relative error of every percentile (docs/guides/runs.md).
RELATIVE_ERROR = 0.01
GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LOG_GAMMA = math.log(GAMMA)
#: Buckets per stored row.
BLOCK = 32
#: The zero bucket (costs of exactly 0: unpriced runs, runs with no calls yet).
ZERO = "z"

Bucket = int | str  # an index, or ZERO


def bucket_of(cost: Decimal) -> Bucket:
    if cost <= 0:
        return ZERO
    return math.ceil(math.log(float(cost)) / _LOG_GAMMA)


def bucket_value(bucket: Bucket) -> Decimal:
    """The bucket's representative cost, rounded to 12 significant digits."""
    if bucket == ZERO:
        return Decimal(0)
    assert isinstance(bucket, int)
    value = 2 * GAMMA**bucket / (GAMMA + 1)
    return Decimal(f"{value:.12g}")


def bucket_bounds(bucket: Bucket) -> tuple[Decimal, Decimal]:
    """The costs a bucket holds, ``(low, high]`` (``0, 0`` for the zero bucket), rounded to 12
    significant digits."""
    if bucket == ZERO:
        return Decimal(0), Decimal(0)
    assert isinstance(bucket, int)
    return Decimal(f"{GAMMA ** (bucket - 1):.12g}"), Decimal(f"{GAMMA**bucket:.12g}")


def block_of(bucket: Bucket) -> str:
    """The stored row a bucket belongs to."""
    return ZERO if bucket == ZERO else str(int(bucket) // BLOCK)


def bucket_name(bucket: Bucket) -> str:
    """A bucket's attribute name in a stored row: ``z``, ``p17``, ``n340`` (for -340)."""
    if bucket == ZERO:
        return ZERO
    assert isinstance(bucket, int)
    return f"p{bucket}" if bucket >= 0 else f"n{-bucket}"


def parse_bucket_name(name: str) -> Bucket | None:
    if name == ZERO:
        return ZERO
    if len(name) > 1 and name[0] in "pn" and name[1:].isdigit():
        return int(name[1:]) * (1 if name[0] == "p" else -1)
    return None


def _order(bucket: Bucket) -> float:
    return -math.inf if bucket == ZERO else float(bucket)


@dataclass
class Histogram:
    """Counts by bucket, and the exact sum of the costs counted (for the mean).

    A cost ``x > 0`` falls in bucket ``i = ceil(log(x) / log(gamma))`` with
    ``gamma = (1 + a) / (1 - a)``, i.e. ``gamma^(i-1) < x <= gamma^i``; the bucket's value
    ``2 * gamma^i / (gamma + 1)`` is within a relative error ``a`` of every cost in it. A zero cost
    has a bucket of its own (value 0, exact). Percentiles read the bucket that holds the exact
    percentile's run, so each is within ``a`` of the exact value (rank ``q * (n - 1)``, rounded
    down: the lower of the two middle runs for p50 of an even count).

    Mergeable (add the counts) and subtractable: a run whose total grows leaves its old bucket (-1)
    and enters its new one (+1) in the same transaction that changes its total, so each run is
    counted exactly once, at its current total (``totals.histogram_moves``).

    Stored rows hold ``BLOCK`` adjacent buckets each, so a row stays small (a transactional update
    costs 2 write units per started KB of the row) and a run that grows usually moves inside one.
    """

    counts: dict[Bucket, int] = field(default_factory=dict)
    total: Decimal = Decimal(0)

    @classmethod
    def of(cls, costs: Iterable[Decimal]) -> Histogram:
        histogram = cls()
        for cost in costs:
            histogram.add_bucket(bucket_of(cost), 1, cost)
        return histogram

    def add_bucket(self, bucket: Bucket, count: int, cost: Decimal = Decimal(0)) -> None:
        self.counts[bucket] = self.counts.get(bucket, 0) + count
        self.total += cost

    def merge(self, other: Histogram | Mapping[Bucket, int], total: Decimal = Decimal(0)) -> None:
        counts = other.counts if isinstance(other, Histogram) else other
        for bucket, count in counts.items():
            self.add_bucket(bucket, count)
        self.total += other.total if isinstance(other, Histogram) else total

    @property
    def count(self) -> int:
        return sum(count for count in self.counts.values() if count > 0)

    def quantile(self, q: float) -> Decimal | None:
        """The value of the bucket holding the run of rank ``floor(q * (n - 1))``."""
        n = self.count
        if n == 0:
            return None
        rank = math.floor(q * (n - 1))
        seen = 0
        for bucket in sorted((b for b, c in self.counts.items() if c > 0), key=_order):
            seen += self.counts[bucket]
            if seen > rank:
                return bucket_value(bucket)
        raise AssertionError("unreachable: the ranks add up to the count")

    def mean(self) -> Decimal | None:
        n = self.count
        return None if n == 0 else self.total / n
