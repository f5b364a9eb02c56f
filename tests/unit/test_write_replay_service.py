"""The record of an owners' write (docs: Concepts › Idempotency): run once, replayed, refused for
another request, released when the write fails, taken over when its request died."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.recorded_writes import CLAIM_SECONDS, request_fingerprint
from costtrack_service.services.write_replays import WriteReplayService
from costtrack_tools.memory_store import MemoryStore

FIRST = request_fingerprint("POST", "/v1/workspace/budgets", {}, {"amount": "1", "name": "a"})


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 28, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def made(calls: list[int]) -> Callable[[], tuple[int, dict[str, str]]]:
    def write() -> tuple[int, dict[str, str]]:
        calls.append(1)
        return 201, {"budget_id": f"bud_{len(calls)}"}

    return write


def test_the_fingerprint_is_the_request_not_its_spelling() -> None:
    same = request_fingerprint("POST", "/v1/workspace/budgets", {}, {"name": "a", "amount": "1"})
    assert same == FIRST
    assert request_fingerprint("POST", "/v1/workspace/budgets", {}, {"amount": "2", "name": "a"}) != FIRST
    assert request_fingerprint("POST", "/v1/workspace/webhooks", {}, {"amount": "1", "name": "a"}) != FIRST


def test_a_write_runs_once_and_its_retries_get_its_answer() -> None:
    calls: list[int] = []
    service = WriteReplayService(MemoryStore(), Clock())
    first = service.answer("w1", "k", FIRST, made(calls))
    again = service.answer("w1", "k", FIRST, made(calls))
    assert (first.status, first.body, first.replayed) == (201, {"budget_id": "bud_1"}, False)
    assert (again.status, again.body, again.replayed) == (201, {"budget_id": "bud_1"}, True)
    assert calls == [1]
    other_workspace = service.answer("w2", "k", FIRST, made(calls))
    assert not other_workspace.replayed and calls == [1, 1]


def test_the_same_key_for_another_request_is_refused() -> None:
    service = WriteReplayService(MemoryStore(), Clock())
    service.answer("w1", "k", FIRST, made([]))
    with pytest.raises(ApiError) as refused:
        service.answer("w1", "k", "another", made([]))
    assert refused.value.code == "IDEMPOTENCY_KEY_REUSED"


def test_a_failed_write_records_nothing_so_its_retry_runs() -> None:
    service = WriteReplayService(MemoryStore(), Clock())

    def fails() -> tuple[int, dict[str, str]]:
        raise ApiError("UNAVAILABLE", "try again")

    with pytest.raises(ApiError):
        service.answer("w1", "k", FIRST, fails)
    calls: list[int] = []
    assert not service.answer("w1", "k", FIRST, made(calls)).replayed and calls == [1]


def test_a_live_claim_is_in_progress_and_a_lapsed_one_is_taken_over() -> None:
    store, clock = MemoryStore(), Clock()
    service = WriteReplayService(store, clock)
    until = (clock.now + timedelta(seconds=CLAIM_SECONDS)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert store.claim_write("w1", "k", FIRST, until) is None  # a request that died after claiming
    with pytest.raises(ApiError) as running:
        service.answer("w1", "k", FIRST, made([]))
    assert running.value.code == "CONFLICT" and running.value.retry_after == 1
    clock.now += timedelta(seconds=CLAIM_SECONDS + 1)
    calls: list[int] = []
    assert not service.answer("w1", "k", FIRST, made(calls)).replayed and calls == [1]
    assert service.answer("w1", "k", FIRST, made(calls)).replayed and calls == [1]
