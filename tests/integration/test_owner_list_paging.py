"""The owners' other paginated lists (keys, unknown models, a template's instances, webhook
deliveries, the reconciliation's days, rate cards) written to by many clients at once and paged to their end,
over real sockets, on DynamoDB Local and through the AWS-rules front: every item once, in the
list's documented order, a null cursor on the last page, at most ``items / limit + 2`` pages; a
cursor that is malformed or from another list, workspace or filter is refused naming ``cursor``."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.domain.budgets.alerts import Delivery, Notification, notification_id
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.workspaces.plans import Tier
from tests.support.http_workspace import Workspace
from tests.support.list_paging import (
    CLIENTS,
    PAGING_STACKS,
    concurrently,
    created_keys,
    event_body,
    page_through,
    paging_stack,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module", params=PAGING_STACKS)
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from paging_stack(request, tmp_path_factory, "owner-paging-front-")


def new_owner(stack: Any, api: httpx.Client, name: str) -> Workspace:
    workspace = stack.store.workspaces.create_workspace(name, tier=Tier.PAID, included_events=100_000)
    secret, _ = stack.store.keys.create_key(workspace.workspace_id, name="sender")
    return Workspace(api, stack, workspace.workspace_id, secret)


@pytest.fixture
def api(stack: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.state["api_url"], timeout=60) as client:
        yield client


@pytest.fixture
def owner(stack: Any, api: httpx.Client) -> Workspace:
    return new_owner(stack, api, "owner-paging")


def paged_ids(
    owner: Workspace,
    path: str,
    items: str,
    ident: Callable[[dict[str, Any]], Any],
    expected: list[Any],
    limit: int,
    params: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Pages ``path`` to its end: the items in ``expected``'s order, each once, within
    ``len(expected) // limit + 2`` pages (``page_through`` fails past that); the items."""
    most = len(expected) // limit + 2
    pages = list(page_through(owner.get, path, items, "next_cursor", {"limit": str(limit), **(params or {})}, most))
    listed = [item for page in pages for item in page]
    assert [ident(item) for item in listed] == expected, (path, limit, params)
    assert all(len(page) == limit for page in pages[:-1]), [len(page) for page in pages]
    return listed


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "INVALID_PAYLOAD" and error["details"][0]["field"] == "cursor", error


