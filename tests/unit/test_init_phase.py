"""The init phase pauses the garbage collector and freezes what it built, even when init fails."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from costtrack_service.handlers.init_phase import init_phase


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()


def test_init_runs_without_collections_and_its_objects_are_frozen() -> None:
    before = gc.get_stats()[0]["collections"]
    with init_phase():
        assert not gc.isenabled()
        built = [[index] for index in range(50_000)]  # far past the first generation's threshold
    assert gc.get_stats()[0]["collections"] == before
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)


def test_a_failed_init_leaves_the_collector_running() -> None:
    with pytest.raises(RuntimeError), init_phase():
        raise RuntimeError("init failed")
    assert gc.isenabled() and gc.get_freeze_count() > 0
