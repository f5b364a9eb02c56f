"""Spend control before the call (CONTRACT §10), the ``Tracker``'s half that asks the service
and waits for it: ``reserve``, ``areserve`` and the ``reservation`` block, the ``on_unavailable``
policy, and the release of a hold no event took. A base class of ``Tracker``, which sets its
attributes and builds its ``Reserver``; it shares no path with ``track()`` and delivery, which
never wait for the network."""

from __future__ import annotations

import logging
import math
from decimal import Decimal
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from costtrack import _attributes
from costtrack._http import Answer
from costtrack._keys import new_reservation_key
from costtrack._reservation import (
    ON_UNAVAILABLE,
    BudgetExceeded,
    Reservation,
    ReservationUnavailable,
    read_answer,
    reservation_body,
)
from costtrack._reservation_http import Reserver
from costtrack._warnings import ConfigurationError, TrackerWarning
from costtrack.validation import EventValidationError

__all__ = ["RESERVATION_UNAVAILABLE", "ReservationScope", "TrackerReservations", "read_on_unavailable"]

logger = logging.getLogger("costtrack")

#: ``on_warning``'s code when a reservation could not be made and ``on_unavailable`` decided.
RESERVATION_UNAVAILABLE = "reservation_unavailable"

Amount = Union[str, Decimal, int, None]
#: What a reservation needs before its request: the body, key, deadline and policy; or the answer.
_Prepared = Union[Reservation, Tuple[bytes, str, float, str]]


class TrackerReservations:
    """Reservations on a ``Tracker`` (which sets these attributes)."""

    _active: bool
    _closed: bool
    _environment: str
    _on_unavailable: str
    _reserver: Reserver

    def _warn(self, warning: TrackerWarning) -> None: ...  # pragma: no cover - the Tracker's

    def _report_error(self, error: Exception) -> None: ...  # pragma: no cover - the Tracker's

    def track(self, event: Any) -> None: ...  # pragma: no cover - the Tracker's

    def reserve(
        self,
        *,
        provider: str,
        model: str,
        feature: Optional[str] = None,
        customer_id: Optional[str] = None,
        customer_name: Optional[str] = None,
        environment: Optional[str] = None,
        amount: Amount = None,
        prompt_tokens: Optional[int] = None,
        max_output_tokens: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        hold: bool = True,
        ttl_seconds: Optional[int] = None,
        timeout: Optional[float] = None,
        on_unavailable: Optional[str] = None,
    ) -> Reservation:
        """Ask the service whether a call may be made, and hold its worst-case cost until the
        event that settles it arrives (``reservation_id`` on the event), it is released, or it
        expires (``ttl_seconds``, default 600). The one call of the tracker that waits for the
        network: at most ``timeout`` seconds (default: the tracker's ``timeout_ms``), retries
        included. Never raises.

        The estimate is an ``amount`` (a decimal string or ``Decimal``; never a float) or token
        counts (``prompt_tokens``, ``max_output_tokens``; pricing context such as
        ``service_tier`` in ``metadata``), priced by the service at the worst case. The
        attribution not given comes from ``costtrack.attributes``, as the event's will, so
        both name the same budgets. ``hold=False`` is a dry run: the same answer, nothing held.

        Refused (``429 BUDGET_EXCEEDED``): ``allowed`` is ``False`` and ``refused_by`` names the
        budgets. No answer (network, 5xx after the retries, the timeout, or another 4xx):
        ``on_unavailable`` decides (``"allow"``, the default, or ``"deny"``; the tracker's
        option unless given here), reported to ``on_warning`` as ``reservation_unavailable``.
        An invalid argument goes to ``on_error`` and ``on_unavailable`` decides likewise.
        """
        prepared = self._prepare_reservation(locals())
        if isinstance(prepared, Reservation):
            return prepared
        body, key, timeout_s, policy = prepared
        return self._reservation_answer(self._reserver.reserve(body, key, timeout_s), key, policy)

    async def areserve(
        self,
        *,
        provider: str,
        model: str,
        feature: Optional[str] = None,
        customer_id: Optional[str] = None,
        customer_name: Optional[str] = None,
        environment: Optional[str] = None,
        amount: Amount = None,
        prompt_tokens: Optional[int] = None,
        max_output_tokens: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        hold: bool = True,
        ttl_seconds: Optional[int] = None,
        timeout: Optional[float] = None,
        on_unavailable: Optional[str] = None,
    ) -> Reservation:
        """``reserve()`` for asyncio code: the request runs on a thread of its own while the
        running loop goes on. Never raises (but a cancelled caller is cancelled)."""
        prepared = self._prepare_reservation(locals())
        if isinstance(prepared, Reservation):
            return prepared
        body, key, timeout_s, policy = prepared
        answer = await self._reserver.areserve(body, key, timeout_s)
        return self._reservation_answer(answer, key, policy)

    def reservation(self, **arguments: Any) -> ReservationScope:
        """``with tracker.reservation(provider=..., model=..., amount="0.05") as r:`` (or
        ``async with``): reserves with ``reserve()``'s arguments and raises
        :class:`BudgetExceeded` when refused (:class:`ReservationUnavailable`, a subclass, when
        the service could not answer and ``on_unavailable="deny"``). The first event tracked
        inside the block (``track()``, a provider helper's event, an instrumented client's)
        carries ``r.reservation_id`` and settles it. When the block ends and no event took it,
        with or without an exception, the hold is released in the background."""
        return ReservationScope(self, arguments)

    # -- inside ------------------------------------------------------------------------------

    def _prepare_reservation(self, arguments: Dict[str, Any]) -> _Prepared:
        try:
            policy = self._policy(arguments.get("on_unavailable"))
            if not self._active:  # tracking is off: nothing is asked and nothing is refused
                return Reservation(allowed=True, unavailable=True)
            if self._closed:
                message = "reserve() after shutdown(): the service was not asked"
                return self._unavailable(policy, message, Answer(failure="after shutdown"), None)
            attribution = _attribution(arguments, self._environment)
            try:
                body = reservation_body(
                    attribution,
                    arguments.get("amount"),
                    arguments.get("prompt_tokens"),
                    arguments.get("max_output_tokens"),
                    arguments.get("hold", True),
                    arguments.get("ttl_seconds"),
                )
            except EventValidationError as error:
                self._report_error(error)
                return Reservation(allowed=policy == "allow", unavailable=True)
            return body, new_reservation_key(), self._timeout(arguments.get("timeout")), policy
        except Exception:  # reserve() must never raise into the application
            logger.exception("costtrack: reserve() failed unexpectedly")
            return Reservation(allowed=self._on_unavailable == "allow", unavailable=True)

    def _reservation_answer(self, answer: Answer, key: str, policy: str) -> Reservation:
        try:
            if answer.status is not None:
                reservation = read_answer(answer.status, answer.body, key)
                if reservation is not None:
                    return reservation
            reason = answer.failure or _describe(answer)
            return self._unavailable(policy, f"the reservation could not be made: {reason}", answer, key)
        except Exception:
            logger.exception("costtrack: reserve() failed unexpectedly")
            return Reservation(allowed=policy == "allow", unavailable=True, idempotency_key=key)

    def _unavailable(self, policy: str, message: str, answer: Answer, key: Optional[str]) -> Reservation:
        decision = "allowed" if policy == "allow" else "denied"
        warning = f"{message}; the call is {decision} (on_unavailable={policy!r})"
        self._warn(TrackerWarning(RESERVATION_UNAVAILABLE, warning, key, answer.status, answer.body))
        return Reservation(allowed=policy == "allow", unavailable=True, status=answer.status, idempotency_key=key)

    def _policy(self, given: object) -> str:
        if given is None:
            return self._on_unavailable
        if given in ON_UNAVAILABLE:
            return str(given)
        problem = f"on_unavailable must be 'allow' or 'deny' (got {given!r}); using {self._on_unavailable!r}"
        self._report_error(ConfigurationError(problem))
        return self._on_unavailable

    def _timeout(self, given: object) -> float:
        default = self._reserver.timeout_s
        if given is None:
            return default
        if isinstance(given, (int, float)) and not isinstance(given, bool) and math.isfinite(given) and given > 0:
            return float(given)
        problem = f"timeout must be a number of seconds > 0 (got {given!r}); using {default}"
        self._report_error(ConfigurationError(problem))
        return default

    def _release(self, reservation_id: str) -> None:
        if self._active:
            self._reserver.release(reservation_id)


