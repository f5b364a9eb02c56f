"""Under load the atomic survey (one ``TransactGetItems`` of 65 items) meets writes in flight and
is cancelled; a request that needed one per new function (and per stale shard) answered 503
about once a hundred requests at 10,000 events/s in the simulation. So the committer peeks first
(plain consistent reads, which no write cancels) and surveys only when the peek did not help:
the survey alone may decide a refusal. A write that met a write in flight leases into its own
shard only (not into every empty one: 33 items), and conflict pauses are capped."""

from __future__ import annotations

import pytest

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.chunks import Chunk, ChunkRejected, Survey
from costtrack_service.domain.ingest.commit import Committer
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.domain.store_errors import SurveyConflict
from costtrack_service.domain.workspaces.allowance import Balances, plan_payment
from costtrack_service.domain.workspaces.plans import Charge, Tier, WorkspaceState
from costtrack_service.domain.workspaces.shards import SHARDS
from costtrack_service.edge.http_event import http_status
from costtrack_service.services.event_ingest import IngestService
from tests.support.ingest_world import EVENT, ConflictedSurveys, World, post

PERIOD = "2026-11"


def test_a_new_function_peeks_and_needs_no_survey_while_writes_are_in_flight() -> None:
    """Every survey meets a write in flight; a second function still spends what the first
    leased (before the peek, it surveyed and answered 503)."""
    world = World()
    _, key = world.keyed_workspace(included=SHARDS * 10)
    post(world.function(), key, {**EVENT, "idempotency_key": "first"})
    peeks: list[str] = []
    peek = world.store.events.peek

    def counted(workspace_id: str, period: str) -> Survey:
        peeks.append(workspace_id)
        return peek(workspace_id, period)

    def conflicted(workspace_id: str, period: str) -> Survey:
        raise SurveyConflict("TransactGetItems: TransactionConflict")

    world.store.peek = counted  # type: ignore[method-assign]
    world.store.survey = conflicted  # type: ignore[method-assign]
    second = world.function()
    for number in range(5):
        result = post(second, key, {**EVENT, "idempotency_key": f"second-{number}"})
        assert result.outcomes[0].record is not None
    assert len(peeks) == 1  # once, when the function first met the workspace's month


def test_a_peek_that_shows_nothing_is_never_a_refusal() -> None:
    """Plain reads may see a lease's workspace item after it and its shards before it: the
    peek finds nothing, the survey finds the lease, and the event is accepted."""
    world = ConflictedSurveys(conflicts=0)
    _, key = world.keyed_workspace(included=SHARDS)
    post(world.function(), key, {**EVENT, "idempotency_key": "first"})
    result = post(world.function(), key, {**EVENT, "idempotency_key": "second"})
    assert result.outcomes[0].record is not None
    assert world.surveys == 1


def test_the_allowance_gone_is_refused_after_a_survey() -> None:
    world = ConflictedSurveys(conflicts=0)
    _, key = world.keyed_workspace(included=1)
    post(world.function(), key, {**EVENT, "idempotency_key": "first"})
    with pytest.raises(ApiError) as refused:
        post(world.function(), key, {**EVENT, "idempotency_key": "second"})
    assert http_status(refused.value) == 429
    assert world.surveys == 1


def central(**changes: object) -> WorkspaceState:
    state = WorkspaceState("ws", "test", Tier.FREE, "active", 64_000, 0, PERIOD)
    return state if not changes else WorkspaceState(**{**state.__dict__, **changes})  # type: ignore[arg-type]


def test_a_cold_lease_fills_every_empty_shard_unless_told_not_to() -> None:
    balances = Balances(PERIOD, dict.fromkeys(((Charge.INCLUDED, index) for index in range(SHARDS)), 0))
    cold = plan_payment(central(), balances, 90, 3, surveyed=False)
    assert len(cold.spends) == SHARDS and cold.covered == 90
    alone = plan_payment(central(), balances, 90, 3, surveyed=False, refill=False)
    assert [(spend.shard, spend.take) for spend in alone.spends] == [(3, 90)]
    assert alone.spends[0].lease >= 90


class Conflicting(World):
    """Every write meets a write in flight until ``conflicts`` have; the chunks tried are kept."""

    def __init__(self, conflicts: int) -> None:
        super().__init__()
        self.left = conflicts
        self.chunks: list[Chunk] = []
        write = self.store.events.write_chunk

        def conflicted(chunk: Chunk) -> ChunkRejected | None:
            self.chunks.append(chunk)
            if self.left > 0:
                self.left -= 1
                return ChunkRejected(conflict=True)
            return write(chunk)

        self.store.write_chunk = conflicted  # type: ignore[method-assign]
        self.pauses: list[float] = []

    def function(self):  # type: ignore[no-untyped-def]

        return IngestService(
            self.store, clock=lambda: self.now, monotonic=lambda: self.elapsed, sleep=self.pauses.append
        )


def test_after_a_conflict_a_lease_touches_one_shard_and_pauses_are_capped() -> None:
    settings = IngestSettings()
    world = Conflicting(conflicts=settings.max_conflict_retries)
    _, key = world.keyed_workspace(included=64_000)
    result = post(world.function(), key, {**EVENT, "idempotency_key": "first"})
    assert result.outcomes[0].record is not None
    first, *retries = world.chunks
    assert len(first.payment.spends) == SHARDS  # a cold workspace: one lease for every shard
    assert all(len(chunk.payment.spends) == 1 for chunk in retries)  # then its own shard only
    assert len(world.pauses) == settings.max_conflict_retries
    assert max(world.pauses) <= settings.conflict_backoff_cap_seconds
    assert world.store.stored_workspaces[result.outcomes[0].record.workspace_id].included_leased < 64_000


@pytest.mark.parametrize("attempt", [1, 5, 10, 30])
def test_a_conflict_pause_is_full_jitter_under_the_cap(attempt: int) -> None:
    settings = IngestSettings()
    committer = Committer(World().store, None, settings, sleep=lambda _: None)  # type: ignore[arg-type]
    pauses = [committer._backoff(attempt) for _ in range(200)]
    assert max(pauses) <= min(settings.conflict_backoff_seconds * 2**attempt, settings.conflict_backoff_cap_seconds)
    assert min(pauses) >= 0
