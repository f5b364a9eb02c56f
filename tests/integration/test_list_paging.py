"""The owners' paginated lists paged to their end after many concurrent writes, over real
sockets, on DynamoDB Local and through the AWS-rules front: every item once, in the list's
documented order, a null cursor on the last page, and at most ``items / limit + 2`` pages asked.
The event list's case is a new user's: 800 events from 50 clients, listed 100 at a time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.support.http_workspace import Workspace
from tests.support.list_paging import (
    CLIENTS,
    PAGING_STACKS,
    concurrently,
    event_body,
    newest_first,
    page_through,
    paging_stack,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=PAGING_STACKS)
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from paging_stack(request, tmp_path_factory, "paging-front-")


@pytest.fixture
def owner(stack: Any) -> Iterator[Workspace]:
    workspace = stack.store.workspaces.create_workspace("paging", tier="paid", included_events=100_000)
    secret, _ = stack.store.keys.create_key(workspace.workspace_id)
    with httpx.Client(base_url=stack.state["api_url"], timeout=60) as api:
        yield Workspace(api, stack, workspace.workspace_id, secret)


@pytest.mark.timeout(900)
def test_800_events_from_50_clients_list_in_8_pages_of_100(owner: Workspace) -> None:
    started = time.monotonic()
    sent = concurrently(str(owner.api.base_url), owner.key, [event_body(n) for n in range(800)], CLIENTS)
    print(f"sent 800 in {time.monotonic() - started:.1f}s")
    pages = list(page_through(owner.get, "/v1/workspace/events", "events", "next_cursor", {"limit": "100"}, 20))
    assert [len(page) for page in pages] == [100] * 8
    print(f"listed in {time.monotonic() - started:.1f}s")
    listed = [event for page in pages for event in page]
    assert [event["event_id"] for event in listed] == newest_first(sent)
    for limit, filters in (("33", {}), ("200", {}), ("50", {"feature": "f1"})):
        matching = [event for event in sent if all(event[name] == value for name, value in filters.items())]
        pages = list(
            page_through(owner.get, "/v1/workspace/events", "events", "next_cursor", {"limit": limit, **filters}, 50)
        )
        assert [event["event_id"] for page in pages for event in page] == newest_first(matching), (limit, filters)
        assert len(pages) <= len(matching) // int(limit) + 2, (limit, filters, len(pages))


def test_an_event_cursor_is_refused_with_other_filters_or_in_another_workspace(owner: Workspace, stack: Any) -> None:
    concurrently(str(owner.api.base_url), owner.key, [event_body(n) for n in range(6)], 3)
    cursor = owner.get("/v1/workspace/events", limit="1", feature="f1").json()["next_cursor"]
    assert cursor
    assert owner.get("/v1/workspace/events", limit="1", feature="f1", cursor=cursor).status_code == 200
    other = stack.store.workspaces.create_workspace("other", tier="paid", included_events=10)
    theirs = Workspace(owner.api, stack, other.workspace_id, owner.key)
    for response in (
        owner.get("/v1/workspace/events", limit="2", cursor=cursor),
        owner.get("/v1/workspace/events", limit="2", feature="f2", cursor=cursor),
        theirs.get("/v1/workspace/events", limit="2", feature="f1", cursor=cursor),
        owner.get("/v1/workspace/runs", cursor=cursor),
    ):
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "INVALID_PAYLOAD" and error["details"][0]["field"] == "cursor"


@pytest.mark.timeout(600)
def test_runs_written_by_50_clients_list_once_most_expensive_first(owner: Workspace) -> None:
    # 300 runs of one call at three prices: long ties, across pages and the cost index's partitions
    bodies = [event_body(n, trace_id=f"run-{n:04d}", prompt_tokens=1000 * (n % 3 + 1)) for n in range(300)]
    sent = concurrently(str(owner.api.base_url), owner.key, bodies, CLIENTS)
    by_key = {body["metadata"]["n"]: body for body in bodies}
    costs = {by_key[answer["idempotency_key"]]["trace_id"]: Decimal(answer["cost"]) for answer in sent}
    by_trace = {body["trace_id"]: body for body in bodies}
    for limit, filters in (("7", {}), ("100", {}), ("20", {"feature": "f2"})):
        wanted = sorted(
            (trace for trace in by_trace if all(by_trace[trace][name] == value for name, value in filters.items())),
            key=lambda trace: (-costs[trace], trace),
        )
        pages = list(page_through(owner.get, "/v1/workspace/runs", "runs", "cursor", {"limit": limit, **filters}, 80))
        assert [run["trace_id"] for page in pages for run in page] == wanted, (limit, filters)
        assert len(pages) <= len(wanted) // int(limit) + 2, (limit, filters, len(pages))
