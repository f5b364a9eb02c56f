"""The key owners' API (``/v1/workspace/...``) and the dashboard that uses it.

Thin: authenticate the admin token, call :class:`WorkspaceService`, shape the response. Each
route declares its query, path and body types (Powertools validates them, ``enable_validation``)
and its answers (``owner_responses``), which is what the OpenAPI document says
(:func:`openapi_document`). A request that fails its types is answered ``400 INVALID_PAYLOAD``
naming each field (``request_errors``), after the admin token is checked: no token, no details.

The same function serves the dashboard (docs/guides/dashboard.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Protocol, cast

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.logging import correlation_paths

from costtrack_service.domain.cursors import MAX_CURSOR_CHARS
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.portal.portal_tokens import PORTAL_TOKEN_PREFIX
from costtrack_service.domain.recorded_writes import WriteRecords
from costtrack_service.domain.report_days import DEFAULT_DAYS, MAX_DAYS, MAX_FILTER_CHARS
from costtrack_service.domain.statements import StatementFormat, StatementGrouping
from costtrack_service.domain.usage import Grouping
from costtrack_service.domain.workspaces.keys import ADMIN_TOKEN_PREFIX, KEY_TRANSITIONS
from costtrack_service.domain.workspaces.plans import WorkspaceState
from costtrack_service.edge.http_event import failure_error, presented_secret, with_decoded_path
from costtrack_service.edge.owner_api import responses as shapes
from costtrack_service.edge.owner_api import workspace_answers as answers
from costtrack_service.edge.owner_api.billing_routes import add_billing_routes
from costtrack_service.edge.owner_api.budget_routes import add_budget_routes
from costtrack_service.edge.owner_api.credit_routes import add_credit_routes
from costtrack_service.edge.owner_api.customer_routes import add_customer_routes, add_margin_routes
from costtrack_service.edge.owner_api.dashboard import add_dashboard_routes
from costtrack_service.edge.owner_api.http import (
    error_response,
    install_error_handlers,
    json_response,
    request_headers,
)
from costtrack_service.edge.owner_api.invoice_routes import add_invoice_routes
from costtrack_service.edge.owner_api.portal_page import add_portal_page
from costtrack_service.edge.owner_api.portal_routes import (
    PORTAL_CALLER,
    PORTAL_TOKEN,
    add_portal_api,
    add_portal_token_routes,
)
from costtrack_service.edge.owner_api.query_params import EVENT_FILTERS, text_filters
from costtrack_service.edge.owner_api.rate_card_routes import add_rate_card_routes
from costtrack_service.edge.owner_api.request_errors import read_json_body, refuse_media_type
from costtrack_service.edge.owner_api.responses import ADMIN_TOKEN, INVALID, NOT_FOUND, WITH_BODY, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.edge.owner_api.run_routes import add_run_routes
from costtrack_service.edge.owner_api.sink_routes import add_sink_routes
from costtrack_service.services.billing_sinks import SinkService, SinkServiceStore
from costtrack_service.services.budgets import BudgetService, BudgetStore
from costtrack_service.services.credits import CreditService, CreditStore
from costtrack_service.services.customers import CustomerRecords, CustomerService, CustomerStore
from costtrack_service.services.invoices import InvoiceService, InvoiceStore
from costtrack_service.services.margins import MarginService, MarginStore
from costtrack_service.services.portal import PortalService, PortalStore
from costtrack_service.services.price_overrides import OverrideService, OverrideStore
from costtrack_service.services.rate_cards import RateCardRecords, RateCardService, RateCardStore
from costtrack_service.services.reconciliation import ProviderBills, ReconciliationService, ReconciliationStore
from costtrack_service.services.requests import NewKey, NewPriceOverride, OtelAttributes, refusal
from costtrack_service.services.run_anomalies import AnomalySettingsService, AnomalyStore
from costtrack_service.services.runs import RunService, RunStore
from costtrack_service.services.workspace import (
    DEFAULT_LIMIT,
    MAX_KEYS,
    MAX_LIMIT,
    MAX_MODELS,
    EventListQuery,
    UsageQuery,
    WorkspaceService,
)
from costtrack_service.services.write_replays import WriteReplayService

logger = Logger(service="costtrack-api")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]

DAY_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
First = Annotated[
    str | None,
    Query(alias="from", pattern=DAY_PATTERN, description=f"First UTC day (default: {DEFAULT_DAYS - 1} days before to)"),
]
Last = Annotated[
    str | None,
    Query(
        alias="to",
        pattern=DAY_PATTERN,
        description=f"Last UTC day, inclusive (default: today; {MAX_DAYS} days at most)",
    ),
]
Cursor = Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")]
EventFilter = Annotated[
    str | None, Query(max_length=MAX_FILTER_CHARS, description="Only events whose field of this name equals this")
]


class BillingRecords(CustomerRecords, RateCardRecords, Protocol):
    """The billing table's part: rate cards, customers and billing settings."""


