"""Budgets and webhook endpoints of one workspace, for the owners' API (``/v1/workspace/budgets``,
``/v1/workspace/webhooks``, ``/v1/workspace/webhook-deliveries``) and ``costtrack admin budgets``.

The workspace comes from the admin token (or the operator's command line), never from a body;
an id of another workspace is simply not found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.budgets.alerts import Delivery, Endpoint
from costtrack_service.domain.budgets.budget import Budget, crossed, percent
from costtrack_service.domain.budgets.budget_fields import BudgetError, change_budget, parse_budget
from costtrack_service.domain.budgets.budget_windows import Status
from costtrack_service.domain.budgets.instances import MAX_INSTANCES, Holding, Now, budgets_now, holding, instances
from costtrack_service.domain.budgets.webhooks import (
    MAX_ENDPOINTS,
    UrlPolicy,
    WebhookRefused,
    check_url,
    new_webhook_secret,
)
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ids import random_token
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.reservations.ledger import Ledger, LedgerSurvey
from costtrack_service.domain.usage import Counts, RollupKey
from costtrack_service.services.requests import NewWebhook, SecretRotation, checked
from costtrack_service.services.workspace import not_found

MAX_BUDGETS = 100
MAX_DELIVERIES = 200
#: A template's instances in a budget's line (the rest: ``/instances``).
TOP_INSTANCES = 3
INSTANCE_SORTS = ("share", "spent")
_ID = re.compile(r"[A-Za-z0-9_]{1,64}")


class BudgetStore(Protocol):
    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]: ...

    def list_budgets(self, workspace_id: str) -> list[Budget]: ...

    def read_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey: ...

    def get_budget(self, workspace_id: str, budget_id: str) -> Budget | None: ...

    def put_budget(self, budget: Budget, *, replacing: int | None = None) -> bool: ...

    def delete_budget(self, workspace_id: str, budget_id: str) -> bool: ...

    def list_endpoints(self, workspace_id: str) -> list[Endpoint]: ...

    def put_endpoint(self, endpoint: Endpoint) -> None: ...

    def get_endpoint(self, workspace_id: str, endpoint_id: str) -> Endpoint | None: ...

    def rotate_endpoint_secret(self, seen: Endpoint, rotated: Endpoint) -> bool: ...

    def delete_endpoint(self, workspace_id: str, endpoint_id: str) -> bool: ...

    def list_deliveries(self, workspace_id: str, limit: int = 100) -> list[Delivery]: ...


def _refused(error: BudgetError) -> ApiError:
    return invalid(error.field, error.message)


class BudgetService:
    def __init__(
        self,
        store: BudgetStore,
        *,
        url_policy: UrlPolicy | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.url_policy = url_policy or UrlPolicy()
        self._clock = clock

    # -- budgets ----------------------------------------------------------------------------

    def list(self, workspace_id: str) -> dict[str, Any]:
        """Each budget with its window and spend now (from the rollups, like the dashboard), and
        its ``spent``, ``held`` and ``remaining`` (``domain/budgets/instances.py``)."""
        budgets = self.store.list_budgets(workspace_id)
        now = self._clock()
        state = budgets_now(self.store, workspace_id, budgets, now)
        return {"budgets": [self._line(status, state, now) for status in state.statuses]}

    def show(self, workspace_id: str, budget_id: str) -> dict[str, Any]:
        """One budget as the list shows it."""
        return {"budget": self._one(self._budget(workspace_id, budget_id))}

    def instances(self, workspace_id: str, budget_id: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """A template's instances now: spent, held, remaining and share of the amount, the largest
        share (or ``sort=spent``: the most spent) first."""
        params = params or {}
        order = params.get("sort") or "share"
        if order not in INSTANCE_SORTS:
            raise invalid("sort", f"sort must be one of {', '.join(INSTANCE_SORTS)}")
        raw = params.get("limit") or "20"
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_INSTANCES:
            raise invalid("limit", f"limit must be an integer from 1 to {MAX_INSTANCES}")
        budget = self._budget(workspace_id, budget_id)
        if not budget.template:
            raise invalid("budget_id", "only a template (scope_value *) has instances")
        now = self._clock()
        budgets = [other for other in self.store.list_budgets(workspace_id) if other.budget_id != budget_id]
        state = budgets_now(self.store, workspace_id, [budget, *budgets], now)
        found = instances(self.store, state.instances[budget_id], now)
        if order == "spent":
            found.sort(key=lambda line: (-line.spent, line.instance or ""))
        return {
            "budget_id": budget_id,
            "scope": budget.scope,
            "amount": format_decimal(budget.amount),
            "enforce": budget.enforce,
            "instances": [line.to_dict() for line in found[: int(raw)]],
            "count": len(found),
        }

    def _line(self, status: Status, state: Now, now: datetime) -> dict[str, Any]:
        budget = status.budget
        line = status.to_dict()
        if not budget.template:
            return {**line, **holding(self.store, budget, status.span, status.spent, now).to_dict()}
        ranked = state.instances.get(budget.budget_id, [])
        found = instances(self.store, ranked, now)
        top = found[0] if found else Holding(budget.amount, Decimal(0), Decimal(0))
        most = ranked[0].spent if ranked else Decimal(0)  # the alerts' spend: the instance that spent most
        return {
            **line,
            "spend": format_decimal(most),
            "percent": percent(budget, most),
            "crossed": crossed(budget, most),
            "exceeded": most >= budget.amount,
            **{key: value for key, value in top.to_dict().items() if key != "instance"},
            "instances": len(found),
            "top_instances": [holding.to_dict() for holding in found[:TOP_INSTANCES]],
        }

    def create(self, workspace_id: str, body: object) -> dict[str, Any]:
        try:
            budget = parse_budget(body, budget_id="bud_" + random_token(16), workspace_id=workspace_id, now=self._now())
        except BudgetError as error:
            raise _refused(error) from None
        if len(self.store.list_budgets(workspace_id)) >= MAX_BUDGETS:
            raise invalid("body", f"a workspace has at most {MAX_BUDGETS} budgets")
        self.store.put_budget(budget)
        return {"budget": self._one(budget)}

    def change(self, workspace_id: str, budget_id: str, body: object) -> dict[str, Any]:
        current = self._budget(workspace_id, budget_id)
        try:
            changed = change_budget(current, body, now=self._now())
        except BudgetError as error:
            raise _refused(error) from None
        if not self.store.put_budget(changed, replacing=current.revision):
            raise ApiError("CONFLICT", "The budget changed meanwhile (or was deleted); read it again and retry.")
        return {"budget": self._one(changed)}

    def delete(self, workspace_id: str, budget_id: str) -> dict[str, Any]:
        if not _ID.fullmatch(budget_id) or not self.store.delete_budget(workspace_id, budget_id):
            raise not_found("budget")
        return {"deleted": budget_id}

    def _budget(self, workspace_id: str, budget_id: str) -> Budget:
        budget = self.store.get_budget(workspace_id, budget_id) if _ID.fullmatch(budget_id) else None
        if budget is None:
            raise not_found("budget")
        return budget

    def _one(self, budget: Budget) -> dict[str, Any]:
        now = self._clock()
        listed = self.store.list_budgets(budget.workspace_id)
        others = [other for other in listed if other.budget_id != budget.budget_id]
        state = budgets_now(self.store, budget.workspace_id, [budget, *others], now)
        return self._line(state.statuses[0], state, now)

    # -- webhook endpoints ------------------------------------------------------------------

    def endpoints(self, workspace_id: str) -> dict[str, Any]:
        return {"webhooks": [endpoint.to_dict() for endpoint in self.store.list_endpoints(workspace_id)]}

    def add_endpoint(self, workspace_id: str, body: NewWebhook | object) -> dict[str, Any]:
        """Register an endpoint; its signing secret is in this answer only. ``body``: the API's
        validated :class:`NewWebhook`, or the CLI's mapping (checked the same way)."""
        request = checked(NewWebhook, body)
        description = request.description
        if description is not None and not description.isprintable():
            raise invalid("description", "description must be printable text (no control characters)")
        try:
            target = check_url(request.url, self.url_policy)
        except WebhookRefused as error:
            raise invalid("url", str(error)) from None
        if len(self.store.list_endpoints(workspace_id)) >= MAX_ENDPOINTS:
            raise invalid("body", f"a workspace has at most {MAX_ENDPOINTS} webhook endpoints")
        endpoint = Endpoint(
            endpoint_id="whk_" + random_token(16),
            workspace_id=workspace_id,
            url=target.url,
            secret=new_webhook_secret(),
            created_at=self._now(),
            description=description,
        )
        self.store.put_endpoint(endpoint)
        return {"webhook": endpoint.to_dict(with_secret=True)}

    def rotate_secret(self, workspace_id: str, endpoint_id: str, body: SecretRotation | object) -> dict[str, Any]:
        """A new signing secret (in this answer only); deliveries are signed with the old one as
        well for ``overlap_hours``. A rotation during another's overlap drops the older secret."""
        request = checked(SecretRotation, body)
        endpoint = self.store.get_endpoint(workspace_id, endpoint_id) if _ID.fullmatch(endpoint_id) else None
        if endpoint is None:
            raise not_found("webhook")
        now = self._clock()
        rotated = endpoint.rotated(new_webhook_secret(), format_timestamp(now + timedelta(hours=request.overlap_hours)))
        if not self.store.rotate_endpoint_secret(endpoint, rotated):
            raise ApiError("CONFLICT", "The webhook changed meanwhile (or was deleted); read it again and retry.")
        return {"webhook": rotated.to_dict(with_secret=True)}

    def delete_endpoint(self, workspace_id: str, endpoint_id: str) -> dict[str, Any]:
        if not _ID.fullmatch(endpoint_id) or not self.store.delete_endpoint(workspace_id, endpoint_id):
            raise not_found("webhook")
        return {"deleted": endpoint_id}

    def deliveries(self, workspace_id: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The latest deliveries, newest first, each with its attempts."""
        raw = (params or {}).get("limit") or "50"
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_DELIVERIES:
            raise invalid("limit", f"limit must be an integer from 1 to {MAX_DELIVERIES}")
        deliveries = self.store.list_deliveries(workspace_id, limit=int(raw))
        return {"deliveries": [delivery.to_dict() for delivery in deliveries]}

    def _now(self) -> str:
        return format_timestamp(self._clock())
