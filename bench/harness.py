"""What the handler CPU benchmarks share: the real ingestion Lambda handler on an in-memory
store (logs and EMF metrics produced as in Lambda), and a way to throw that output away."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any


def memory_handler() -> tuple[Callable[[dict[str, Any], Any], dict[str, Any]], Any, str, Any]:
    """``(handler, context, api_key, store)`` for a paid workspace with room for any run."""
    from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
    from costtrack_service.edge.ingest.ingest_routes import create_handler
    from costtrack_service.services.event_ingest import IngestService
    from costtrack_tools.local.server import LambdaContext
    from costtrack_tools.memory_store import MemoryStore

    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_bench", "bench", Tier.PAID, "active", 10**9, 0, None))
    key = store.add_key("ws_bench")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "false"
    return create_handler(IngestService(store)), LambdaContext("bench"), key, store


def thread_cpu_ns(
    handler: Callable[[dict[str, Any], Any], dict[str, Any]], event: dict[str, Any], context: Any
) -> tuple[dict[str, Any], int]:
    """One call of the handler: its result and the thread CPU time it took, in nanoseconds."""
    started = time.thread_time_ns()
    result = handler(event, context)
    return result, time.thread_time_ns() - started


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Logs and EMF metrics are written as in Lambda, to /dev/null."""
    from costtrack_service.edge.ingest.ingest_routes import logger

    with open(os.devnull, "w") as devnull:
        previous_stream = logger.registered_handler.setStream(devnull)
        stdout, sys.stdout = sys.stdout, devnull
        try:
            yield
        finally:
            sys.stdout = stdout
            logger.registered_handler.setStream(previous_stream)
