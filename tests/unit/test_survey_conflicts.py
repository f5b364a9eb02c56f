"""The allowance survey (one ``TransactGetItems``) may meet a write in flight and be cancelled
(``SurveyConflict``): the committer reads again after a jittered pause, and answers 503 only
when it keeps meeting one."""

from __future__ import annotations

import pytest

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.workspaces.shards import SHARDS
from costtrack_service.edge.http_event import http_status
from costtrack_service.services.event_ingest import IngestService
from tests.support.ingest_world import EVENT, ConflictedSurveys, post


def surveying(world: ConflictedSurveys) -> tuple[IngestService, str]:
    """A second function whose first event needs a survey: the first leased the whole plan."""
    _, key = world.keyed_workspace(included=SHARDS)
    post(world.function(), key, {**EVENT, "idempotency_key": "first"})
    assert world.surveys == 0
    return world.function(), key


def test_a_conflicted_survey_is_read_again_after_a_pause() -> None:
    world = ConflictedSurveys(conflicts=3)
    second, key = surveying(world)
    result = post(second, key, {**EVENT, "idempotency_key": "second"})
    assert result.outcomes[0].record is not None and not result.outcomes[0].replayed
    assert world.surveys == 4
    assert len(world.pauses) == 3
    assert all(0 <= pause <= 0.01 * 2**attempt for attempt, pause in enumerate(world.pauses, start=1))


def test_a_survey_that_keeps_conflicting_is_a_503_never_a_refusal() -> None:
    world = ConflictedSurveys(conflicts=1000)
    second, key = surveying(world)
    with pytest.raises(ApiError) as raised:
        post(second, key, {**EVENT, "idempotency_key": "second"})
    assert (raised.value.code, http_status(raised.value)) == ("UNAVAILABLE", 503)
    assert world.surveys == second.settings.max_conflict_retries + 1
