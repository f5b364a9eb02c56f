"""``costtrack.attributes(...)``: the attribution of every event made inside a ``with`` block, in
a ``contextvars.ContextVar``, so it follows the code across ``await``, into the asyncio tasks it
starts and into threads started with the context copied (``contextvars.copy_context().run``,
``asyncio.to_thread``, ``loop.run_in_executor`` does not copy it).

The run identity (``trace_id``, ``session_id``, ``parent_id``, ``run_name``: ``tracker.run``
sets them) travels the same way; so does the reservation of a ``tracker.reservation`` block,
which the first event tracked inside the block takes (``offer_reservation``).
"""

from __future__ import annotations

import contextlib
import threading
from contextvars import ContextVar, Token
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Tuple

__all__ = ["Pending", "attributes", "current", "offer_reservation", "push", "reset", "with_context"]

_ATTRIBUTES: ContextVar[Optional[Dict[str, Any]]] = ContextVar("costtrack_attributes", default=None)


class Pending:
    """A reservation waiting for the event that settles it: the first event tracked in its
    context (or in a context copied from it, on any thread) takes it, once."""

    __slots__ = ("_lock", "reservation_id", "taken")

    def __init__(self, reservation_id: str) -> None:
        self.reservation_id = reservation_id
        self.taken = False
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.taken:
                return False
            self.taken = True
            return True


_RESERVATION: ContextVar[Optional[Pending]] = ContextVar("costtrack_reservation", default=None)
#: The variables themselves, for code that reads them in a context it holds (``Context.get``).
ATTRIBUTES = _ATTRIBUTES
RESERVATION = _RESERVATION


@contextlib.contextmanager
def attributes(
    *,
    feature: Optional[str] = None,
    customer_id: Optional[str] = None,
    customer_name: Optional[str] = None,
    environment: Optional[str] = None,
    metadata: Optional[Mapping[str, Any]] = None,
    trace_id: Optional[str] = None,
    session_id: Optional[str] = None,
    parent_id: Optional[str] = None,
    run_name: Optional[str] = None,
) -> Iterator[Dict[str, Any]]:
    """Attribution for every event made inside the block: those of instrumented clients
    (``costtrack.instrument``, over the defaults given there) and those passed to
    ``Tracker.track()``, for the fields the event does not have (what the event or the call
    names wins). Blocks nest: an inner one wins field by field, and ``metadata`` is merged key
    by key. ``None`` leaves a field as the outer block has it. Yields the attribution in force::

        with costtrack.attributes(customer_id=account.id, customer_name=account.name, feature="chat"):
            client.chat.completions.create(...)

    The run identity (CONTRACT §11) is attribution too: ``trace_id`` (a run or request),
    ``session_id`` (a conversation), ``parent_id`` (a step of the run) and ``run_name``.
    ``tracker.run(...)`` sets ``trace_id`` and ``run_name`` for you. An OpenTelemetry span that
    is active is not read (costtrack never imports opentelemetry): pass its trace id here if the
    events should carry it.
    """
    given = {
        "feature": feature,
        "customer_id": customer_id,
        "customer_name": customer_name,
        "environment": environment,
        "trace_id": trace_id,
        "session_id": session_id,
        "parent_id": parent_id,
        "run_name": run_name,
    }
    merged, token = push(given, metadata)
    try:
        yield dict(merged)
    finally:
        _ATTRIBUTES.reset(token)


def push(
    given: Mapping[str, Any], metadata: Optional[Mapping[str, Any]] = None, clear: Iterable[str] = ()
) -> Tuple[Dict[str, Any], Token[Optional[Dict[str, Any]]]]:
    """Set the attribution in force to the outer one with ``given`` over it (``None``: left as
    it is) and the names in ``clear`` removed; the new attribution and the token to ``reset``."""
    merged: Dict[str, Any] = dict(_ATTRIBUTES.get() or {})
    for name in clear:
        merged.pop(name, None)
    merged.update((name, value) for name, value in given.items() if value is not None)
    if metadata is not None:
        merged["metadata"] = {**(merged.get("metadata") or {}), **metadata}
    return merged, _ATTRIBUTES.set(merged)


def reset(token: Token[Optional[Dict[str, Any]]]) -> None:
    """Undo a ``push``; from another context (a block entered in one task, left in another)
    there is nothing to undo here."""
    with contextlib.suppress(ValueError):
        _ATTRIBUTES.reset(token)


def offer_reservation(reservation_id: Optional[str]) -> Tuple[Pending, Token[Optional[Pending]]]:
    """The reservation that the first event tracked from here on takes (``None``: no event takes
    one, as for a run's own marker event); with the token that withdraws the offer."""
    pending = Pending(reservation_id or "")
    if reservation_id is None:
        pending.taken = True
    return pending, _RESERVATION.set(pending)


def withdraw(token: Token[Optional[Pending]]) -> None:
    with contextlib.suppress(ValueError):
        _RESERVATION.reset(token)


def reservation_offered() -> bool:
    """Whether a ``tracker.reservation`` block offers a reservation that no event took yet."""
    pending = _RESERVATION.get()
    return pending is not None and not pending.taken


def take_offered() -> Optional[Pending]:
    """The reservation offered here, taken by the caller (a model call that starts now and
    settles it when its event is made, wherever that is); ``None``: none offered, or taken."""
    pending = _RESERVATION.get()
    if pending is not None and pending.take():
        return pending
    return None


def give_back(pending: Pending) -> None:
    """Undo ``take_offered``: the call was not made, so the block's next event may take it."""
    with pending._lock:
        pending.taken = False


def current() -> Optional[Dict[str, Any]]:
    """The attribution in force (``None`` outside any ``attributes`` block); not to be changed."""
    return _ATTRIBUTES.get()


def with_context(event: Any) -> Any:
    """``event`` with the fields it lacks taken from the attribution in force (``metadata`` merged,
    the event's keys winning); ``event`` itself when there is none or it is not a dict. Inside a
    ``tracker.reservation`` block, the first event also takes the block's ``reservation_id``."""
    context = _ATTRIBUTES.get()
    pending = _RESERVATION.get()
    if pending is not None and not pending.taken and isinstance(event, dict):
        event = _with_reservation(event, pending)
    if not context or not isinstance(event, dict):
        return event
    merged = {**context, **{name: value for name, value in event.items() if value is not None}}
    if isinstance(event.get("metadata"), Mapping) and "metadata" in context:
        merged["metadata"] = {**context["metadata"], **event["metadata"]}
    return merged


def _with_reservation(event: Dict[str, Any], pending: Pending) -> Dict[str, Any]:
    own = event.get("reservation_id")
    if own is None:
        return {**event, "reservation_id": pending.reservation_id} if pending.take() else event
    if own == pending.reservation_id:
        pending.take()  # the event names the block's reservation itself (a provider helper's ``reservation=``)
    return event
