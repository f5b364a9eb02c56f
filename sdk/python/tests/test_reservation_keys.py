"""A reservation's ``Idempotency-Key`` groups it with the process's other reservations of the same
moment (``grp:<group>:<uuid>``): at most ``GROUP_HOLDS`` a group, and a group lasts at most
``GROUP_SECONDS``, so the service places a group's holds on one ledger shard and the batch of
events that settles them writes that shard once (docs/api-rules.md#reservations)."""

from __future__ import annotations

import threading
from typing import List

import pytest

from costtrack import _keys
from costtrack._keys import GROUP_HOLDS, GROUP_SECONDS, new_reservation_key


@pytest.fixture(autouse=True)
def closed_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no open group (other tests reserve in this process too)."""
    monkeypatch.setattr(_keys, "_group", ("", GROUP_HOLDS, 0.0))


def group(key: str) -> str:
    prefix, name, rest = key.split(":", 2)
    assert prefix == "grp" and 0 < len(name) <= 64 and rest
    return name


def test_a_group_closes_after_its_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_keys.time, "monotonic", lambda: 1000.0)  # no time passes
    keys = [new_reservation_key() for _ in range(3 * GROUP_HOLDS + 1)]
    groups = [group(key) for key in keys]
    assert len(set(keys)) == len(keys)  # every key its own
    runs = [groups[n : n + GROUP_HOLDS] for n in range(0, len(groups), GROUP_HOLDS)]
    assert all(len(set(run)) == 1 for run in runs)
    assert len(set(groups)) == 4 and len(runs[-1]) == 1


def test_a_group_closes_after_its_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [2000.0]
    monkeypatch.setattr(_keys.time, "monotonic", lambda: now[0])
    first = group(new_reservation_key())
    now[0] += GROUP_SECONDS / 2
    assert group(new_reservation_key()) == first
    now[0] += GROUP_SECONDS / 2
    assert group(new_reservation_key()) != first


def test_threads_never_overfill_a_group() -> None:
    keys: List[str] = []
    lock = threading.Lock()

    def reserve() -> None:
        made = [new_reservation_key() for _ in range(200)]
        with lock:
            keys.extend(made)

    threads = [threading.Thread(target=reserve) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts: dict = {}
    for key in keys:
        counts[group(key)] = counts.get(group(key), 0) + 1
    assert len(set(keys)) == 1600 and max(counts.values()) <= GROUP_HOLDS
