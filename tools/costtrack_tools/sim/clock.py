"""A virtual clock for cooperative tasks (greenlets): ``sleep`` parks the caller until the
clock reaches its wake-up time; :meth:`Hub.run` advances the clock from one wake-up to the next.
Only one task runs at a time, so a simulated function's code runs between two waits as if it
took no time (its CPU is not modelled: the store's latencies are)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from greenlet import greenlet  # type: ignore[import-untyped]

#: Virtual time 0: mid-month, so one run stays in one billing period.
EPOCH = datetime(2026, 11, 10, tzinfo=UTC)


class Hub:
    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, greenlet]] = []
        self._order = itertools.count()
        self._loop: greenlet | None = None

    def spawn(self, task: Callable[[], None], at: float | None = None) -> None:
        """Start ``task`` at virtual time ``at`` (now by default)."""
        runner = greenlet(task, parent=self._loop or greenlet.getcurrent())
        heapq.heappush(self._queue, (self.now if at is None else at, next(self._order), runner))

    def sleep(self, seconds: float) -> None:
        """Park the running task for ``seconds`` of virtual time."""
        current = greenlet.getcurrent()
        if self._loop is None or current is self._loop:
            raise RuntimeError("sleep() outside a task")
        heapq.heappush(self._queue, (self.now + max(0.0, seconds), next(self._order), current))
        self._loop.switch()

    def monotonic(self) -> float:
        return self.now

    def clock(self) -> datetime:
        return EPOCH + timedelta(seconds=self.now)

    def run(self, until: float = float("inf")) -> None:
        """Run tasks in virtual-time order until none is left (or the clock would pass ``until``)."""
        self._loop = greenlet.getcurrent()
        try:
            while self._queue and self._queue[0][0] <= until:
                at, _, task = heapq.heappop(self._queue)
                self.now = max(self.now, at)
                task.parent = self._loop
                task.switch()  # an exception in a task propagates here and stops the run
        finally:
            self._loop = None
