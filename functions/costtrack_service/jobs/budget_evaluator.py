"""The budget evaluator and the alert dispatcher, every minute: a threshold's notification is
claimed by a conditional write so it exists once, and each delivery is leased so it is sent
once (docs/guides/budgets.md)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from costtrack_service.domain.budgets.alerts import (
    CANCELLED,
    DELIVERED,
    FAILED,
    PENDING,
    SNS,
    Attempt,
    Delivery,
    Endpoint,
    Notification,
)
from costtrack_service.domain.budgets.budget import Budget, crossed
from costtrack_service.domain.budgets.budget_windows import Status, episode_name, notification_key
from costtrack_service.domain.budgets.instances import budgets_now
from costtrack_service.domain.budgets.webhooks import (
    FIRST_RETRY,
    Target,
    UrlPolicy,
    WebhookRefused,
    check_url,
    next_attempt_at,
    signed_headers,
)
from costtrack_service.domain.credits.credits_low import EVENT_TYPE as CREDITS_LOW
from costtrack_service.domain.credits.credits_low import summary as credits_summary
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.runs.anomalies import EVENT_TYPE as RUN_ANOMALY
from costtrack_service.domain.runs.anomalies import summary as anomaly_summary
from costtrack_service.jobs.anomaly_evaluator import RunAnomalies
from costtrack_service.jobs.credit_alerts import CreditAlerts
from costtrack_service.jobs.webhook_client import post_webhook
from costtrack_service.store.dynamo import DynamoStore

Sender = Callable[[Target, bytes, Mapping[str, str]], int]
USER_AGENT = "costtrack-webhooks/1"
MAX_ERROR_CHARS = 300


@dataclass(frozen=True)
class AlertSettings:
    sns_topic_arn: str | None = None
    url_policy: UrlPolicy = field(default_factory=UrlPolicy)
    #: The first retry's delay; the others grow from it (shortened in the local stack and tests).
    first_retry: timedelta = FIRST_RETRY
    #: How long one dispatcher holds a delivery for its attempt.
    lease: timedelta = timedelta(minutes=5)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AlertSettings:
        """``COSTTRACK_ALERTS_TOPIC_ARN`` (the template sets it); the local stack's settings
        are passed explicitly, never read from the environment of a deployed function."""
        env = os.environ if env is None else env
        return cls(sns_topic_arn=env.get("COSTTRACK_ALERTS_TOPIC_ARN") or None)


class Alerts:
    """``evaluate`` reads every budget's spend from the rollups (a template's per instance: each value
    of its dimension, :func:`instance_spends`), and for each threshold reached claims
    its notification: a conditional write, with the notification's deliveries in the same
    transaction, so whatever runs at once or again, one claim wins and the others change nothing.
    It also marks budgets past 100% for the ingestion warning, and re-arms a rolling budget's
    threshold once the spend fell back below it.

    ``dispatch`` attempts the deliveries that are due: each is leased first (a conditional write),
    so two dispatchers never send the same attempt; the attempt is recorded with its time, the
    receiver's status or the error, and a failed one is due again after the backoff
    (:func:`next_attempt_at`) until the last attempt.
    """

    def __init__(
        self,
        store: DynamoStore,
        settings: AlertSettings | None = None,
        *,
        sns: Any = None,
        send: Sender = post_webhook,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.settings = settings or AlertSettings()
        self._sns = sns
        self._send = send
        self._clock = clock

    def run(self) -> dict[str, Any]:
        evaluated = self.evaluate()
        with_sns = self.settings.sns_topic_arn is not None
        runs = RunAnomalies(self.store, with_sns, self._clock).evaluate()
        credits = CreditAlerts(self.store, with_sns, self._clock).evaluate()
        return {"evaluate": evaluated, "runs": runs, "credits": credits, "dispatch": self.dispatch()}

    # -- evaluate ---------------------------------------------------------------------------

    def evaluate(self) -> dict[str, int]:
        now = self._clock()
        counts = {"budgets": 0, "claimed": 0, "marked": 0, "rearmed": 0}
        by_workspace: dict[str, list[Budget]] = {}
        for budget in self.store.budgets.all_budgets():
            by_workspace.setdefault(budget.workspace_id, []).append(budget)
        for workspace_id, budgets in sorted(by_workspace.items()):
            endpoints: list[Endpoint] | None = None
            state = budgets_now(self.store.rollups, workspace_id, budgets, now)
            for status in state.statuses:
                counts["budgets"] += 1
                budget = status.budget
                # A template alerts per instance (each value of its dimension), never as a whole.
                lines = state.instances.get(budget.budget_id, []) if budget.template else [status]
                reached = {line.instance: crossed(budget, line.spent) for line in lines}
                claimed = (
                    self.store.budgets.claimed_notifications(workspace_id, f"{budget.budget_id}#{budget.revision}#")
                    if any(reached.values()) or budget.rolling
                    else set()
                )
                for line in lines:
                    for threshold in reached[line.instance]:
                        key = notification_key(budget, line.span, threshold, line.instance)
                        if key in claimed:
                            continue
                        if endpoints is None:
                            endpoints = self.store.budgets.list_endpoints(workspace_id)
                        counts["claimed"] += self._claim(line, threshold, key, endpoints, now)
                counts["marked"] += 0 if budget.template else self._mark(status)
                counts["rearmed"] += self._rearm(status, reached, claimed)
        return counts

    def _claim(self, status: Status, threshold: int, key: str, endpoints: list[Endpoint], now: datetime) -> bool:
        notification = Notification.crossing(
            key, status.budget, status.span, threshold, status.spent, now, status.instance
        )
        targets: list[tuple[str, str | None]] = [(SNS, None)] if self.settings.sns_topic_arn else []
        targets += [(endpoint.endpoint_id, endpoint.url) for endpoint in endpoints]
        deliveries = [notification.first_delivery(target, url) for target, url in targets]
        return self.store.budgets.claim_notification(notification, deliveries)

    def _mark(self, status: Status) -> bool:
        """Past 100%: events received until the window can next fall carry the warning."""
        budget, span = status.budget, status.span
        if status.spent < budget.amount:
            return False
        start, until = format_timestamp(span.start), format_timestamp(span.until)
        if (budget.exceeded_from, budget.exceeded_until) == (start, until):
            return False
        return self.store.budgets.mark_exceeded(budget, start, until)

    def _rearm(self, status: Status, reached: Mapping[str | None, list[int]], claimed: set[str]) -> bool:
        """A rolling budget's threshold (a template's: per instance) that was notified and is no
        longer reached starts a new episode: the next crossing is a new notification. An
        instance with no spend left in the window re-arms too (its key names it by its ref)."""
        budget = status.budget
        if not budget.rolling:
            return False
        episodes = dict(budget.episodes)
        if not budget.template:
            for threshold in budget.thresholds:
                notified = notification_key(budget, status.span, threshold) in claimed
                if threshold not in reached.get(None, []) and notified:
                    episodes[str(threshold)] = episodes.get(str(threshold), 0) + 1
        else:
            still = {episode_name(budget, t, value) for value, ts in reached.items() for t in ts}
            prefix = f"{budget.budget_id}#{budget.revision}#"
            for key in claimed:
                period, _, rest = key.removeprefix(prefix).partition("#")
                level, _, ref = rest.partition("#i")
                name = f"{level}#{ref}"
                if ref and name not in still and period == f"r{episodes.get(name, 0)}":
                    episodes[name] = episodes.get(name, 0) + 1
        if episodes == dict(budget.episodes):
            return False
        return self.store.budgets.rearm(budget, replace(budget, episodes=episodes))

    # -- dispatch ---------------------------------------------------------------------------

    def dispatch(self) -> dict[str, int]:
        counts = {"attempted": 0, "delivered": 0, "retrying": 0, "failed": 0, "cancelled": 0}
        for delivery in self.store.budgets.due_deliveries(format_timestamp(self._clock())):
            lease = format_timestamp(self._clock() + self.settings.lease)
            if not self.store.budgets.lease_delivery(delivery, lease):
                continue  # another dispatcher has it
            counts["attempted"] += 1
            done = self._attempt(delivery, lease)
            key = "retrying" if done.state == PENDING else done.state
            counts[key] += 1
        return counts

    def _attempt(self, delivery: Delivery, lease: str) -> Delivery:
        started = self._clock()
        at = format_timestamp(started)
        body = self.store.budgets.get_notification_body(delivery.workspace_id, delivery.notification_key)
        if body is None:
            expired = Attempt(at, error="the notification expired")
            return self.store.budgets.record_attempt(delivery, lease, expired, CANCELLED, None)
        notification = _notification(delivery, body)
        if delivery.target == SNS:
            attempt = self._publish(notification, at)
        else:
            endpoint = self.store.budgets.get_endpoint(delivery.workspace_id, delivery.target)
            if endpoint is None:
                attempt = Attempt(at, error="the endpoint was deleted")
                return self.store.budgets.record_attempt(delivery, lease, attempt, CANCELLED, None)
            attempt = self._post(endpoint, notification, at)
        if attempt.error is None:
            return self.store.budgets.record_attempt(delivery, lease, attempt, DELIVERED, None)
        retry = next_attempt_at(len(delivery.attempts) + 1, started, self.settings.first_retry)
        if retry is None:
            return self.store.budgets.record_attempt(delivery, lease, attempt, FAILED, None)
        return self.store.budgets.record_attempt(delivery, lease, attempt, PENDING, format_timestamp(retry))

    def _publish(self, notification: Notification, at: str) -> Attempt:
        if not self.settings.sns_topic_arn or self._sns is None:
            return Attempt(at, error="no SNS topic is configured")
        data = json.loads(notification.body)
        if data.get("type") == RUN_ANOMALY:
            subject, summary = "costtrack: anomalous run", anomaly_summary(data)
        elif data.get("type") == CREDITS_LOW:
            subject, summary = f"costtrack: credits at {notification.threshold}%", credits_summary(data)
        else:
            subject, summary = f"costtrack budget alert: {notification.threshold}% reached", notification.summary()
        try:
            self._sns.publish(
                TopicArn=self.settings.sns_topic_arn,
                Subject=subject,
                Message=f"{summary}\n\n{notification.body}",
            )
        except Exception as exc:  # any failure is an attempt to retry, never the job's end
            return Attempt(at, error=_error_text(exc))
        return Attempt(at)

    def _post(self, endpoint: Endpoint, notification: Notification, at: str) -> Attempt:
        try:
            target = check_url(endpoint.url, self.settings.url_policy)
        except WebhookRefused as exc:
            return Attempt(at, error=str(exc))
        body = notification.body.encode()
        # Signed now, with the secrets that sign now (a rotation's overlap: old and new).
        now = time.time()
        secrets = endpoint.signing_secrets(format_timestamp(datetime.fromtimestamp(now, UTC)))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            # Deprecated with Costtrack-Signature: webhook-id carries the same id, signed.
            "Costtrack-Notification-Id": notification.notification_id,
            **signed_headers(secrets, notification.notification_id, int(now), body),
        }
        try:
            status = self._send(target, body, headers)
        except Exception as exc:  # connection refused, timeout, TLS: a failed attempt
            return Attempt(at, error=_error_text(exc))
        if 200 <= status < 300:
            return Attempt(at, status=status)
        return Attempt(at, status=status, error=f"the receiver answered HTTP {status}")


def _notification(delivery: Delivery, body: str) -> Notification:
    data = json.loads(body)
    return Notification(
        key=delivery.notification_key,
        workspace_id=delivery.workspace_id,
        budget_id=delivery.budget_id,
        threshold=int(data.get("threshold", delivery.threshold)),  # none in a reconciliation_gap or run_cost_anomaly
        created_at=str(data["created_at"]),
        body=body,
    )


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