def read_on_unavailable(value: object, report: Any) -> str:
    """The tracker's ``on_unavailable`` option (``"allow"`` when unusable, reported)."""
    if value in ON_UNAVAILABLE:
        return str(value)
    report(ConfigurationError(f"on_unavailable must be 'allow' or 'deny' (got {value!r}); using 'allow'"))
    return "allow"


def _attribution(arguments: Mapping[str, Any], environment: str) -> Dict[str, Any]:
    """The reservation's attribution: what the call names, else the context's (as the event's
    will be), else the tracker's environment; ``metadata`` merged, the call's keys winning."""
    names = ("feature", "customer_id", "customer_name", "environment")
    context = _attributes.current() or {}
    found = {"provider": arguments.get("provider"), "model": arguments.get("model")}
    for name in names:
        value = arguments.get(name)
        found[name] = value if value is not None else context.get(name)
    if found["environment"] is None:
        found["environment"] = environment
    metadata = arguments.get("metadata")
    outer = context.get("metadata")
    if isinstance(outer, Mapping) and (metadata is None or isinstance(metadata, Mapping)):
        metadata = {**outer, **(metadata or {})}
    found["metadata"] = metadata
    return found


def _describe(answer: Answer) -> str:
    error = answer.body.get("error") if answer.body else None
    code = error.get("code") if isinstance(error, dict) else None
    return f"HTTP {answer.status}" + (f" {code}" if isinstance(code, str) else "")


class ReservationScope:
    """``tracker.reservation(...)``'s context manager (sync and async)."""

    def __init__(self, tracker: TrackerReservations, arguments: Dict[str, Any]) -> None:
        self._tracker = tracker
        self._arguments = arguments
        self._pending: Optional[_attributes.Pending] = None
        self._token: Any = None
        self.reservation: Optional[Reservation] = None

    def __enter__(self) -> Reservation:
        return self._begin(self._tracker.reserve(**self._arguments))

    async def __aenter__(self) -> Reservation:
        return self._begin(await self._tracker.areserve(**self._arguments))

    def __exit__(self, *exc_info: object) -> None:
        self._end()

    async def __aexit__(self, *exc_info: object) -> None:
        self._end()

    def _begin(self, reservation: Reservation) -> Reservation:
        self.reservation = reservation
        if not reservation.allowed:
            if reservation.unavailable:
                message = "the reservation could not be made and on_unavailable is 'deny'"
                raise ReservationUnavailable(reservation, message)
            raise BudgetExceeded(reservation)
        if reservation.reservation_id is not None:
            self._pending, self._token = _attributes.offer_reservation(reservation.reservation_id)
        return reservation

    def _end(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        _attributes.withdraw(self._token)
        if pending.take():  # no event took it: the call was not made (or raised before any event)
            self._tracker._release(pending.reservation_id)
