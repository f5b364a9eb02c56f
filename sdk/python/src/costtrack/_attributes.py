"""``costtrack.attributes(...)``: the attribution of every event made inside a ``with`` block, in
a ``contextvars.ContextVar``, so it follows the code across ``await``, into the asyncio tasks it
starts and into threads started with the context copied (``contextvars.copy_context().run``,
``asyncio.to_thread``, ``loop.run_in_executor`` does not copy it)."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Dict, Iterator, Mapping, Optional

__all__ = ["attributes", "current", "with_context"]

_ATTRIBUTES: ContextVar[Optional[Dict[str, Any]]] = ContextVar("costtrack_attributes", default=None)


@contextlib.contextmanager
def attributes(
    *,
    feature: Optional[str] = None,
    customer_id: Optional[str] = None,
    customer_name: Optional[str] = None,
    environment: Optional[str] = None,
    metadata: Optional[Mapping[str, Any]] = None,
) -> Iterator[Dict[str, Any]]:
    """Attribution for every event made inside the block: those of instrumented clients
    (``costtrack.instrument``, over the defaults given there) and those passed to
    ``Tracker.track()``, for the fields the event does not have (what the event or the call
    names wins). Blocks nest: an inner one wins field by field, and ``metadata`` is merged key
    by key. ``None`` leaves a field as the outer block has it. Yields the attribution in force::

        with costtrack.attributes(customer_id=account.id, customer_name=account.name, feature="chat"):
            client.chat.completions.create(...)
    """
    outer = _ATTRIBUTES.get()
    merged: Dict[str, Any] = dict(outer or {})
    given = {
        "feature": feature,
        "customer_id": customer_id,
        "customer_name": customer_name,
        "environment": environment,
    }
    merged.update((name, value) for name, value in given.items() if value is not None)
    if metadata is not None:
        merged["metadata"] = {**(merged.get("metadata") or {}), **metadata}
    token = _ATTRIBUTES.set(merged)
    try:
        yield dict(merged)
    finally:
        _ATTRIBUTES.reset(token)


def current() -> Optional[Dict[str, Any]]:
    """The attribution in force (``None`` outside any ``attributes`` block); not to be changed."""
    return _ATTRIBUTES.get()


def with_context(event: Any) -> Any:
    """``event`` with the fields it lacks taken from the attribution in force (``metadata`` merged,
    the event's keys winning); ``event`` itself when there is none or it is not a dict."""
    context = _ATTRIBUTES.get()
    if not context or not isinstance(event, dict):
        return event
    merged = {**context, **{name: value for name, value in event.items() if value is not None}}
    if isinstance(event.get("metadata"), Mapping) and "metadata" in context:
        merged["metadata"] = {**context["metadata"], **event["metadata"]}
    return merged
