"""Powertools for the functions off the ingestion hot path (the owners' API and the scheduled
jobs): logs, metrics and traces (docs/guides/operations.md)."""

from __future__ import annotations

import os
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

#: What the Tracer patches: every AWS call the functions make goes through botocore.
PATCHED_MODULES = ("botocore",)

LambdaHandler = Callable[[dict[str, Any], Any], Any]


def namespace() -> str:
    return os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "costtrack"


class Powertools:
    """One function's Logger, Metrics and Tracer, all named after its service (the template's
    ``POWERTOOLS_SERVICE_NAME``, which the alarms' metric dimensions name too).

    Each gets a Logger (JSON lines with the Lambda context: request id, cold start, function name,
    plus the job's own fields), Metrics (CloudWatch embedded metric format, namespace
    ``POWERTOOLS_METRICS_NAMESPACE``, dimension ``service``; a ``ColdStart`` metric per cold start)
    and a Tracer that patches botocore, so each DynamoDB, S3 and SNS call is a subsegment of the
    invocation's X-Ray trace. The template turns tracing on with ``Tracing: Active`` and off with
    its ``Tracing`` parameter (``POWERTOOLS_TRACE_DISABLED``); outside Lambda the Tracer is off.

    The ingestion function does not use this module: by default its cold start neither starts a
    Tracer nor imports the X-Ray SDK (the ingestion handler; docs/guides/operations.md).
    """

    def __init__(self, service: str) -> None:
        self.service = service
        self.logger = Logger(service=service)
        self.metrics = Metrics(namespace=namespace(), service=service)
        self.tracer = Tracer(service=service, patch_modules=PATCHED_MODULES)

    def count(self, name: str, value: float, unit: MetricUnit = MetricUnit.Count) -> None:
        self.metrics.add_metric(name=name, unit=unit, value=value)

    def entry_point(self, job: LambdaHandler) -> LambdaHandler:
        """``job`` as a Lambda handler: the context in every log line, a trace segment with the
        job's AWS calls, the metrics flushed (and a cold start counted) when it returns or raises."""
        traced = self.tracer.capture_lambda_handler(job, capture_response=False)
        measured = self.metrics.log_metrics(traced, capture_cold_start_metric=True)
        handler: LambdaHandler = self.logger.inject_lambda_context(measured, clear_state=True)
        return handler

    def http_entry_point(self, handler: LambdaHandler) -> LambdaHandler:
        """An HTTP handler that logs with its context itself (the owners' API): traced, and
        measured per request: ``Requests``, and ``Refused`` (4xx) or ``Failed`` (5xx) by the
        answer's status, flushed with the cold start after each request."""

        def measured(event: dict[str, Any], context: Any) -> Any:
            answer = handler(event, context)
            status = answer.get("statusCode", 200) if isinstance(answer, dict) else 200
            self.count("Requests", 1)
            if 400 <= status < 500:
                self.count("Refused", 1)
            elif status >= 500:
                self.count("Failed", 1)
            return answer

        traced = self.tracer.capture_lambda_handler(measured, capture_response=False)
        entry: LambdaHandler = self.metrics.log_metrics(traced, capture_cold_start_metric=True)
        return entry


def nano_usd(amount: Decimal) -> int:
    """A cost as whole nano-dollars: metric values are doubles, and this keeps them integral
    (the ingestion function's ``CostNanoUSD`` does the same)."""
    return int(amount.scaleb(9).to_integral_value(rounding=ROUND_HALF_EVEN))
