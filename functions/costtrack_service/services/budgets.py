"""Budgets and webhook endpoints of one workspace, for the owners' API (``/v1/workspace/budgets``,
``/v1/workspace/webhooks``, ``/v1/workspace/webhook-deliveries``) and ``costtrack admin budgets``.

The workspace comes from the admin token (or the operator's command line), never from a body;
an id of another workspace is simply not found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.budgets.alerts import Delivery, Endpoint
from costtrack_service.domain.budgets.budget import Budget, crossed, percent
from costtrack_service.domain.budgets.budget_fields import BudgetError, change_budget, parse_budget
from costtrack_service.domain.budgets.budget_windows import Status
from costtrack_service.domain.budgets.instances import (
    MAX_INSTANCES,
    Holding,
    LedgerReader,
    Now,
    budgets_now,
    holding,
    instances,
)
from costtrack_service.domain.budgets.webhooks import (
    MAX_ENDPOINTS,
    UrlPolicy,
    WebhookRefused,
    check_url,
    new_webhook_secret,
)
from costtrack_service.domain.cursors import decode_cursor, encode_cursor, keyed_page, page_limit, refusal, scope_of
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ids import random_token
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.usage import RollupReader
from costtrack_service.services.requests import NewWebhook, SecretRotation, checked
from costtrack_service.services.workspace import not_found

MAX_BUDGETS = 100
DEFAULT_DELIVERIES = 50
MAX_DELIVERIES = 200
#: A template's instances in a budget's line (the rest: ``/instances``).
TOP_INSTANCES = 3
DEFAULT_INSTANCES = 20
_ID = re.compile(r"[A-Za-z0-9_]{1,64}")
#: The orders of a template's instances: by a figure, largest first, then by instance (distinct,
#: so a page ends on a position); or by instance alone. ``share`` and ``spent`` rank the figures
#: as each page reads them: an instance whose spend moves while a client pages may move across
#: the cursor (listed twice or not at all). ``instance`` is a key order that spend does not
#: change: paged under writes, every instance there before the first page is listed once.
INSTANCE_FIGURES: dict[str, Callable[[Holding], Decimal] | None] = {
    "share": lambda line: line.share,
    "spent": lambda line: line.spent,
    "instance": None,
}
INSTANCE_SORTS = tuple(INSTANCE_FIGURES)
#: An instance page's position: the last instance given and its figure in the page's order.
INSTANCE_POSITION = {
    "by": re.compile(r"-?[0-9]{1,40}(\.[0-9]{1,60})?(E[+-]?[0-9]{1,4})?"),
    "instance": re.compile(r".{1,300}", re.S),
}
#: A delivery page's position: the last delivery given (created_at, its key).
DELIVERY_POSITION = {"created": re.compile(r"[0-9T:.Z-]{1,40}"), "delivery": re.compile(r"d#[!-~]{1,600}")}


def instance_order(order: str) -> Callable[[Holding], tuple[Any, ...]]:
    figure = INSTANCE_FIGURES[order]
    if figure is None:
        return lambda line: (line.instance or "",)
    return lambda line: (-figure(line), line.instance or "")


def instance_position(order: str, line: Holding) -> dict[str, str]:
    figure = INSTANCE_FIGURES[order]
    return {"instance": line.instance or "", **({"by": str(figure(line))} if figure else {})}


def after_instance(order: str, position: Mapping[str, str]) -> tuple[Any, ...]:
    """The order's key of the position's instance (a cursor of a figure order holds the figure)."""
    if INSTANCE_FIGURES[order] is None:
        return (position["instance"],)
    if "by" not in position:
        raise refusal()
    return (-Decimal(position["by"]), position["instance"])


class BudgetRecords(Protocol):
    """The budgets, webhook endpoints and deliveries an owner manages."""

    def list_budgets(self, workspace_id: str) -> list[Budget]: ...

    def get_budget(self, workspace_id: str, budget_id: str) -> Budget | None: ...

    def put_budget(self, budget: Budget, *, replacing: int | None = None) -> bool: ...

    def delete_budget(self, workspace_id: str, budget_id: str) -> bool: ...

    def list_endpoints(self, workspace_id: str) -> list[Endpoint]: ...

    def put_endpoint(self, endpoint: Endpoint) -> None: ...

    def get_endpoint(self, workspace_id: str, endpoint_id: str) -> Endpoint | None: ...

    def rotate_endpoint_secret(self, seen: Endpoint, rotated: Endpoint) -> bool: ...

    def delete_endpoint(self, workspace_id: str, endpoint_id: str) -> bool: ...

    def list_deliveries(
        self, workspace_id: str, limit: int = 100, before: tuple[str, str] | None = None
    ) -> list[Delivery]: ...


class BudgetStore(Protocol):
    """The parts of the store budgets use: their records, the rollups they spend from and the
    ledgers of enforced ones."""

    @property
    def budgets(self) -> BudgetRecords: ...

    @property
    def rollups(self) -> RollupReader: ...

    @property
    def reservations(self) -> LedgerReader: ...


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
        budgets = self.store.budgets.list_budgets(workspace_id)
        now = self._clock()
        state = budgets_now(self.store.rollups, workspace_id, budgets, now)
        return {"budgets": [self._line(status, state, now) for status in state.statuses]}

    def show(self, workspace_id: str, budget_id: str) -> dict[str, Any]:
        """One budget as the list shows it."""
        return {"budget": self._one(self._budget(workspace_id, budget_id))}

    def instances(self, workspace_id: str, budget_id: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """A template's instances now: spent, held, remaining and share of the amount, a page at a
        time in the order of ``sort`` (``INSTANCE_FIGURES``)."""
        params = params or {}
        order = params.get("sort") or "share"
        if order not in INSTANCE_FIGURES:
            raise invalid("sort", f"sort must be one of {', '.join(INSTANCE_SORTS)}")
        limit = page_limit(params.get("limit"), DEFAULT_INSTANCES, MAX_INSTANCES)
        budget = self._budget(workspace_id, budget_id)
        if not budget.template:
            raise invalid("budget_id", "only a template (scope_value *) has instances")
        scope = scope_of("budget-instances", workspace_id, {"budget": budget_id, "sort": order})
        cursor = params.get("cursor")
        found = decode_cursor(cursor, scope, INSTANCE_POSITION, required=frozenset({"instance"})) if cursor else None
        now = self._clock()
        budgets = [other for other in self.store.budgets.list_budgets(workspace_id) if other.budget_id != budget_id]
        state = budgets_now(self.store.rollups, workspace_id, [budget, *budgets], now)
        key = instance_order(order)
        ordered = sorted(instances(self.store.reservations, state.instances[budget_id], now), key=key)
        page, more = keyed_page(ordered, key, after_instance(order, found) if found else None, limit)
        position = instance_position(order, page[-1]) if more else None
        return {
            "budget_id": budget_id,
            "scope": budget.scope,
            "amount": format_decimal(budget.amount),
            "enforce": budget.enforce,
            "sort": order,
            "instances": [line.to_dict() for line in page],
            "count": len(ordered),
            "next_cursor": encode_cursor(scope, position) if position else None,
        }

    def _line(self, status: Status, state: Now, now: datetime) -> dict[str, Any]:
        budget = status.budget
        line = status.to_dict()
        if not budget.template:
            return {**line, **holding(self.store.reservations, budget, status.span, status.spent, now).to_dict()}
        ranked = state.instances.get(budget.budget_id, [])
        found = instances(self.store.reservations, ranked, now)
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
        if len(self.store.budgets.list_budgets(workspace_id)) >= MAX_BUDGETS:
            raise invalid("body", f"a workspace has at most {MAX_BUDGETS} budgets")
        self.store.budgets.put_budget(budget)
        return {"budget": self._one(budget)}

    def change(self, workspace_id: str, budget_id: str, body: object) -> dict[str, Any]:
        current = self._budget(workspace_id, budget_id)
        try:
            changed = change_budget(current, body, now=self._now())
        except BudgetError as error:
            raise _refused(error) from None
        if not self.store.budgets.put_budget(changed, replacing=current.revision):
            raise ApiError("CONFLICT", "The budget changed meanwhile (or was deleted); read it again and retry.")
        return {"budget": self._one(changed)}

    def delete(self, workspace_id: str, budget_id: str) -> dict[str, Any]:
        if not _ID.fullmatch(budget_id) or not self.store.budgets.delete_budget(workspace_id, budget_id):
            raise not_found("budget")
        return {"deleted": budget_id}

    def _budget(self, workspace_id: str, budget_id: str) -> Budget:
        budget = self.store.budgets.get_budget(workspace_id, budget_id) if _ID.fullmatch(budget_id) else None
        if budget is None:
            raise not_found("budget")
        return budget

    def _one(self, budget: Budget) -> dict[str, Any]:
        now = self._clock()
        listed = self.store.budgets.list_budgets(budget.workspace_id)
        others = [other for other in listed if other.budget_id != budget.budget_id]
        state = budgets_now(self.store.rollups, budget.workspace_id, [budget, *others], now)
        return self._line(state.statuses[0], state, now)

    # -- webhook endpoints ------------------------------------------------------------------

    def endpoints(self, workspace_id: str) -> dict[str, Any]:
        return {"webhooks": [endpoint.to_dict() for endpoint in self.store.budgets.list_endpoints(workspace_id)]}

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
        if len(self.store.budgets.list_endpoints(workspace_id)) >= MAX_ENDPOINTS:
            raise invalid("body", f"a workspace has at most {MAX_ENDPOINTS} webhook endpoints")
        endpoint = Endpoint(
            endpoint_id="whk_" + random_token(16),
            workspace_id=workspace_id,
            url=target.url,
            secret=new_webhook_secret(),
            created_at=self._now(),
            description=description,
        )
        self.store.budgets.put_endpoint(endpoint)
        return {"webhook": endpoint.to_dict(with_secret=True)}

    def rotate_secret(self, workspace_id: str, endpoint_id: str, body: SecretRotation | object) -> dict[str, Any]:
        """A new signing secret (in this answer only); deliveries are signed with the old one as
        well for ``overlap_hours``. A rotation during another's overlap drops the older secret."""
        request = checked(SecretRotation, body)
        endpoint = self.store.budgets.get_endpoint(workspace_id, endpoint_id) if _ID.fullmatch(endpoint_id) else None
        if endpoint is None:
            raise not_found("webhook")
        now = self._clock()
        rotated = endpoint.rotated(new_webhook_secret(), format_timestamp(now + timedelta(hours=request.overlap_hours)))
        if not self.store.budgets.rotate_endpoint_secret(endpoint, rotated):
            raise ApiError("CONFLICT", "The webhook changed meanwhile (or was deleted); read it again and retry.")
        return {"webhook": rotated.to_dict(with_secret=True)}

    def delete_endpoint(self, workspace_id: str, endpoint_id: str) -> dict[str, Any]:
        if not _ID.fullmatch(endpoint_id) or not self.store.budgets.delete_endpoint(workspace_id, endpoint_id):
            raise not_found("webhook")
        return {"deleted": endpoint_id}

    def deliveries(self, workspace_id: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The deliveries, newest first (then by delivery key, descending), each with its
        attempts, a page at a time: a delivery made while paging is newer than the cursor, so
        it is on no later page, and none made before is skipped or repeated."""
        params = params or {}
        limit = page_limit(params.get("limit"), DEFAULT_DELIVERIES, MAX_DELIVERIES)
        scope = scope_of("webhook-deliveries", workspace_id, {})
        cursor = params.get("cursor")
        found = (
            decode_cursor(cursor, scope, DELIVERY_POSITION, required=frozenset(DELIVERY_POSITION)) if cursor else None
        )
        after = (found["created"], found["delivery"]) if found else None
        deliveries = self.store.budgets.list_deliveries(workspace_id, limit=limit + 1, before=after)
        page = deliveries[:limit]
        last = page[-1] if len(deliveries) > limit else None
        position = {"created": last.created_at, "delivery": last.item_key} if last else None
        return {
            "deliveries": [delivery.to_dict() for delivery in page],
            "next_cursor": encode_cursor(scope, position) if position else None,
        }

    def _now(self) -> str:
        return format_timestamp(self._clock())
