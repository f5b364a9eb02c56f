"""Anomalous runs and their ``run_cost_anomaly`` notification: which runs cost more than their
feature's usual, and the settings that say so (docs/guides/runs.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from costtrack_service.domain.budgets.alerts import Notification, notification_id
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.runs.sketch import RELATIVE_ERROR
from costtrack_service.domain.runs.totals import RunTotal

EVENT_TYPE = "run_cost_anomaly"
KEY_PREFIX = "run#"
DEFAULT_FACTOR = Decimal(2)
DEFAULT_CALLS = 100
MAX_FACTOR = Decimal(1000)
MAX_CALLS = 1_000_000
LOOKBACK_DAYS = 30
#: Runs checked: those that started on the last this many UTC days (today and yesterday).
RECENT_DAYS = 2
COST, CALLS = "cost", "calls"


@dataclass(frozen=True)
class AnomalySettings:
    enabled: bool = False
    factor: Decimal = DEFAULT_FACTOR
    calls: int = DEFAULT_CALLS

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "factor": format_decimal(self.factor), "calls": self.calls}

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> AnomalySettings:
        return cls(bool(data["enabled"]), Decimal(str(data["factor"])), int(data["calls"]))


def _invalid(field: str, message: str) -> ApiError:
    return ApiError("INVALID_PAYLOAD", message, details=[{"field": field, "message": message}])


def changed_settings(current: AnomalySettings, body: object) -> AnomalySettings:
    """``current`` with the fields of a PUT body (``enabled``, ``factor``, ``calls``); the
    fields left out keep their value. Raises ApiError ``INVALID_PAYLOAD`` naming the field."""
    if not isinstance(body, Mapping):
        raise _invalid("body", "the settings are a JSON object")
    unknown = sorted(set(body) - {"enabled", "factor", "calls"})
    if unknown:
        raise _invalid(str(unknown[0]), "not a setting: the settings are enabled, factor and calls")
    enabled, factor, calls = current.enabled, current.factor, current.calls
    if "enabled" in body:
        if not isinstance(body["enabled"], bool):
            raise _invalid("enabled", "enabled is true or false")
        enabled = body["enabled"]
    if "factor" in body:
        raw = body["factor"]
        try:
            if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
                raise InvalidOperation
            factor = Decimal(str(raw))
        except InvalidOperation:
            raise _invalid("factor", 'factor is a number such as 2 or "2.5"') from None
        if not factor.is_finite() or not Decimal(1) <= factor <= MAX_FACTOR:
            raise _invalid("factor", f"factor is from 1 to {MAX_FACTOR}")
    if "calls" in body:
        raw = body["calls"]
        if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_CALLS:
            raise _invalid("calls", f"calls is a whole number from 1 to {MAX_CALLS}")
        calls = raw
    return AnomalySettings(enabled, factor, calls)


def cost_limit(p99: Decimal | None, settings: AnomalySettings) -> Decimal | None:
    """The cost a run of the feature must exceed to be anomalous (None: the feature has no runs)."""
    return None if p99 is None else p99 * settings.factor


def reasons(total: RunTotal, limit: Decimal | None, settings: AnomalySettings) -> list[str]:
    """* A workspace turns the alert on with its settings (``PUT /v1/workspace/run-anomalies``):
      ``factor`` (default 2) and ``calls`` (default 100). Off until an owner turns it on: receivers
      registered for budget alerts never see a new kind of payload they did not ask for.
    * A run is **anomalous** when its cost is above its feature's p99 cost per run times
      ``factor`` (the p99 of the runs of that feature that started in the last
      :data:`LOOKBACK_DAYS` days, from the cost sketch, within its relative error), or when it made
      at least ``calls`` calls (the dashboard's "Anomalous runs" use the same two tests).
    * The scheduled evaluator looks at the runs that started today or
      yesterday (UTC) and claims one notification per run (key ``run#<trace_id>``): a run is
      notified **once**, whichever test it passed first and however long it goes on. The
      notification goes through the budgets' outbox, signing, SNS and retries unchanged.
    """

    found = []
    if limit is not None and total.cost > limit:
        found.append(COST)
    if total.calls >= settings.calls:
        found.append(CALLS)
    return found


def notification_key(total: RunTotal) -> str:
    return f"{KEY_PREFIX}{total.run_id}"


def anomaly_notification(
    workspace_id: str,
    total: RunTotal,
    found: list[str],
    p99: Decimal | None,
    settings: AnomalySettings,
    at: datetime,
) -> Notification:
    """The notification of one anomalous run: its body is fixed now, every retry sends it."""
    key = notification_key(total)
    created = format_timestamp(at)
    limit = cost_limit(p99, settings)
    payload = {
        "id": notification_id(key),
        "type": EVENT_TYPE,
        "created_at": created,
        "workspace_id": workspace_id,
        "reasons": found,
        "run": {
            "trace_id": total.run_id,
            "run_name": total.run_name,
            "session_id": total.session_id,
            "feature": total.feature,
            "customer_id": total.customer_id,
            "total": total.answer(),
        },
        "feature_p99": None if p99 is None else format_decimal(p99),
        "relative_error": str(RELATIVE_ERROR),
        "cost_limit": None if limit is None else format_decimal(limit),
        "settings": settings.to_dict(),
        "currency": CURRENCY,
    }
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return Notification(key, workspace_id, "", 0, created, body)


def summary(data: Mapping[str, Any]) -> str:
    """One line for people (the SNS message's first line)."""
    run = data["run"]
    why = " and ".join(
        f"cost over {data['cost_limit']} USD ({data['settings']['factor']} x the feature's p99)"
        if reason == COST
        else f"{run['total']['calls']} calls (at least {data['settings']['calls']})"
        for reason in data["reasons"]
    )
    name = f" {run['run_name']!r}" if run["run_name"] else ""
    return (
        f"costtrack anomalous run{name} {run['trace_id']} (feature {run['feature']}, workspace "
        f"{data['workspace_id']}): {run['total']['cost']} USD, {why}"
    )


class SettingsStore(Protocol):
    def get_anomaly_settings(self, workspace_id: str) -> AnomalySettings: ...

    def put_anomaly_settings(self, workspace_id: str, settings: AnomalySettings) -> None: ...
