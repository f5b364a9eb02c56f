"""A throttled DynamoDB answers 503 with Retry-After on every family of the owners' API (keys,
usage, prices, budgets and webhooks, statements), whichever of a route's calls it hits: the
budgets and price stores' calls go through the same translation as the rest
(``store.client.translate_errors``), never a 500."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from costtrack_service.domain.budgets.webhooks import UrlPolicy
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.owner_api.app import create_handler
from costtrack_service.services.budgets import BudgetService
from costtrack_service.services.workspace import WorkspaceService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.local.server import LambdaContext
from tests.support.dynamo_faults import TRANSIENT, Throttle, refusal_starts
from tests.support.owner_event import request

LAST_MONTH = f"{datetime.now(UTC).year - 1}-12"


#: Webhook hosts resolve to a public address (example.com's), without asking DNS.
PUBLIC = UrlPolicy(resolve=lambda host, port: ["93.184.216.34"])


# (family, method, path with {budget}/{webhook}/{override}/{key} filled from the set-up, query, body)
ROUTES = [
    ("keys", "GET", "/v1/workspace/keys", None, None),
    ("keys", "POST", "/v1/workspace/keys", None, {"name": "busy"}),
    ("keys", "POST", "/v1/workspace/keys/{key}/deactivate", None, None),
    ("usage", "GET", "/v1/workspace/usage", {"group_by": "feature"}, None),
    ("usage", "GET", "/v1/workspace/unknown-models", None, None),
    ("pricing", "GET", "/v1/workspace/price-overrides", None, None),
    ("pricing", "POST", "/v1/workspace/price-overrides", None, {"provider": "openai", "discount_percent": "10"}),
    ("pricing", "DELETE", "/v1/workspace/price-overrides/{override}", None, None),
    ("budgets", "GET", "/v1/workspace/budgets", None, None),
    ("budgets", "POST", "/v1/workspace/budgets", None, {"amount": "10"}),
    ("budgets", "PATCH", "/v1/workspace/budgets/{budget}", None, {"amount": "20"}),
    ("budgets", "DELETE", "/v1/workspace/budgets/{budget}", None, None),
    ("budgets", "GET", "/v1/workspace/webhooks", None, None),
    ("budgets", "POST", "/v1/workspace/webhooks", None, {"url": "https://hooks.example.com/x"}),
    ("budgets", "DELETE", "/v1/workspace/webhooks/{webhook}", None, None),
    ("budgets", "GET", "/v1/workspace/webhook-deliveries", None, None),
    ("statements", "GET", f"/v1/workspace/statements/{LAST_MONTH}", None, None),
    ("statements", "GET", f"/v1/workspace/statements/{LAST_MONTH}", {"format": "csv", "by": "feature"}, None),
]


@pytest.mark.parametrize(("family", "method", "path", "query", "body"), ROUTES)
def test_a_throttled_database_is_a_503_on_every_owners_route(
    dynamo: DynamoStore,
    family: str,
    method: str,
    path: str,
    query: dict[str, str] | None,
    body: object,
) -> None:
    def prepare() -> tuple[str, str]:
        """A workspace with a key, a budget, a webhook and an override: the route's token and path."""
        workspace = dynamo.workspaces.create_workspace("busy", tier=Tier.PAID, included_events=100)
        _, key = dynamo.keys.create_key(workspace.workspace_id)
        token, _ = dynamo.keys.create_key(workspace.workspace_id, kind=ADMIN)
        budgets = BudgetService(dynamo, url_policy=PUBLIC)
        owners = create_handler(WorkspaceService(dynamo), budgets)
        ids = {"key": key.key_id}
        for name, route, created, id_field in (
            ("budget", "/v1/workspace/budgets", {"amount": "5"}, "budget_id"),
            ("webhook", "/v1/workspace/webhooks", {"url": "https://hooks.example.com/y"}, "endpoint_id"),
            ("override", "/v1/workspace/price-overrides", {"provider": "xai", "discount_percent": "5"}, "override_id"),
        ):
            answer = json.loads(owners(request("POST", route, token, body=created), LambdaContext("setup"))["body"])
            ids[name] = answer[name][id_field]
        return token, path.format(**ids)

    def run(token: str, path: str, throttle: Throttle) -> dict[str, Any]:
        # A fresh client and service each time: a cold function, so every call happens.
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.meta.events.register("before-call.dynamodb", throttle)  # type: ignore[arg-type]
        store = DynamoStore(client, dynamo.tables)
        handler = create_handler(WorkspaceService(store), BudgetService(store, url_policy=PUBLIC))
        return handler(request(method, path, token, query, body), LambdaContext("busy"))  # type: ignore[no-any-return]

    # Recorded in a workspace of its own: the recording run changes what it touches (a budget
    # deleted), and the refused runs must meet the route's state before it.
    starts = refusal_starts(lambda throttle: run(*prepare(), throttle))
    token, route = prepare()
    for start in starts:
        throttle = Throttle(start, TRANSIENT[start % len(TRANSIENT)])
        result = run(token, route, throttle)
        if not throttle.refused:
            assert result["statusCode"] in (200, 201), (family, result["body"])
            break  # every call site of this route has been refused
        assert (result["statusCode"], json.loads(result["body"])["error"]["code"]) == (503, "UNAVAILABLE"), (
            family,
            start,
            throttle.refused,
            result["body"],
        )
        assert result["headers"]["Retry-After"] == "1"
    else:
        pytest.fail("the route never completed")
