"""``flush_after``: AWS Lambda freezes the execution environment as soon as the handler returns,
so events still queued then are delivered late (at the next invocation) or never (when the
environment is recycled). Flushing before returning is the only reliable way."""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Callable, Dict, Optional, Protocol, Tuple, TypeVar

__all__ = ["flush_after"]

Handler = TypeVar("Handler", bound=Callable[..., Any])

#: Flush limit when none is given.
DEFAULT_FLUSH_TIMEOUT_S = 5.0
#: Time kept back from the invocation's remaining time, so the flush never makes Lambda time out.
LAMBDA_MARGIN_S = 0.5


class Flushable(Protocol):
    """What ``flush_after`` needs of a tracker (a ``Tracker``); named here rather than imported,
    so this module and ``_tracker`` (which offers ``Tracker.lambda_handler``) do not import each
    other."""

    def flush(self, timeout: Optional[float] = None) -> bool: ...

    async def aflush(self, timeout: Optional[float] = None) -> bool: ...


def flush_after(tracker: Flushable, *, timeout: Optional[float] = None) -> Callable[[Handler], Handler]:
    """Decorator: run the handler, then ``tracker.flush()`` before returning (or raising).

    ``timeout`` (seconds, default 5) bounds the flush; when the handler's second argument is a
    Lambda context, the flush also ends 0.5 s before the invocation would time out. Works for
    plain and ``async`` handlers::

        tracker = costtrack.Tracker(api_key=os.environ["COSTTRACK_API_KEY"])

        @costtrack.flush_after(tracker)
        def handler(event, context):
            response = client.chat.completions.create(...)
            tracker.track(costtrack.providers.from_openai(response, feature="support-bot"))
            return {"statusCode": 200}
    """

    def decorate(handler: Handler) -> Handler:
        if inspect.iscoroutinefunction(handler):

            @functools.wraps(handler)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await handler(*args, **kwargs)
                finally:
                    await tracker.aflush(_flush_timeout(timeout, args, kwargs))

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(handler)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            finally:
                tracker.flush(_flush_timeout(timeout, args, kwargs))

        return wrapper  # type: ignore[return-value]

    return decorate


def _flush_timeout(timeout: Optional[float], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> float:
    limit = DEFAULT_FLUSH_TIMEOUT_S if timeout is None else timeout
    context = args[1] if len(args) >= 2 else kwargs.get("context")
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining_ms):
        with contextlib.suppress(Exception):  # not a real Lambda context after all
            limit = min(limit, max(0.0, remaining_ms() / 1000.0 - LAMBDA_MARGIN_S))
    return limit
