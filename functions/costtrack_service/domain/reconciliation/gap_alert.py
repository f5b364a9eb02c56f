"""The ``reconciliation_gap`` webhook event: after an import, a day whose unexplained gap
(untracked usage + price drift, in USD) passes the workspace's threshold is notified once per
day and provider, through the budget alerts' deliveries (same signing, same retries:
docs/guides/budgets.md, ``jobs.budget_evaluator.Alerts.dispatch``). No AWS import here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from costtrack_service.domain.budgets.alerts import Notification, notification_id
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp

EVENT_TYPE = "reconciliation_gap"
FIELD = "usd_per_day"
MAX_THRESHOLD = Decimal("1000000000")


def parse_threshold(body: object) -> Decimal | None:
    """``{"usd_per_day": "5.00"}`` (a positive decimal string, at most 6 decimals) or
    ``{"usd_per_day": null}`` (no alert)."""
    if not isinstance(body, dict) or set(body) != {FIELD}:
        raise invalid(FIELD, f"the body must be a JSON object with {FIELD} only")
    value = body[FIELD]
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(FIELD, f'{FIELD} is a decimal string such as "5.00", or null')
    try:
        amount = Decimal(value.strip())
    except InvalidOperation:
        raise invalid(FIELD, f'{FIELD} is a decimal string such as "5.00", or null') from None
    exponent = amount.as_tuple().exponent
    if not amount.is_finite() or amount <= 0 or amount > MAX_THRESHOLD or (isinstance(exponent, int) and exponent < -6):
        raise invalid(FIELD, f"{FIELD} must be more than 0 and at most {MAX_THRESHOLD}, with at most 6 decimals")
    return amount


def threshold_answer(threshold: Decimal | None) -> dict[str, Any]:
    return {FIELD: None if threshold is None else format_decimal(threshold), "event": EVENT_TYPE}


def notification_key(provider: str, day: str) -> str:
    return f"recon#{provider}#{day}"


def gap_notifications(
    workspace_id: str,
    provider: str,
    findings: Iterable[Mapping[str, Any]],
    threshold: Decimal,
    at: datetime,
) -> list[Notification]:
    """One notification per day of ``provider`` whose untracked + drift USD passes ``threshold``.
    ``findings``: the reconciliation answer's (``untracked_usd``/``drift_usd`` exact strings)."""
    by_day: dict[str, list[Mapping[str, Any]]] = {}
    for finding in findings:
        if finding["provider"] == provider:
            by_day.setdefault(str(finding["day"]), []).append(finding)
    created = format_timestamp(at)
    notifications = []
    for day, rows in sorted(by_day.items()):
        untracked = sum((Decimal(row["untracked_usd"]) for row in rows), Decimal(0))
        drift = sum((Decimal(row["drift_usd"]) for row in rows), Decimal(0))
        if untracked + drift <= threshold:
            continue
        key = notification_key(provider, day)
        worst = sorted(rows, key=lambda row: -(Decimal(row["untracked_usd"]) + Decimal(row["drift_usd"])))
        payload = {
            "id": notification_id(key),
            "type": EVENT_TYPE,
            "created_at": created,
            "workspace_id": workspace_id,
            "provider": provider,
            "day": day,
            "gap_usd": format_decimal(untracked + drift),
            "untracked_usd": format_decimal(untracked),
            "price_drift_usd": format_decimal(drift),
            "threshold_usd": format_decimal(threshold),
            "models": [
                {
                    "model": row["model"],
                    "classes": list(row["classes"]),
                    "untracked_usd": row["untracked_usd"],
                    "drift_usd": row["drift_usd"],
                }
                for row in worst
                if Decimal(row["untracked_usd"]) + Decimal(row["drift_usd"]) > 0
            ],
        }
        body = json.dumps(payload, separators=(",", ":"), sort_keys=True)
        notifications.append(Notification(key, workspace_id, "", 0, created, body))
    return notifications
