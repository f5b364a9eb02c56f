"""What the ``costtrack`` command prints: money (never an exponent), tables (amounts aligned on
their decimal point), progress (a bar on a terminal, lines when piped, nothing with --json), and
``--version``."""

from __future__ import annotations

import argparse
import io
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

import costtrack
import costtrack_service
from costtrack_service.jobs.price_refresh import backfill
from costtrack_tools.admin_output import AdminError, money, table
from costtrack_tools.cli import main
from costtrack_tools.progress import Progress, choose_mode, progress_for

# -- money ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (Decimal("1.25E-7"), "0.000000125"),  # str() of this Decimal is "1.25E-7"
        ("1.25E-7", "0.000000125"),
        (Decimal("0.1"), "0.10"),
        ("0.0335", "0.0335"),
        (Decimal("12345.678901234"), "12345.678901234"),  # never rounded
        (Decimal("1E+3"), "1000.00"),
        ("250.000000", "250.00"),
        (Decimal("0E-9"), "0.00"),
        (3, "3.00"),
        ("-0.5", "-0.50"),
    ],
)
def test_money_is_positional_with_at_least_two_decimals(value: Any, printed: str) -> None:
    assert money(value) == printed


def test_money_refuses_what_is_not_an_amount() -> None:
    with pytest.raises(AdminError, match="not a decimal amount"):
        money("twelve")


def test_amount_columns_align_on_the_decimal_point_and_counts_to_the_right() -> None:
    rows = [
        ("chat", 3, Decimal("0.0335")),
        ("search", 12000, Decimal("12.5")),
        ("tiny", 1, Decimal("1.25E-7")),
        ("(none)", None, None),
    ]
    lines = table(rows, ["feature", "events", "cost (USD)"]).splitlines()
    assert lines[0].split() == ["feature", "events", "cost", "(USD)"]
    body = lines[2:]
    assert [line.rstrip().rsplit(" ", 1)[-1] for line in body[:3]] == ["0.0335", "12.50", "0.000000125"]
    assert "E-" not in "\n".join(lines)
    points = {line.index(".", len("feature  events")) for line in body[:3]}
    assert len(points) == 1, lines  # one column for every decimal point
    ends = {line.index(count) + len(count) for line, count in zip(body[:3], ("3", "12000", "1"), strict=True)}
    assert len(ends) == 1, lines  # counts right-aligned
    assert body[3].rstrip() == "(none)"


def test_a_column_of_words_stays_left_aligned() -> None:
    lines = table([("a", "x"), ("bbb", "yy")], ["name", "v"]).splitlines()
    assert lines == ["name  v", "----  --", "a     x", "bbb   yy"]


# -- progress -------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_piped_progress_is_plain_lines_a_few_seconds_apart() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress(out, "lines", clock=clock, line_interval=5.0) as steps:
        steps.stage("writing prices", 3, "entries")
        steps.advance()
        clock.now += 6
        steps.advance()  # 6 s after the start: a line
        steps.advance()  # at once: none
        steps.stage("backfill", unit="events checked")
        clock.now += 1.5
        steps.advance(40)
    assert out.getvalue().splitlines() == [
        "writing prices: 0/3 entries",
        "writing prices: 2/3 entries (6.0s)",
        "writing prices: 3/3 entries, done in 6.0s",
        "backfill: started",
        "backfill: 40 events checked, done in 1.5s",
    ]
    assert "\r" not in out.getvalue()


def test_on_a_terminal_one_line_is_redrawn_with_a_bar() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress(out, "bar", clock=clock) as steps:
        steps.stage("importing prices.json", 4, "entries")
        for _ in range(4):
            clock.now += 0.2
            steps.advance()
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    frames = [frame.removesuffix("\x1b[K") for frame in text.rstrip("\n").split("\r") if frame]
    assert frames[0] == "importing prices.json [" + "." * 24 + "] 0/4 entries  0.0s"
    assert frames[-1] == "importing prices.json [" + "#" * 24 + "] 4/4 entries  0.8s"
    assert "[" + "#" * 12 + "." * 12 + "] 2/4 entries" in text


def test_a_terminal_without_a_total_shows_a_running_count() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress(out, "bar", clock=clock) as steps:
        steps.stage("backfill", unit="events checked")
        clock.now += 0.5
        steps.advance(7)
    assert out.getvalue().rstrip("\n").split("\r")[-1] == "backfill 7 events checked  0.5s\x1b[K"


def test_off_prints_nothing() -> None:
    out = io.StringIO()
    with Progress(out, "off") as steps:
        steps.stage("backfill", 10, "events")
        steps.advance(10)
    assert out.getvalue() == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_form_follows_where_stderr_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    assert choose_mode(Terminal(), json_output=False) == "bar"
    assert choose_mode(io.StringIO(), json_output=False) == "lines"
    assert choose_mode(Terminal(), json_output=True) == "off"
    assert progress_for(argparse.Namespace(json=True), Terminal()).mode == "off"
    monkeypatch.setenv("TERM", "dumb")
    assert choose_mode(Terminal(), json_output=False) == "lines"


def test_the_backfill_reports_each_event_it_checks() -> None:
    class AlreadyPriced:
        """Three events the backfill looks at and leaves (priced since it listed them)."""

        @property
        def prices(self) -> Any:
            return self

        @property
        def repricing(self) -> Any:
            return self

        def get_price_entries(self, provider: str) -> list[Any]:
            return []

        def get_price_overrides(self, workspace_id: str) -> list[Any]:
            return []

        def iter_unpriced_events(self) -> Any:
            return iter([SimpleNamespace(pricing_status="priced")] * 3)

    out = io.StringIO()
    with Progress(out, "lines") as steps:
        result = backfill(AlreadyPriced(), steps=steps)  # type: ignore[arg-type]
    assert result == {"priced": 0, "added_cost": "0", "still_unpriced": 0, "already_priced": 0}
    lines = out.getvalue().splitlines()
    assert lines[0] == "backfill: started"
    assert lines[1].startswith("backfill: 3 unpriced events checked, done in ")


# -- --version ------------------------------------------------------------------------------


def test_version_names_the_tools_and_the_sdk(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.splitlines() == [
        f"costtrack {costtrack_service.__version__} (service and tools)",
        f"costtrack Python SDK {costtrack.__version__}",
    ]
