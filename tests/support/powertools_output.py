"""A scheduled handler run as Lambda runs it, and what it wrote: Powertools' JSON log lines and
its EMF metrics."""

from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType
from typing import Any

import pytest


def fresh(module: str) -> ModuleType:
    """The handler module imported as Lambda's init imports it (its store made in moto), logging
    at INFO as the template's ``LogLevel`` does (the test session's default is WARNING), to this
    test's standard output (a reloaded module's Logger keeps the handler of its first import)."""
    # A new execution environment: Powertools' cold-start flags as a new process has them (another
    # handler run earlier in this test process has cleared them).
    import aws_lambda_powertools.logging.logger as powertools_logger
    import aws_lambda_powertools.tracing.tracer as powertools_tracer
    from aws_lambda_powertools.metrics.provider import cold_start

    powertools_logger.is_cold_start = True
    powertools_tracer.is_cold_start = True
    cold_start.reset_cold_start_flag()
    loaded = importlib.reload(importlib.import_module(module))
    loaded.tools.logger.setLevel("INFO")
    loaded.tools.logger.registered_handler.stream = sys.stdout
    return loaded


def output(capfd: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    out = capfd.readouterr().out
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def log_lines(records: list[dict[str, Any]], message: str | None = None) -> list[dict[str, Any]]:
    return [r for r in records if "_aws" not in r and (message is None or r.get("message") == message)]


def metrics(records: list[dict[str, Any]], service: str) -> dict[str, float]:
    """Every EMF metric in the records (summed by name), after checking each record's namespace
    and dimensions are what the template's alarms read."""
    figures: dict[str, float] = {}
    for record in records:
        if "_aws" not in record:
            continue
        [directive] = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "costtrack"
        assert record["service"] == service
        dimensions = {name for group in directive["Dimensions"] for name in group}
        assert dimensions in ({"service"}, {"service", "function_name"})
        for metric in directive["Metrics"]:
            value = record[metric["Name"]]
            total = sum(value) if isinstance(value, list) else value
            figures[metric["Name"]] = figures.get(metric["Name"], 0) + total
    return figures
