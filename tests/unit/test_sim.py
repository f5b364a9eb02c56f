"""The simulation of AWS at scale (``costtrack_tools.sim``), a fast slice: the virtual clock, the
simulated DynamoDB's rules, and one workspace's allowance running out under load (``make
chaos`` runs 10,000 events/s; ``make bench`` 10,000 to 100,000)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from costtrack_tools.sim import workload as sim_workload
from costtrack_tools.sim.clock import Hub
from costtrack_tools.sim.dynamo import SimDynamo, SimRules
from costtrack_tools.sim.workload import Workload, simulate


def test_tasks_run_in_virtual_time_order() -> None:
    hub = Hub()
    seen: list[tuple[str, float]] = []

    def task(name: str, pauses: list[float]) -> None:
        for pause in pauses:
            hub.sleep(pause)
            seen.append((name, hub.now))

    hub.spawn(lambda: task("a", [0.5, 1.0]))
    hub.spawn(lambda: task("b", [0.7]), at=0.1)
    hub.run()
    assert [name for name, _ in seen] == ["a", "b", "a"]
    assert [at for _, at in seen] == pytest.approx([0.5, 0.8, 1.5])
    with pytest.raises(RuntimeError):
        hub.sleep(1)  # outside a task


def test_the_allowance_runs_out_exactly_with_no_wrong_refusal_and_no_loss() -> None:
    result = simulate(Workload(rate=2_000, seconds=2.0, allowance=2_400))
    assert result.offered > result.allowance  # it ran out mid-run
    assert result.refused > 0
    assert result.accepted_minus_allowance == 0
    assert result.wrong_refusals == 0
    assert result.lost == 0
    assert result.stored == result.rollup_events == result.accepted
    assert result.conflicts + result.survey_conflicts > 0  # functions met on the shards
    assert 2.0 <= result.wcu_per_event < 3.0  # 2 per event item, its share of a time page and shared rows


def test_a_partition_over_its_write_units_throttles_and_nothing_is_lost_or_overspent() -> None:
    rules = SimRules(partition_wcu_per_s=120.0)  # 32 event partitions: ~3,800 units a second in all
    result = simulate(Workload(rate=1_500, seconds=2.0, allowance=2_000, rules=rules, max_retries=50))
    assert result.throttles > 0
    assert result.sdk_503s > 0
    assert result.accepted_minus_allowance == 0
    assert result.lost == 0
    assert result.stored == result.rollup_events


def test_a_cold_table_throttles_until_its_capacity_allows() -> None:
    cold = SimRules(table_initial_wcu_per_s=2_000.0, ramp_delay_s=1.0)
    result = simulate(Workload(rate=1_500, seconds=3.0, allowance=10**6, rules=cold, max_retries=50))
    assert result.throttles > 0
    assert result.lost == 0
    assert result.accepted == result.offered


def test_the_checks_catch_a_store_that_overspends(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store whose shards never run short (a broken condition) lets more through than the
    plan allows, and the simulation says so."""

    class Overspending(SimDynamo):
        def _available(self, workspace_id: str, period: str, charge: object, shard: int) -> int:
            return 10**6

    monkeypatch.setattr(sim_workload, "SimDynamo", Overspending)
    result = simulate(Workload(rate=1_000, seconds=1.0, allowance=300))
    assert result.accepted_minus_allowance > 0


def test_workloads_are_reproducible() -> None:
    workload = Workload(rate=1_000, seconds=1.0, allowance=600)
    first, second = simulate(workload), simulate(workload)
    assert first.summary() == second.summary()
    assert simulate(replace(workload, seed=8)).summary() != first.summary()