def forged(position: dict[str, str]) -> str:
    """A well-formed cursor of this version whose scope is nobody's."""
    text = json.dumps({"v": 1, "s": "AAAAAAAAAAAAAAAA", "p": position}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def refuses_hostile_cursors(
    owner: Workspace,
    other: Workspace,
    path: str,
    cursor: str,
    params: dict[str, str],
    foreign: str,
    other_path: str | None = None,
) -> None:
    """``cursor`` (of ``path`` with ``params``) works there and nowhere else (``other_path``:
    the same list in ``other``'s workspace, when its path differs)."""
    assert owner.get(path, limit="1", cursor=cursor, **params).status_code == 200
    for bad in ("not a cursor", "e30", "!!!!", "A" * 5000, forged({}), foreign):
        assert_refused(owner.get(path, limit="1", cursor=bad, **params))
    assert_refused(other.get(other_path or path, limit="1", cursor=cursor, **params))
    assert_refused(owner.get("/v1/workspace/events", limit="1", cursor=cursor))


def keys_cursor(owner: Workspace) -> str:
    """A cursor of the key list (a second key makes it two pages long)."""
    assert owner.post("/v1/workspace/keys", {"name": "spare"}).status_code == 201
    return first_cursor(owner, "/v1/workspace/keys")


def first_cursor(owner: Workspace, path: str, **params: str) -> str:
    cursor = owner.get(path, limit="1", **params).json()["next_cursor"]
    assert isinstance(cursor, str)
    return cursor


def test_keys_created_by_50_clients_list_once_oldest_first(owner: Workspace, stack: Any, api: httpx.Client) -> None:
    created = created_keys(owner, 300)
    sender = owner.get("/v1/workspace/keys", limit="1").json()["keys"][0]
    assert sender["name"] == "sender"
    everything = [sender, *created]
    stamps = Counter(key["created_at"] for key in everything)
    print(f"{len(stamps)} distinct created_at for {len(everything)} keys, at most {max(stamps.values())} in one")
    expected = [key["key_id"] for key in sorted(everything, key=lambda key: (key["created_at"], key["key_id"]))]
    for limit in (7, 100, 200):
        paged_ids(owner, "/v1/workspace/keys", "keys", lambda key: key["key_id"], expected, limit)
    # Without limit: the first 200 (the documented default), then a cursor.
    answer = owner.get("/v1/workspace/keys").json()
    assert [key["key_id"] for key in answer["keys"]] == expected[:200] and answer["next_cursor"]
    assert_refused(owner.get("/v1/workspace/keys", limit="2", cursor=forged({"created": "x", "key": "y"})))
    other = new_owner(stack, api, "owner-paging-other")
    owner.send(feature="a")
    owner.send(feature="b")
    events = first_cursor(owner, "/v1/workspace/events")
    refuses_hostile_cursors(owner, other, "/v1/workspace/keys", first_cursor(owner, "/v1/workspace/keys"), {}, events)
    for limit in ("0", "201", "x"):
        response = owner.get("/v1/workspace/keys", limit=limit)
        assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == "limit"


def test_unknown_models_from_50_clients_list_once_most_frequent_first(
    owner: Workspace, stack: Any, api: httpx.Client
) -> None:
    # 240 unknown models sent 1 to 3 times each: long ties of counts across the pages
    bodies = [event_body(n, model=f"gpt-unlisted-{n % 240:03d}") for n in range(240 * 2)]
    bodies += [event_body(1000 + n, model=f"gpt-unlisted-{n:03d}") for n in range(0, 240, 3)]
    sent = concurrently(str(owner.api.base_url), owner.key, bodies, CLIENTS, batch=10)
    assert all(answer["pricing_status"] == "unknown_model" for answer in sent)
    counts = Counter(f"openai/{body['model']}" for body in bodies)
    expected = sorted(counts, key=lambda model: (-counts[model], model))
    today = datetime.now(UTC).date().isoformat()
    for limit, params in ((7, {}), (100, {}), (200, {}), (33, {"from": today, "to": today})):
        listed = paged_ids(
            owner, "/v1/workspace/unknown-models", "models", lambda m: m["model"], expected, limit, params
        )
        assert [line["events"] for line in listed] == [counts[model] for model in expected]
    other = new_owner(stack, api, "owner-paging-other")
    other.send(model="gpt-unlisted-x")
    other.send(model="gpt-unlisted-y")
    theirs = first_cursor(other, "/v1/workspace/unknown-models")
    mine = first_cursor(owner, "/v1/workspace/unknown-models")
    refuses_hostile_cursors(owner, other, "/v1/workspace/unknown-models", mine, {}, theirs)
    # Another range is another list.
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    assert_refused(owner.get("/v1/workspace/unknown-models", cursor=mine, **{"from": yesterday}))


def test_a_templates_instances_from_50_clients_list_once_in_each_order(
    owner: Workspace, stack: Any, api: httpx.Client
) -> None:
    template = owner.post(
        "/v1/workspace/budgets", {"name": "per customer", "amount": "1", "scope": "customer", "scope_value": "*"}
    ).json()["budget"]
    features = owner.post(
        "/v1/workspace/budgets", {"name": "per feature", "amount": "1", "scope": "feature", "scope_value": "*"}
    ).json()["budget"]
    # 250 customers with one to four events of three sizes: equal spends and shares in long runs
    bodies = [
        event_body(n * 10 + k, customer_id=f"cust-{n:03d}", prompt_tokens=1000 * (n % 3 + 1))
        for n in range(250)
        for k in range(n % 4 + 1)
    ]
    sent = concurrently(str(owner.api.base_url), owner.key, bodies, CLIENTS, batch=5)
    by_key = {body["metadata"]["n"]: body for body in bodies}
    spent: dict[str, Decimal] = {}
    for answer in sent:
        customer = by_key[answer["idempotency_key"]]["customer_id"]
        spent[customer] = spent.get(customer, Decimal(0)) + Decimal(answer["cost"])
    by_spend = sorted(spent, key=lambda customer: (-spent[customer], customer))
    path = f"/v1/workspace/budgets/{template['budget_id']}/instances"
    for limit, sort, expected in (
        (9, "share", by_spend),
        (100, "share", by_spend),
        (40, "spent", by_spend),
        (13, "instance", sorted(spent)),
    ):
        listed = paged_ids(owner, path, "instances", lambda line: line["instance"], expected, limit, {"sort": sort})
        assert [Decimal(line["spent"]) for line in listed] == [spent[customer] for customer in expected]
    answer = owner.get(path).json()  # a client that does not page: the top 20, the count of all
    assert [line["instance"] for line in answer["instances"]] == by_spend[:20] and answer["count"] == 250
    mine = first_cursor(owner, path, sort="share")
    assert_refused(owner.get(path, cursor=mine, sort="instance"))
    assert_refused(owner.get(f"/v1/workspace/budgets/{features['budget_id']}/instances", cursor=mine, sort="share"))
    other = new_owner(stack, api, "owner-paging-other")
    theirs = other.post(
        "/v1/workspace/budgets", {"name": "theirs", "amount": "1", "scope": "customer", "scope_value": "*"}
    ).json()["budget"]
    other.send(customer_id="a")
    other.send(customer_id="b")
    their_path = f"/v1/workspace/budgets/{theirs['budget_id']}/instances"
    foreign = first_cursor(other, their_path)
    refuses_hostile_cursors(owner, other, path, mine, {"sort": "share"}, foreign, their_path)


def test_deliveries_claimed_by_50_writers_list_once_newest_first(
    owner: Workspace, stack: Any, api: httpx.Client
) -> None:
    store = stack.store
    start = datetime.now(UTC).replace(microsecond=0)
    # 300 notifications of two deliveries each, claimed at once, in 6 milliseconds: 100 a millisecond
    moments = [(start + timedelta(milliseconds=n % 6)).isoformat(timespec="milliseconds") for n in range(300)]

    def claim(n: int) -> list[Delivery]:
        key = f"bud_paging#r1#2026-11#{n:04d}#80"
        created = moments[n].replace("+00:00", "Z")
        note = Notification(key, owner.workspace_id, "bud_paging", 80, created, "{}")
        deliveries = [
            Delivery(owner.workspace_id, key, target, None, created, budget_id="bud_paging")
            for target in ("sns", "whk_x")
        ]
        assert store.budgets.claim_notification(note, deliveries)
        return deliveries

    with ThreadPoolExecutor(CLIENTS) as pool:
        claimed = [delivery for deliveries in pool.map(claim, range(300)) for delivery in deliveries]
    ordered = sorted(claimed, key=lambda delivery: (delivery.created_at, delivery.item_key), reverse=True)
    expected = [(notification_id(delivery.notification_key), delivery.target) for delivery in ordered]

    def ident(line: dict[str, Any]) -> tuple[str, str]:
        return line["notification_id"], line["target"]

    for limit in (7, 50, 200):
        paged_ids(owner, "/v1/workspace/webhook-deliveries", "deliveries", ident, expected, limit)
    answer = owner.get("/v1/workspace/webhook-deliveries").json()  # not paging: the newest 50
    assert [ident(line) for line in answer["deliveries"]] == expected[:50] and answer["next_cursor"]
    other = new_owner(stack, api, "owner-paging-other")
    keys = keys_cursor(owner)
    mine = first_cursor(owner, "/v1/workspace/webhook-deliveries")
    refuses_hostile_cursors(owner, other, "/v1/workspace/webhook-deliveries", mine, {}, keys)


def test_the_reconciliations_days_page_oldest_first(owner: Workspace, stack: Any, api: httpx.Client) -> None:
    store = stack.store
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    first = yesterday - timedelta(days=329)
    billed = [first + timedelta(days=n) for n in range(330) if n % 11 != 5]  # 300 days, gaps between

    def bill(day: date) -> None:
        line = BilledLine(
            day.isoformat(),
            "openai",
            "gpt-4o-mini-2024-07-18",
            {"input": 2000, "output": 200},
            {"input": Decimal("0.0003"), "output": Decimal("0.00012")},
            2,
        )
        store.provider_bills.put_billed_days(
            owner.workspace_id, "openai", (day, day), [line], imported_at="t", raw_object="k"
        )

    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(bill, billed))
    days = [day.isoformat() for day in billed]
    whole = {"from": first.isoformat(), "to": yesterday.isoformat()}
    recent = {"from": (yesterday - timedelta(days=99)).isoformat(), "to": yesterday.isoformat()}
    everything = owner.get("/v1/workspace/reconciliation", **whole).json()  # one page: today's answer
    assert [row["day"] for row in everything["days"]] == days and everything["next_cursor"] is None
    for limit, params, expected in (
        (7, whole, days),
        (100, whole, days),
        (30, recent, [d for d in days if d >= recent["from"]]),
    ):
        path = "/v1/workspace/reconciliation"
        pages = list(
            page_through(
                owner.get, path, "days", "next_cursor", {"limit": str(limit), **params}, len(expected) // limit + 2
            )
        )
        assert [row["day"] for page in pages for row in page] == expected, (limit, params)
        findings = [
            finding
            for page in page_through(owner.get, path, "findings", "next_cursor", {"limit": str(limit), **params}, 99)
            for finding in page
        ]
        assert [finding["day"] for finding in findings] == expected
    mine = first_cursor(owner, "/v1/workspace/reconciliation", **whole)
    assert_refused(owner.get("/v1/workspace/reconciliation", cursor=mine, **recent))
    other = new_owner(stack, api, "owner-paging-other")
    keys = keys_cursor(owner)
    refuses_hostile_cursors(owner, other, "/v1/workspace/reconciliation", mine, whole, keys)


