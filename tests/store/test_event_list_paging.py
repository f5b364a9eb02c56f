"""The dashboard's event list paged to its end over many time pages (``store/events_by_time.py``, moto):
more pages in one minute than one read goes through, many events in one millisecond, pages whose
entries span their minute, and events written while the listing goes on. Every visible event is
listed once, newest first, the last page ends the list (no cursor), and the number of pages
asked stays within ``events / limit + 2``."""

from __future__ import annotations

import random

import pytest

from costtrack_service.domain.ingest.records import EventQuery, EventRecord
from costtrack_service.domain.ingest.visibility import VISIBLE
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.store import events_by_time as page_reads
from costtrack_service.store.dynamo import DynamoStore
from tests.support.page_events import DAY, HIDDEN, made, newest_first, written

#: moto answers a Query in time linear in the table: these walks take about a minute on a loaded host.
pytestmark = pytest.mark.timeout(300)

MINUTE = f"{DAY}T10:07"
#: The times of the crowded minute: about eight transactions in each millisecond.
MILLISECONDS = ("05.250", "05.251", "05.999", "06.000", "31.000", "31.001", "31.500", "59.997", "59.998", "59.999")


def paged(
    store: DynamoStore, workspace_id: str, limit: int, filters: dict[str, str] | None = None, most: int = 1000
) -> tuple[list[EventRecord], int]:
    """Every page of the list, following its cursors; and how many pages were asked."""
    found: list[EventRecord] = []
    after = None
    for asked in range(1, most + 1):
        page, after = store.event_list.list_visible_events(EventQuery(workspace_id, limit, after, filters or {}))
        assert len(page) <= limit
        found += page
        if after is None:
            return found, asked
    raise AssertionError(f"the list did not end within {most} pages")


def crowded_minute(store: DynamoStore, count: int, *, spanning: bool = False) -> tuple[str, list[EventRecord]]:
    """``count`` transactions in one minute over five page partitions: most put one event (as
    concurrent single-event clients do), at a few milliseconds each; every tenth puts three
    (``spanning``: one at the minute's start, a page whose entries span the minute)."""
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100_000)
    ws = workspace.workspace_id
    rng = random.Random(48)
    stored: list[EventRecord] = []
    n = 0
    for transaction in range(count):
        times = [f"{MINUTE}:{rng.choice(MILLISECONDS)}Z"]
        if transaction % 10 == 0:  # a batch: its events share the request's time
            times *= 3
            if spanning:
                times[0] = f"{MINUTE}:00.000Z"
        records = []
        for at in times:
            records.append(made(ws, n, at, visibility=HIDDEN if n % 11 == 0 else VISIBLE))
            n += 1
        assert written(store, workspace, records, shard=transaction % 5) is None
        stored += records
    return ws, [record for record in stored if record.visibility.dashboard_visible]


def test_a_minute_of_more_pages_than_one_read_takes_lists_every_event_once(
    store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page_reads, "MAX_PAGES_READ", 20)  # the walk of 400, at a twentieth of the size
    ws, visible = crowded_minute(store, 80)
    assert len(visible) > 80
    for limit in (5, 9):  # at most half the pages one read takes, as 200 of 400
        found, asked = paged(store, ws, limit)
        assert [record.event_id for record in found] == newest_first(visible), limit
        assert asked <= len(visible) // limit + 2, (limit, asked)
    matching = [record for record in visible if record.event.feature == "f1"]
    found, asked = paged(store, ws, 5, {"feature": "f1"})
    assert [record.event_id for record in found] == newest_first(matching)
    assert asked <= len(matching) // 5 + 2


def test_pages_spanning_a_crowded_minute_list_every_event_once(
    store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page holding an entry from the minute's start is read again by each page of the list
    until that entry is given out, so a page may stop short after ``MAX_PAGES_READ`` pages: more
    pages are asked, never an event lost or repeated, and the list ends."""
    monkeypatch.setattr(page_reads, "MAX_PAGES_READ", 20)
    ws, visible = crowded_minute(store, 60, spanning=True)
    found, asked = paged(store, ws, 9)
    assert [record.event_id for record in found] == newest_first(visible)
    assert asked <= len(visible)


def test_more_pages_in_one_millisecond_than_one_read_takes_are_read_through(
    store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page_reads, "MAX_PAGES_READ", 4)
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100_000)
    ws = workspace.workspace_id
    stored = [made(ws, n, f"{MINUTE}:05.250Z") for n in range(30)]
    for n, record in enumerate(stored):
        assert written(store, workspace, [record], shard=n % 3) is None
    for limit in (3, 30):
        found, asked = paged(store, ws, limit)
        assert [record.event_id for record in found] == newest_first(stored), limit
        assert asked <= len(stored) // limit + 2


def test_events_written_while_the_list_is_read_never_hide_or_repeat_earlier_ones(
    store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page_reads, "MAX_PAGES_READ", 20)
    ws, visible = crowded_minute(store, 60, spanning=True)
    workspace = store.events.get_workspace(ws, consistent=True)
    assert workspace is not None
    found: list[EventRecord] = []
    after = None
    n = 10_000
    for asked in range(1, 200):
        page, after = store.event_list.list_visible_events(EventQuery(ws, 9, after, {}))
        found += page
        if after is None:
            break
        # between two pages: events newer than all, in the same minute, and at the minute's start
        late = [
            made(ws, n, f"{MINUTE}:59.999Z"),
            made(ws, n + 1, f"{MINUTE}:00.000Z"),
            made(ws, n + 2, f"{MINUTE}:05.250Z"),
        ]
        assert written(store, workspace, late, shard=asked % 5) is None
        n += 3
    else:
        raise AssertionError("the list did not end")
    ids = [record.event_id for record in found]
    assert len(ids) == len(set(ids)), "an event was listed twice"
    assert set(newest_first(visible)) <= set(ids), "an event written before the listing is missing"
    assert ids == newest_first(found)  # newest first, late ones in their places
