"""The simulator's model of the front's timing (``costtrack_tools.sim.dynamo`` driven by a front
run's measured samples, ``costtrack_tools.sim.front_check``): a survey meets the writes in flight
when it reaches the table, half a cancelled answer's round trip after the call, not at the call;
and a cancelled survey answers in a measured time, not in the log-normal default's 4 ms (with
which retried surveys met the same transaction again and again: about twice the front's survey
conflicts)."""

from __future__ import annotations

import pytest

from costtrack_service.domain.store_errors import SurveyConflict
from costtrack_service.domain.workspaces.plans import PlanStatus, Tier, WorkspaceState
from costtrack_tools.sim.clock import Hub
from costtrack_tools.sim.dynamo import SimDynamo, SimRules

PERIOD = "2026-11"


def survey_while_held(rules: SimRules, held_for: float) -> tuple[str, float]:
    """A survey called at 0 while a transaction holds the workspace item until ``held_for``:
    whether it conflicted, and when it answered."""
    hub = Hub()
    store = SimDynamo(hub, rules)
    store.add_workspace(WorkspaceState("ws", "sim", Tier.FREE, PlanStatus.ACTIVE, 100, 0, None))
    store.held["workspaces|ws"] += 1
    seen: list[tuple[str, float]] = []

    def release() -> None:
        hub.sleep(held_for)
        store.held.subtract(["workspaces|ws"])

    def survey() -> None:
        try:
            store.events.survey("ws", PERIOD)
            seen.append(("answered", hub.now))
        except SurveyConflict:
            seen.append(("conflict", hub.now))

    hub.spawn(release)
    hub.spawn(survey)
    hub.run()
    return seen[0]


def test_a_survey_meets_the_holds_on_arrival_half_a_cancelled_round_trip_after_the_call() -> None:
    measured = SimRules(cancelled_samples=(0.2,), survey_samples=(0.3,))
    assert survey_while_held(measured, held_for=0.05) == ("answered", pytest.approx(0.3))  # arrives at 0.1
    assert survey_while_held(measured, held_for=0.15) == ("conflict", pytest.approx(0.2))


def test_a_cancelled_survey_answers_in_its_own_measured_time_when_there_is_one() -> None:
    own = SimRules(cancelled_samples=(0.2,), survey_cancelled_samples=(0.06,), survey_samples=(0.3,))
    assert survey_while_held(own, held_for=0.05) == ("conflict", pytest.approx(0.06))
    assert survey_while_held(own, held_for=0.02) == ("answered", pytest.approx(0.3))


def test_without_measured_samples_a_survey_meets_the_holds_at_the_call() -> None:
    """The default rules (the 10,000 to 100,000 events/s runs) are unchanged: no transit."""
    status, at = survey_while_held(SimRules(), held_for=0.001)
    assert status == "conflict"
    assert 0.0 < at < 0.05  # a log-normal draw around 4 ms
