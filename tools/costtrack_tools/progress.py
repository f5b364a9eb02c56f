"""Progress of the CLI's long operations (``pricing sync``, ``import``, ``add``, ``backfill``, ``export``), on stderr.

    with progress_for(args) as steps:
        steps.stage("backfill", unit="events checked")
        for record in records:
            steps.advance()

Three forms, chosen from where stderr goes: on a terminal, one line redrawn in place (a bar when
the stage's total is known, a running count when not); piped or redirected, plain lines (one when
a stage starts, then at most one every few seconds, and one when it ends); with ``--json``,
nothing, so that a script reads one JSON document from stdout and an empty stderr. A stage is
what the service's jobs report through ``costtrack_service.jobs.price_refresh.Steps``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal, TextIO

Mode = Literal["bar", "lines", "off"]

#: Piped output: at most one line per stage this often (besides its first and last).
LINE_INTERVAL = 5.0
#: A terminal: redraw at most this often.
BAR_INTERVAL = 0.1
BAR_WIDTH = 24


def choose_mode(stream: TextIO, json_output: bool) -> Mode:
    if json_output:
        return "off"
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real stream
        terminal = False
    return "bar" if terminal and os.environ.get("TERM") != "dumb" else "lines"


class Progress:
    """One operation's stages, each with a count and, when known, a total."""

    def __init__(
        self,
        stream: TextIO,
        mode: Mode,
        *,
        clock: Callable[[], float] = time.monotonic,
        line_interval: float = LINE_INTERVAL,
    ) -> None:
        self.stream = stream
        self.mode = mode
        self.clock = clock
        self.line_interval = line_interval
        self.label = ""
        self.total: int | None = None
        self.unit = ""
        self.done = 0
        self.active = False
        self.started = self.shown = 0.0

    # -- what the jobs call -----------------------------------------------------------------

    def stage(self, label: str, total: int | None = None, unit: str = "") -> None:
        """Start a stage (ending the one before)."""
        self.finish()
        self.label, self.total, self.unit, self.done = label, total, unit, 0
        self.active = True
        self.started = self.shown = self.clock()
        if self.mode == "lines":
            self._line(self._count() if total is not None else "started")
        self._draw()

    def advance(self, count: int = 1) -> None:
        if not self.active:
            return
        self.done += count
        now = self.clock()
        if self.mode == "bar" and now - self.shown >= BAR_INTERVAL:
            self.shown = now
            self._draw()
        elif self.mode == "lines" and now - self.shown >= self.line_interval:
            self.shown = now
            self._line(f"{self._count()} ({self._elapsed(now)})")

    def finish(self) -> None:
        """End the current stage with its final count and time."""
        if not self.active:
            return
        self.active = False
        now = self.clock()
        if self.mode == "bar":
            self._draw(now)
            self.stream.write("\n")
        elif self.mode == "lines":
            counted = f"{self._count()}, " if self.total is not None or self.unit else ""
            self._line(f"{counted}done in {self._elapsed(now)}")
        self.stream.flush()

    # -- drawing ----------------------------------------------------------------------------

    def _count(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.done}/{self.total}{unit}" if self.total is not None else f"{self.done}{unit}"

    def _elapsed(self, now: float) -> str:
        return f"{now - self.started:.1f}s"

    def _line(self, text: str) -> None:
        self.stream.write(f"{self.label}: {text}\n")
        self.stream.flush()

    def _draw(self, now: float | None = None) -> None:
        if self.mode != "bar":
            return
        now = self.clock() if now is None else now
        if self.total:
            filled = min(BAR_WIDTH, BAR_WIDTH * self.done // self.total)
            bar = "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "] "
        else:
            bar = ""
        # \r: back to the line's start; \x1b[K: clear what a longer line left behind.
        self.stream.write(f"\r{self.label} {bar}{self._count()}  {self._elapsed(now)}\x1b[K")
        self.stream.flush()

    # -- a context: the last stage ends with the operation, also when it fails ---------------

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.finish()


def progress_for(args: argparse.Namespace, stream: TextIO | None = None) -> Progress:
    """The progress a command shows: none with ``--json``, else as stderr is a terminal or not."""
    stream = sys.stderr if stream is None else stream
    return Progress(stream, choose_mode(stream, bool(getattr(args, "json", False))))
