"""What makes a batched event cheap must not change what it costs or how it is counted:
monotonic event ids, one pricing resolution per model and request, rollups summed per chunk."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from costtrack_service import catalogue
from costtrack_service.domain import ids
from costtrack_service.domain.pricing.cost import counts_of
from costtrack_service.domain.pricing.overrides import Override
from costtrack_service.domain.pricing.pricer import Call, Pricer
from costtrack_service.domain.usage import rollup_deltas, summed_deltas
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_tools.memory_store import MemoryStore

AT = datetime(2026, 11, 22, 12, tzinfo=UTC)


def test_event_ids_of_one_millisecond_are_unique_and_sorted() -> None:
    made = [ids.new_event_id(1_700_000_000_000) for _ in range(1000)]
    assert len(set(made)) == 1000
    assert made == sorted(made)
    assert all(len(made_id) == len("evt_") + 26 for made_id in made)
    later = ids.new_event_id(1_700_000_000_001)
    assert later > made[-1]


def _random_part(event_id: str) -> int:
    return int(event_id[-16:].translate(_DECODE), 32)  # the last 16 digits: 80 random bits


_DECODE = str.maketrans("0123456789ABCDEFGHJKMNPQRSTVWXYZ", "0123456789abcdefghijklmnopqrstuv")


def test_within_a_millisecond_ids_count_up_and_a_forked_child_draws_afresh() -> None:
    first = ids.new_event_id(5)
    assert _random_part(ids.new_event_id(5)) == _random_part(first) + 1
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report its next id of the same millisecond, then leave at once
        os.write(write, ids.new_event_id(5).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    in_child = os.read(read, 100).decode()
    os.close(read)
    in_parent = ids.new_event_id(5)
    assert _random_part(in_parent) == _random_part(first) + 2
    assert in_child != in_parent  # the parent's next id, had the child gone on counting


def _pricer() -> Pricer:
    return Pricer(catalogue.book, catalogue.registry(), catalogue.flags_for)


def _gpt5(prompt: int) -> Call:
    return Call("openai", "gpt-5", counts_of(prompt, 100, 0, 0, 0, None), None)


def test_a_remembered_resolution_still_prices_each_events_counts() -> None:
    pricer = _pricer()
    costs = [pricer.price(_gpt5(prompt), AT).cost for prompt in (1_000, 2_000, 1_000)]
    assert costs[0] == costs[2] != costs[1]
    assert costs[0] == Decimal("0.00225")  # 1,000 × $1.25/M + 100 × $10/M


def test_new_overrides_are_seen_at_the_same_moment() -> None:
    pricer = _pricer()
    before = pricer.price(_gpt5(1_000), AT, [])
    half = Override("ovr_1", "ws", "openai", "gpt-5", AT - timedelta(days=1), None, discount_percent=Decimal(50))
    after = pricer.price(_gpt5(1_000), AT, [half])
    assert after.cost * 2 == before.cost
    assert after.override is half


def test_a_later_moment_resolves_again() -> None:
    pricer = _pricer()
    window = Override("ovr_1", "ws", "openai", "gpt-5", AT + timedelta(seconds=1), None, discount_percent=Decimal(50))
    overrides = [window]
    assert pricer.price(_gpt5(1_000), AT, overrides).override is None
    assert pricer.price(_gpt5(1_000), AT + timedelta(seconds=1), overrides).override is window


def test_rollups_summed_per_chunk_equal_the_sum_of_each_events() -> None:
    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_1", "t", Tier.PAID, "active", 10_000, 0, None))
    key = store.add_key("ws_1")
    service = IngestService(store)
    batch = [
        {
            "idempotency_key": f"k-{n}",
            "event": {
                "provider": "openai",
                "model": ["gpt-5", "gpt-4o", "no-such-model"][n % 3],
                "feature": ["chat", "search"][n % 2],
                "customer_id": f"c{n % 4}",
                "prompt_tokens": 100 + n,
                "completion_tokens": n,
            },
        }
        for n in range(100)
    ]
    body = json.dumps({"batch": batch}).encode()
    result = ingest(service, IngestRequest({"authorization": f"Bearer {key}"}, body))
    records = [outcome.record for outcome in result.outcomes if outcome.record is not None]
    assert len(records) == 100
    expected: dict[object, list[Decimal | int]] = {}
    for record in records:
        for row, counts in rollup_deltas(record).items():
            total = expected.setdefault(row, [0, 0, Decimal(0), 0])
            total[0] += counts.events
            total[1] += counts.tokens
            total[2] += counts.cost
            total[3] += counts.unknown_model_events
    summed = summed_deltas(records)
    assert {row: [c.events, c.tokens, c.cost, c.unknown_model_events] for row, c in summed.items()} == expected
    stored = {row: counts for (workspace_id, row), counts in store.stored_rollups.items() if workspace_id == "ws_1"}
    assert {row: [c.events, c.tokens, c.cost, c.unknown_model_events] for row, c in stored.items()} == expected
