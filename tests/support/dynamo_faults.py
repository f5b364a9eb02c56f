"""DynamoDB saying "later" to a route's calls, one call site at a time.

A route is run once to record its calls; then, for each place where the calls change from one
operation on one table or index to another, it is run again with every call from that place on
refused (as DynamoDB answers after botocore's own retries). A loop of identical calls (a usage
report's 32 shard queries) is one call site: refusing its first, second or thirty-second call
takes the same path, so it is refused at its first and its last call rather than at each one,
which made these tests quadratic in the route's calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.awsrequest import AWSResponse

TRANSIENT = (
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
)


class Throttle:
    """Answers every DynamoDB call from the ``start``-th on (0-based) with a transient error;
    records each call's site and which operations it refused. ``start=None`` refuses nothing."""

    def __init__(self, start: int | None, code: str = TRANSIENT[0]) -> None:
        self.start, self.code = start, code
        self.calls = 0
        self.sites: list[tuple[str, str, str]] = []
        self.refused: list[str] = []

    def __call__(self, model: Any, params: Any = None, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        body = params.get("body") if isinstance(params, dict) else None
        request = json.loads(body) if body else {}
        self.sites.append((model.name, str(request.get("TableName", "")), str(request.get("IndexName", ""))))
        self.calls += 1
        if self.start is None or self.calls <= self.start:
            return None
        self.refused.append(model.name)
        parsed = {"Error": {"Code": self.code, "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return AWSResponse("http://dynamodb.invalid", 400, {}, None), parsed  # type: ignore[arg-type]


def refusal_starts(run: Callable[[Throttle], object]) -> list[int]:
    """Where to start refusing: the first and the last call of each run of calls to one site,
    from a recording run of ``run`` that refuses nothing, and finally past the last call (the
    route must then succeed). ``run`` gets a fresh throttle to register on a fresh client."""
    recorder = Throttle(None)
    run(recorder)
    sites = recorder.sites
    starts = {len(sites)}
    for index, site in enumerate(sites):
        if index == 0 or sites[index - 1] != site:
            starts.add(index)
        if index == len(sites) - 1 or sites[index + 1] != site:
            starts.add(index)
    return sorted(starts)