class OwnerApiStore(
    BudgetStore,
    CustomerStore,
    InvoiceStore,
    MarginStore,
    OverrideStore,
    RateCardStore,
    ReconciliationStore,
    AnomalyStore,
    RunStore,
    PortalStore,
    SinkServiceStore,
    Protocol,
):
    """Every part the owners' API's services use: the composed store has them all."""

    @property
    def billing(self) -> BillingRecords: ...

    @property
    def provider_bills(self) -> ProviderBills: ...

    @property
    def write_records(self) -> WriteRecords: ...

    @property
    def credits(self) -> CreditStore: ...


def build_app(
    service: WorkspaceService, budgets: BudgetService | None = None, local: bool = False
) -> APIGatewayHttpResolver:
    """The owners' API and the dashboard (``local``: the local stack's, see ``add_dashboard_routes``)."""
    app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=read_json_body)
    store = cast(OwnerApiStore, service.store)  # the workspace service's store is the whole one
    overrides = OverrideService(store)
    # A deployed stack's webhooks may point only at public addresses (the local stack passes
    # its own, which allows loopback receivers).
    budgets = budgets or BudgetService(store)
    install_error_handlers(app, logger)
    replays = WriteReplayService(store.write_records)
    portal = PortalService(store, service.clock)

    def caller() -> WorkspaceState:
        """The workspace of the request's admin token: the only one its operations act on."""
        workspace: WorkspaceState = app.context["workspace"]
        return workspace

    def gate(resolver: APIGatewayHttpResolver) -> None:
        """What any answer says first: ``401`` without a live admin token (on a route that needs
        one), then ``415`` for a body that is not JSON. Once per request."""
        if resolver.context.get("gated"):
            return
        resolver.context["gated"] = True
        headers = request_headers(resolver)
        # Powertools' resolved route (None, or the not-found route, need no token): the context
        # entry its own middlewares read (openapi_validation), no private attribute. Its newer
        # public ``app.request`` gives the path, not the route's security, and is not in every
        # Powertools this project allows (>=3.20).
        route = resolver.context.get("_route")
        if route is not None and route.security == ADMIN_TOKEN:
            resolver.context["workspace"] = service.authenticate(
                presented_secret(headers, ADMIN_TOKEN_PREFIX)
            ).workspace
        elif route is not None and route.security == PORTAL_TOKEN:
            resolver.context[PORTAL_CALLER] = portal.authenticate(presented_secret(headers, PORTAL_TOKEN_PREFIX))
        refuse_media_type(headers, resolver.current_event.body)

    def gated(resolver: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
        gate(resolver)
        answer: Response[Any] = next_middleware(resolver)
        return answer

    # Powertools validates a request's declared types (and reads its body) before any middleware
    # runs, through public hooks only: a request that passes meets the gate in this middleware,
    # one that fails meets it in the exception handler below, before its refusal is answered. So
    # a request without a live admin token is told just that (401) before anything about its
    # query or body, and a body that is not JSON is refused (415) before whatever Powertools
    # made of it (a unit test holds it).
    app.use(middlewares=[gated])

    def answer_failure(error: Exception) -> Response[str]:
        if isinstance(error, RequestValidationError):
            return error_response(app, refusal(error.errors()))
        if isinstance(error, UnicodeDecodeError):
            return error_response(app, invalid("body", "the body is not UTF-8 text"))
        return error_response(app, failure_error(error, logger))

    # Replaces install_error_handlers' handler of any failure: the gate's answer comes first.
    @app.exception_handler(Exception)
    def _refused(error: Exception) -> Response[str]:
        try:
            gate(app)
        except Exception as first:
            return answer_failure(first)
        return answer_failure(error)

    owners = OwnerRoutes(app, lambda: caller().workspace_id, logger, replays)

    @owners.get("/v1/workspace", documented(200, shapes.WorkspaceSummary, "The workspace"))
    def get_workspace() -> Answer:
        """The plan, this month's included events and credits"""
        return answers.summary_body(service.summary(caller()))

    @owners.get("/v1/workspace/usage", documented(200, shapes.UsageReport, "Usage from daily rollups", r400=INVALID))
    def get_usage(
        first: First = None,
        last: Last = None,
        group_by: Annotated[Grouping, Query()] = "day",
        daily: Annotated[
            bool, Query(description="With group_by other than day: each group's counts per day too (days)")
        ] = False,
    ) -> Answer:
        """Events, tokens and cost over a date range, grouped; hidden events counted apart

        Grouped by customer, each group has the customer's name (customer_name: the latest an
        event carried, or null)."""
        return answers.usage_body(service.usage(caller(), UsageQuery(first, last, group_by, daily)))

    @owners.get(
        "/v1/workspace/unknown-models",
        documented(200, shapes.UnknownModels, "Models, most frequent first", r400=INVALID),
    )
    def get_unknown_models(
        first: First = None,
        last: Last = None,
        limit: Annotated[int, Query(ge=1, le=MAX_MODELS)] = MAX_MODELS,
        cursor: Cursor = None,
    ) -> Answer:
        """Models that came in without a pricing entry (cost 0), a page at a time

        Ties by model; next_cursor is null on the last page."""
        return answers.unknown_models_body(service.unknown_models(caller(), first, last, limit, cursor))

    @owners.get("/v1/workspace/events", documented(200, shapes.EventPage, "A page of events", r400=INVALID))
    def list_events(
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
        cursor: Annotated[str | None, Query(max_length=1024, description="next_cursor of the previous page")] = None,
        feature: EventFilter = None,
        model: EventFilter = None,
        provider: EventFilter = None,
        environment: EventFilter = None,
        status: EventFilter = None,
        customer_id: EventFilter = None,
    ) -> Answer:
        """Visible events, newest first (hidden events are never listed)"""
        filters = {
            "feature": feature,
            "model": model,
            "provider": provider,
            "environment": environment,
            "status": status,
            "customer_id": customer_id,
        }
        query = EventListQuery(limit, cursor, text_filters(filters, EVENT_FILTERS))
        return answers.event_page_body(service.events(caller(), query))

    @owners.get(
        "/v1/workspace/statements/<month>",
        documented(
            200,
            shapes.Statement,
            "The statement (CSV: a header row, one row per line, then the total)",
            ("text/csv", {"type": "string"}),
            r400=INVALID,
        ),
    )
    def get_statement(
        month: Annotated[
            str, Path(pattern="^[0-9]{4}-(0[1-9]|1[0-2])$", description="YYYY-MM (UTC), not after the current month")
        ],
        by: Annotated[StatementGrouping, Query()] = "customer",
        output: Annotated[StatementFormat, Query(alias="format")] = "json",
    ) -> Answer:
        """A calendar month's statement per customer or per feature, as JSON or CSV

        Read from the same daily rollups as /v1/workspace/usage, so it equals them to the last
        decimal. Lines: one per customer (or feature), no_customer (events without a customer id),
        hidden (accepted, counted, hidden from the dashboard: a free-plan key's other sources),
        and the total of them all. The current month gives the month so far (complete: false).
        """
        statement = service.statement(caller(), month, by)
        # Named as a file in either format: the dashboard saves it under this name.
        disposition = {"Content-Disposition": f'attachment; filename="{statement.filename(output)}"'}
        if output == "json":
            return json_response(200, statement.to_dict(), disposition)
        return Response(
            status_code=200,
            content_type="text/csv; charset=utf-8",
            body=statement.to_csv(),
            headers={"Cache-Control": "no-store", **disposition},
        )

    @owners.get("/v1/workspace/keys", documented(200, shapes.KeyList, "Keys, oldest first", r400=INVALID))
    def list_keys(limit: Annotated[int, Query(ge=1, le=MAX_KEYS)] = MAX_KEYS, cursor: Cursor = None) -> Answer:
        """The workspace's ingestion keys (never the secrets), oldest first, a page at a time"""
        return answers.key_list_body(service.keys(caller(), limit, cursor))

    @owners.post("/v1/workspace/keys", documented(201, shapes.CreatedKey, "The key and its secret", **WITH_BODY))
    def create_key(new: Annotated[NewKey | None, Body()] = None) -> Answer:
        """Create an ingestion key; the secret is in this response only"""
        return answers.created_key_body(service.create_key(caller(), new))

    @owners.post(
        "/v1/workspace/keys/<key_id>/<action>",
        documented(
            200,
            shapes.KeyResult,
            "The key in its new state",
            r400=refused("Not a key id", "INVALID_PAYLOAD"),
            r404=refused("No such key or action", "NOT_FOUND"),
            r409=refused("Not allowed from the key's state", "INVALID_KEY_TRANSITION"),
        ),
    )
    def change_key(
        key_id: Annotated[str, Path(description="the key's id, as the key list shows it (key_…)")],
        action: Annotated[str, Path(description="deactivate, reactivate or revoke", examples=list(KEY_TRANSITIONS))],
    ) -> Answer:
        """Deactivate, reactivate (only from inactive) or revoke (final) a key"""
        return answers.key_body(service.change_key(caller(), key_id, action))

    @owners.get("/v1/workspace/price-overrides", documented(200, shapes.OverrideList, "Overrides"))
    def list_price_overrides() -> Answer:
        """The workspace's price overrides"""
        return overrides.list(caller())

    @owners.post("/v1/workspace/price-overrides", documented(200, shapes.OverrideResult, "The override", **WITH_BODY))
    def set_price_override(new: Annotated[NewPriceOverride, Body()]) -> Answer:
        """Create or replace the override of a provider (or one of its models) from a start"""
        return overrides.set(caller(), new.fields())

    @owners.delete(
        "/v1/workspace/price-overrides/<override_id>", documented(200, shapes.Deleted, "Deleted", r404=NOT_FOUND)
    )
    def delete_price_override(override_id: Annotated[str, Path(description="as the override list shows it")]) -> Answer:
        """Delete a price override"""
        return overrides.delete(caller(), override_id)

    @owners.get(
        "/v1/workspace/otel-attributes", documented(200, shapes.OtelAttributeMap, "The attribute map and the defaults")
    )
    def get_otel_attributes() -> Answer:
        """Where POST /v1/traces reads this workspace's event fields from"""
        return answers.otel_attributes_body(caller())

    @owners.put(
        "/v1/workspace/otel-attributes",
        documented(200, shapes.OtelAttributeMap, "The new attribute map", **WITH_BODY),
    )
    def set_otel_attributes(new: Annotated[OtelAttributes, Body()]) -> Answer:
        """Replace the workspace's attribute map (span or resource attribute names read first)"""
        return answers.otel_attributes_body(service.set_otel_attributes(caller(), new.fields()["attributes"]))

    add_budget_routes(owners, budgets)
    add_billing_routes(owners, ReconciliationService(store))
    add_rate_card_routes(owners, RateCardService(store, service.clock))
    add_customer_routes(owners, CustomerService(store))
    add_sink_routes(owners, SinkService(store, budgets.url_policy))
    add_margin_routes(owners, MarginService(store, service.clock))
    add_invoice_routes(owners, InvoiceService(store, service.clock))
    # Made per request: the document is built without a store.
    add_credit_routes(owners, lambda: CreditService(store.credits, service.clock))
    add_run_routes(
        owners,
        RunService(store, service.clock),
        AnomalySettingsService(store),
    )

    add_portal_token_routes(owners, portal)
    add_portal_api(app, portal)

    add_dashboard_routes(app, local)
    add_portal_page(app, portal)

    return app


def create_handler(
    service: WorkspaceService | None = None, budgets: BudgetService | None = None, local: bool = False
) -> LambdaHandler:
    if service is None:
        from costtrack_service.store.dynamo import DynamoStore

        service = WorkspaceService(DynamoStore.from_env())
    app = build_app(service, budgets, local)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(with_decoded_path(event), context)

    return handler