def test_rate_cards_put_by_50_clients_list_once_by_id(owner: Workspace, stack: Any, api: httpx.Client) -> None:
    card = {"name": "standard", "currency": "USD", "markup_percent": "20"}
    ids = [f"card-{n:04d}" for n in range(230)]

    def put(card_id: str) -> None:
        response = owner.api.put(
            f"/v1/workspace/rate-cards/{card_id}", json=card, headers={"Authorization": f"Bearer {owner.token}"}
        )
        assert response.status_code == 200, response.text

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        list(pool.map(put, ids))
    for limit in (7, 100):
        paged_ids(owner, "/v1/workspace/rate-cards", "rate_cards", lambda item: item["rate_card_id"], ids, limit)
    answer = owner.get("/v1/workspace/rate-cards").json()
    assert [item["rate_card_id"] for item in answer["rate_cards"]] == ids[:100] and answer["next_cursor"]
    other = new_owner(stack, api, "owner-paging-cards")
    cursor = first_cursor(owner, "/v1/workspace/rate-cards")
    refuses_hostile_cursors(owner, other, "/v1/workspace/rate-cards", cursor, {}, keys_cursor(owner))
    for limit in ("0", "101", "x"):
        response = owner.get("/v1/workspace/rate-cards", limit=limit)
        assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == "limit"
