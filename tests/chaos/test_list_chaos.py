"""The event list (and the key list, below) paged to its end while clients keep writing, through the AWS-rules front
(``make test``: 300 events; ``make chaos``, ``COSTTRACK_CHAOS=full``: 3,000). 50 clients write
events alone and in batches (a batch's events share one millisecond and one time page), then
each listing pages through at several limits while more events arrive between its pages: an
event written during the listing may be listed or not, but every event written before it is
listed exactly once, nothing is listed twice, the order is newest first and the last page's
``next_cursor`` is null."""

from __future__ import annotations

import itertools
import os
from typing import Any

import httpx
import pytest

from tests.support.http_workspace import Workspace
from tests.support.list_paging import CLIENTS, concurrently, created_keys, event_body, newest_first, page_through

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"


@pytest.mark.timeout(3600 if FULL else 600)
def test_the_event_list_pages_to_its_end_while_events_arrive(local_stack: Any) -> None:
    workspace = local_stack.store.workspaces.create_workspace("paging-chaos", tier="paid", included_events=1_000_000)
    secret, _ = local_stack.store.keys.create_key(workspace.workspace_id)
    count = 3000 if FULL else 300
    numbers = itertools.count()
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as api:
        owner = Workspace(api, local_stack, workspace.workspace_id, secret)
        url = str(api.base_url)
        alone = [event_body(next(numbers)) for _ in range(count // 3)]
        batched = [event_body(next(numbers)) for _ in range(count - len(alone))]
        written = concurrently(url, secret, alone, CLIENTS) + concurrently(url, secret, batched, CLIENTS, batch=20)

        def write_more(asked: int) -> None:  # a lone event and a batch between two pages
            written.extend(concurrently(url, secret, [event_body(next(numbers))], 1))
            written.extend(concurrently(url, secret, [event_body(next(numbers)) for _ in range(5)], 1, batch=5))

        for limit, filters in (("100", {}), ("37", {}), ("200", {"feature": "f3"})):
            before = list(written)  # what was written before this listing, the earlier ones' writes too
            matching = [event for event in before if all(event[name] == value for name, value in filters.items())]
            most = len(matching) // int(limit) + 2
            pages = list(
                page_through(
                    owner.get,
                    "/v1/workspace/events",
                    "events",
                    "next_cursor",
                    {"limit": limit, **filters},
                    most,
                    write_more,
                )
            )
            listed = [event for page in pages for event in page]
            ids = [event["event_id"] for event in listed]
            assert len(ids) == len(set(ids)), (limit, filters, "an event was listed twice")
            missing = {event["event_id"] for event in matching} - set(ids)
            assert not missing, (limit, filters, f"{len(missing)} events written before the listing are missing")
            assert ids == newest_first(listed), (limit, filters)


@pytest.mark.timeout(3600 if FULL else 600)
def test_the_key_list_pages_to_its_end_while_keys_are_created(local_stack: Any) -> None:
    """Keys from 50 clients at once (``make test``: 60; full: 600), then the key list paged at
    several limits while keys are created between its pages: every key created before the
    listing is listed once, oldest first (ties by key id), and the last cursor is null."""
    workspace = local_stack.store.workspaces.create_workspace("keys-chaos", tier="paid", included_events=10)
    secret, _ = local_stack.store.keys.create_key(workspace.workspace_id, name="sender")
    count = 600 if FULL else 60
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as api:
        owner = Workspace(api, local_stack, workspace.workspace_id, secret)
        created = created_keys(owner, count)
        created += owner.get("/v1/workspace/keys", limit="1").json()["keys"]  # the sender

        def write_more(asked: int) -> None:  # two keys at once between two pages
            created.extend(created_keys(owner, 2, clients=2))

        for limit in (7, 50, 200):
            before = {key["key_id"] for key in created}
            # Keys created while paging come last, so they lengthen the listing: 2 a page.
            most = int((len(before) / limit + 2) * limit / (limit - 2)) + 1
            pages = list(
                page_through(
                    owner.get, "/v1/workspace/keys", "keys", "next_cursor", {"limit": str(limit)}, most, write_more
                )
            )
            listed = [key for page in pages for key in page]
            ids = [key["key_id"] for key in listed]
            assert len(ids) == len(set(ids)), (limit, "a key was listed twice")
            missing = before - set(ids)
            assert not missing, (limit, f"{len(missing)} keys created before the listing are missing")
            assert listed == sorted(listed, key=lambda key: (key["created_at"], key["key_id"])), limit
