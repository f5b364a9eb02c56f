"""The init phase of a Lambda function: what a handler module builds at import.

Init allocates a few hundred thousand objects that live as long as the container (botocore's
service and endpoint models, the price catalogue's index, Powertools' logger) and leaves almost
nothing to collect, yet the garbage collector walks them again and again while they are built:
a tenth of the ingestion function's cold start (docs/performance.md#the-service). So init runs with
the collector paused, and what it built is then frozen (``gc.freeze``): moved out of the
generations, it is never walked again by the collections of warm requests either. The
request-serving functions use it (the ingestion function and the owners' API).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def init_phase() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
