"""Lists of the owners' API written to by many clients at once and paged to their end: the
writers (``concurrently``) and the reader that follows the cursors (``page_through``), shared by
the integration and chaos tests of the paginated routes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.support.http_workspace import Workspace

#: Concurrent clients, as the issue's scenario runs them.
CLIENTS = 50
#: The stacks each list's paging test runs on: DynamoDB Local in ``make test``, and the AWS-rules
#: front too in ``make chaos`` (the same lists, through AWS's limits: minutes more per list).
PAGING_STACKS = [
    "dynamodb-local",
    pytest.param(
        "aws-front",
        marks=pytest.mark.skipif(
            os.environ.get("COSTTRACK_CHAOS") != "full", reason="through the AWS-rules front in make chaos"
        ),
    ),
]


def concurrently(
    base_url: str, key: str, bodies: list[dict[str, Any]], clients: int = CLIENTS, batch: int = 1
) -> list[dict[str, Any]]:
    """POST the bodies from ``clients`` clients at once, each alone (``batch`` 1) or in batches
    of ``batch`` (one transaction: many events in one millisecond); the accepted answers."""

    def post(client: httpx.Client, group: list[dict[str, Any]]) -> list[dict[str, Any]]:
        headers = {"Authorization": f"Bearer {key}"}
        if batch == 1:
            headers["Idempotency-Key"] = group[0]["metadata"]["n"]
            content: dict[str, Any] = group[0]
        else:
            content = {"batch": [{"idempotency_key": body["metadata"]["n"], "event": body} for body in group]}
        for _ in range(20):  # the SDKs' rule: a 5xx is retried with the same keys (never counted twice)
            response = client.post("/v1/events", json=content, headers=headers)
            if response.status_code < 500:
                break
        assert response.status_code == 200, response.text
        answers = response.json()["results"] if batch > 1 else [response.json()]
        assert all(answer.get("status", 200) == 200 for answer in answers), answers
        return answers

    def send(share: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            return [
                answer for start in range(0, len(share), batch) for answer in post(client, share[start : start + batch])
            ]

    shares = [bodies[start::clients] for start in range(clients)]
    with ThreadPoolExecutor(max_workers=clients) as pool:
        return [answer for answers in pool.map(send, shares) for answer in answers]


def event_body(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "feature": f"f{n % 4}",
        "metadata": {"n": f"paging-{n}"},
        **fields,
    }


def page_through(
    get: Callable[..., httpx.Response],
    path: str,
    items: str,
    cursor_field: str,
    params: dict[str, str],
    most: int,
    between: Callable[[int], None] | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """The pages of a list, following ``cursor_field`` until it is null; fails past ``most``
    pages (a list that never ends). ``between`` runs after each page but the last."""
    cursor = None
    for asked in range(1, most + 1):
        response = get(path, **params, **({"cursor": cursor} if cursor else {}))
        assert response.status_code == 200, response.text
        body = response.json()
        yield body[items]
        cursor = body[cursor_field]
        if cursor is None:
            return
        if between is not None:
            between(asked)
    raise AssertionError(f"{path} {params}: no null {cursor_field} within {most} pages")


def newest_first(events: list[dict[str, Any]]) -> list[str]:
    """Event ids in the event list's documented order: newest first, then by id (descending)."""
    ordered = sorted(events, key=lambda event: (event["received_at"], event["event_id"]), reverse=True)
    return [event["event_id"] for event in ordered]


def created_keys(owner: Workspace, count: int, clients: int = CLIENTS) -> list[dict[str, Any]]:
    """``count`` ingestion keys created by ``clients`` owners' clients at once (many in one
    millisecond); the keys as their answers show them."""

    def create(n: int) -> dict[str, Any]:
        response = owner.post("/v1/workspace/keys", {"name": f"key-{n}"})
        assert response.status_code == 201, response.text
        key: dict[str, Any] = response.json()["key"]
        return key

    with ThreadPoolExecutor(max_workers=clients) as pool:
        return list(pool.map(create, range(count)))


def paging_stack(request: Any, tmp_path_factory: Any, table_prefix: str) -> Iterator[Any]:
    """The stack a list's paging test runs on, by the fixture's parameter: DynamoDB Local, or
    the AWS-rules front (its transactions' latency, its partitions' write throughput)."""
    if request.param == "dynamodb-local":
        yield request.getfixturevalue("local_stack")
        return
    from costtrack_tools.local.aws_front import AwsRules
    from tests.conftest import running_stack

    rules = AwsRules(transaction_latency_s=0.01, partition_wcu_per_s=1000)
    yield from running_stack(tmp_path_factory, table_prefix, aws_rules=rules)
