"""Sketch rows as read (their rollup shards added up), and merged per group: what
the run reports (unit costs) and the statements (cost per run on a statement) share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from costtrack_service.domain.runs.sketch import Histogram


@dataclass
class SketchGroup:
    """One sketch row as read (its shards added up): a group's runs of one day, one block."""

    kind: str
    day: str
    feature: str
    customer_id: str | None
    run_name: str | None
    histogram: Histogram

    def key(self, by: str) -> str | None:
        return {"feature": self.feature, "customer": self.customer_id, "run_name": self.run_name}[by]


def merged(groups: Iterable[SketchGroup], by: str | None) -> dict[str | None, Histogram]:
    """The groups' histograms added up per key of ``by`` (None: all in one)."""
    merged: dict[str | None, Histogram] = {}
    for group in groups:
        merged.setdefault(group.key(by) if by else None, Histogram()).merge(group.histogram)
    return merged
