"""The ``run_cost_anomaly`` evaluator, run with the budget evaluator each minute rather than at
ingestion, so ingestion reads no sketches and claims nothing for it (docs/guides/runs.md)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from costtrack_service.domain.budgets.alerts import SNS
from costtrack_service.domain.runs.anomalies import (
    KEY_PREFIX,
    LOOKBACK_DAYS,
    RECENT_DAYS,
    AnomalySettings,
    anomaly_notification,
    cost_limit,
    notification_key,
    reasons,
)
from costtrack_service.domain.runs.groups import merged
from costtrack_service.domain.runs.totals import RUN, RunTotal

#: Runs read per test and workspace at one evaluation (the most expensive first); more wait
#: for the next minute, the ones claimed meanwhile no longer counting.
MAX_CANDIDATES = 1000


class RunAnomalies:
    """Why here and not at ingestion: ingestion would need each feature's p99 on every batch (the
    sketch rows of 30 days, read from every rollup shard) and a claim in, or after, the event's
    transaction; the evaluator reads them once a minute per workspace that turned the alert on,
    and ingestion stays as it is. Per workspace and minute it reads:

    * the run sketch rows of the last 30 days (one Query per rollup shard): each feature's p99;
    * per feature, the runs that started today or yesterday and cost more than p99 x factor: a
      key condition on the ``runs_by_cost`` index (``cost >= limit``), so only those runs are read;
    * the runs that started today or yesterday with at least ``calls`` calls: the same index with
      a filter, which reads the two days' run items (about 1 read unit per 8 runs, eventually
      consistent);
    * the run notifications already claimed (keys only), so a notified run is not claimed again.

    A run is claimed once (``run#<trace_id>``, a conditional write with its deliveries, as budgets
    claim a threshold): repeated or concurrent evaluators notify it once. A run is looked at while
    it started today or yesterday (UTC): a run that becomes anomalous later is not notified.
    """

    def __init__(self, store: Any, with_sns: bool, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.with_sns = with_sns
        self.clock = clock

    def evaluate(self) -> dict[str, int]:
        counts = {"workspaces": 0, "anomalous": 0, "claimed": 0}
        for workspace_id, settings in self.store.anomaly_settings.anomaly_workspaces():
            counts["workspaces"] += 1
            found, claimed = self._workspace(workspace_id, settings)
            counts["anomalous"] += found
            counts["claimed"] += claimed
        return counts

    def _workspace(self, workspace_id: str, settings: AnomalySettings) -> tuple[int, int]:
        now = self.clock()
        today = now.date()
        days = [(today - timedelta(days=back)).isoformat() for back in range(RECENT_DAYS)]
        first = (today - timedelta(days=LOOKBACK_DAYS - 1)).isoformat()
        groups = self.store.runs.sketch_groups(workspace_id, RUN, first, today.isoformat())
        p99s = {feature: histogram.quantile(0.99) for feature, histogram in merged(groups, "feature").items()}
        done = self.store.budgets.claimed_notifications(workspace_id, KEY_PREFIX)
        candidates: dict[str, RunTotal] = {}

        def note(runs: list[RunTotal]) -> None:
            for total in runs:
                if notification_key(total) not in done:
                    candidates.setdefault(total.run_id, total)

        for feature, p99 in sorted(p99s.items(), key=lambda pair: str(pair[0])):
            limit = cost_limit(p99, settings)
            if feature is not None and limit is not None:
                note(self.store.runs.top_runs(workspace_id, days, {"feature": feature}, None, MAX_CANDIDATES, limit))
        note(self.store.runs.top_runs(workspace_id, days, {}, None, MAX_CANDIDATES, None, settings.calls))
        anomalous = claimed = 0
        endpoints = None
        for total in sorted(candidates.values(), key=lambda t: (t.first_at, t.run_id)):
            p99 = p99s.get(total.feature)
            found = reasons(total, cost_limit(p99, settings), settings)
            if not found:
                continue  # at the limit exactly (the index reads cost >= limit)
            anomalous += 1
            if endpoints is None:
                endpoints = self.store.budgets.list_endpoints(workspace_id)
            notification = anomaly_notification(workspace_id, total, found, p99, settings, now)
            targets: list[tuple[str, str | None]] = [(SNS, None)] if self.with_sns else []
            targets += [(endpoint.endpoint_id, endpoint.url) for endpoint in endpoints]
            deliveries = [notification.first_delivery(target, url) for target, url in targets]
            claimed += self.store.budgets.claim_notification(notification, deliveries)
        return anomalous, claimed
