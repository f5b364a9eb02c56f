"""``costtrack admin export``: the daily export into a local folder instead of S3.

The same ``Exporter`` as the deployed ``ExportFunction`` (``costtrack_service.jobs.daily_export``) with a
:class:`DirectoryWriter` in place of the S3 writer, so the folder holds exactly the objects the
bucket would (``events/workspace_id=…/day=…/part-pp-nnnn.json.gz``, the same bytes), and a
re-run replaces a day as it does in S3. DuckDB (or anything that reads Hive-partitioned JSON
Lines) queries the folder as Athena queries the bucket (docs/guides/export.md#daily-export-to-s3-queried-with-athena).
``--format focus`` writes the same events in FOCUS 1.2 columns instead (``focus/workspace_id=…/
day=…/part-pp-nnnn.csv.gz``, the deployed export's FOCUS objects), ``--format both`` both.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from costtrack_service.domain.export.layout import DEFAULT_PREFIX, FOCUS_PREFIX, parse_day, yesterday
from costtrack_service.jobs.daily_export import DirectoryWriter, Exporter, focus, json_lines
from costtrack_tools.admin_output import AdminError, emit, find_workspace
from costtrack_tools.progress import progress_for

Handler = Callable[[Any, argparse.Namespace], None]
DEFAULT_EXPORT_DIR = Path(".costtrack/export")
#: A run names at most this many days (a year and a day: one leap year).
MAX_DAYS = 366
#: ``--format``: the export's forms, each under its prefix.
FORMATS = {
    "json": (json_lines(DEFAULT_PREFIX),),
    "focus": (focus(FOCUS_PREFIX),),
    "both": (json_lines(DEFAULT_PREFIX), focus(FOCUS_PREFIX)),
}


def export_days(args: argparse.Namespace) -> list[date]:
    try:
        first = parse_day(args.day) if args.day else yesterday(datetime.now(UTC))
        last = parse_day(args.through) if args.through else first
    except ValueError as error:
        raise AdminError(str(error)) from None
    if last < first:
        raise AdminError(f"--through {last} is before --day {first}")
    count = (last - first).days + 1
    if count > MAX_DAYS:
        raise AdminError(f"--day to --through covers {count} days; a run exports at most {MAX_DAYS}")
    return [first + timedelta(days=offset) for offset in range(count)]


def export(store: Any, args: argparse.Namespace) -> None:
    days = export_days(args)
    workspaces = [find_workspace(store, ws).workspace_id for ws in args.workspace] if args.workspace else None
    folder = Path(args.to)
    outputs = FORMATS[args.format]
    exporter = Exporter(store, DirectoryWriter(folder), outputs=outputs)
    runs = []
    with progress_for(args) as steps:
        steps.stage(f"exporting to {folder}", len(days), "days")
        for day in days:
            runs.append(exporter.export_day(day, workspaces))
            steps.advance()
    prefixes = [output.prefix for output in outputs]
    data = {
        "to": str(folder),
        "prefix": prefixes[0],
        "prefixes": prefixes,
        "days": [run.to_dict() for run in runs],
        "events": sum(run.events for run in runs),
        "objects": sum(len(run.written) for run in runs),
    }

    def human() -> str:
        lines = [
            f"{run.day}: {run.events} events in {len(run.written)} files"
            + (f", {len(run.deleted)} stale files removed" if run.deleted else "")
            for run in runs
        ]
        where = " and ".join(str(folder / prefix) for prefix in prefixes)
        lines.append(f"exported {data['events']} events in {data['objects']} files under {where}")
        return "\n".join(lines)

    emit(args, data, human)


def add_export_parser(groups: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    parser = command(
        groups,
        "export",
        export,
        "the daily export (gzip JSON Lines, Hive-style folders) into a local folder instead of S3",
    )
    parser.add_argument("--day", metavar="YYYY-MM-DD", help="the UTC day to export (default: yesterday)")
    parser.add_argument("--through", metavar="YYYY-MM-DD", help="export every day from --day to this one, inclusive")
    parser.add_argument("--to", default=str(DEFAULT_EXPORT_DIR), metavar="DIR", help=f"default {DEFAULT_EXPORT_DIR}")
    parser.add_argument("--workspace", action="append", metavar="WS", help="only this workspace (repeatable)")
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="json",
        help="json: gzip JSON Lines under events/ (default); focus: FOCUS 1.2 gzip CSV under focus/; both",
    )
