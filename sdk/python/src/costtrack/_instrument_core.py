"""What instrumenting a client is made of: an ``Instrumentation`` per client and a ``Call`` per
model call, which becomes the call's event (the method's wrapper starts and ends it).

If costtrack fails internally, the call goes on: the failure goes to the tracker's ``on_error``.
"""

from __future__ import annotations

import functools
import logging
import time
import weakref
from contextvars import Context, ContextVar, copy_context
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from costtrack._attributes import ATTRIBUTES, RESERVATION, Pending, current, give_back, take_offered
from costtrack._conventions import ROUTES
from costtrack._deferred import Deferred, deferring, make_later
from costtrack._event import TrackEvent
from costtrack._provider_events import Usage, provider_event

__all__ = [
    "DEFAULT_FIELDS",
    "USAGE_MISSING",
    "Call",
    "Claim",
    "Instrumentation",
    "claimed",
    "status_of",
    "with_identity",
]

logger = logging.getLogger("costtrack")

#: The keyword arguments ``instrument()`` takes as defaults for every event of the client.
DEFAULT_FIELDS = ("feature", "customer_id", "customer_name", "environment", "metadata", "provider")
#: The event's ``metadata`` key that says why its counts are missing (a stream that did not ask
#: for its usage); ``on_warning`` gets a warning of this code too.
USAGE_MISSING = "usage_missing"
#: Counts of an event whose call ended before the provider reported usage.
_NO_USAGE: Dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0}
_NOT_READ: Usage = (None, _NO_USAGE, {})
#: ``Instrumentation.fields()``'s default: the attribution in force where it is called.
_IN_FORCE: Any = {}


class Claim:
    """A model call that a framework hook (the OpenAI Agents processor) tracks when it ends,
    unless an instrumented client tracks it first: set in the context of the call
    (``claimed``), it gives the client's event the run's ``identity`` and records that the
    call was ``tracked``, so the framework leaves it out and nothing is counted twice."""

    __slots__ = ("identity", "tracked")

    def __init__(self, identity: Mapping[str, Any]) -> None:
        self.identity = identity
        self.tracked = False


#: The claim in force where a model call is made (``None``: no framework hook around it).
claimed: ContextVar[Optional[Claim]] = ContextVar("costtrack_claim", default=None)


def with_identity(fields: Dict[str, Any], identity: Mapping[str, Any]) -> Dict[str, Any]:
    """``fields`` with a run's identity added (``integrations._usage.run_identity``'s fields:
    ``trace_id``, ``session_id``, ``parent_id``, ``run_name``); a field the event already has
    (given to ``instrument()`` or set by ``costtrack.attributes``) wins."""
    for name, value in identity.items():
        if fields.get(name) is None:
            fields[name] = value
    return fields


class Instrumentation:
    """One instrumented client: its tracker, its defaults, and the undo steps of its patches."""

    def __init__(
        self, tracker: Any, provider: str, defaults: Mapping[str, Any], stream_usage: Any = "auto", route: str = ""
    ) -> None:
        self.found_provider = provider
        #: The client's name in spec/usage-conventions.json's routes.
        self.route = route
        self.stream_usage_refused = False
        self.undo: List[Callable[[], None]] = []
        self.states: Dict[str, Any] = {}
        #: The clients made from this one (``with_options``, ``copy``), instrumented alike.
        self.children: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.use(tracker, defaults, stream_usage)

    def use(self, tracker: Any, defaults: Mapping[str, Any], stream_usage: Any = "auto") -> None:
        """Track with ``tracker`` and ``defaults`` from now on (``instrument()`` again)."""
        self.tracker = tracker
        #: What ``instrument()`` was given, for the clients made from this one.
        self.given = dict(defaults)
        #: ``instrument(stream_usage=)``: whether a Chat Completions stream asks for its usage
        #: (``True``, ``False``, or ``"auto"``: asks, and stops asking after the server refused it).
        self.stream_usage = stream_usage
        self.provider = defaults.get("provider") or self.found_provider
        #: Whose counting convention the client's usage follows (docs/api-rules.md#cost): its
        #: route's; an OpenAI-compatible provider named here follows its own route's, or OpenAI's.
        self.convention = convention_of(self.route, self.provider, self.provider != self.found_provider)
        self.defaults = {name: value for name, value in defaults.items() if name != "provider" and value is not None}
        #: A ``Tracker``'s events are made on its delivery thread (``_deferred``); another
        #: tracker (anything with ``track``, a subclass's own ``track``) is given each event.
        self.later: Optional[Callable[[Deferred], None]] = deferring(tracker)
        #: Events made on the calling thread: for another tracker, or with the caller's
        #: ``metadata`` dict among the defaults (the event is made before the caller can change it).
        self.at_once = self.later is None or "metadata" in self.defaults

    def call(self, model: Any) -> Call:
        return Call(self, model)

    def fields(self, context: Optional[Mapping[str, Any]] = _IN_FORCE) -> Dict[str, Any]:
        """The event's attribution: the context's (``costtrack.attributes``; by default the one in
        force) over the client's defaults."""
        fields = dict(self.defaults)
        if context is _IN_FORCE:
            context = current()
        if context:
            metadata = fields.get("metadata")
            fields.update(context)
            if isinstance(metadata, Mapping) and "metadata" in context:
                fields["metadata"] = {**metadata, **context["metadata"]}
        return fields

    def state(self, name: str, make: Callable[[], Any]) -> Any:
        """Per-client state of one kind (made on first use), kept across ``instrument()`` again."""
        found = self.states.get(name)
        if found is None:
            found = self.states[name] = make()
        return found

    def warn(self, code: str, message: str) -> None:
        """Tell the tracker's ``on_warning`` (a ``Tracker``); another tracker's log gets it."""
        warn = getattr(self.tracker, "_warn", None)
        if callable(warn):
            from costtrack._warnings import TrackerWarning

            warn(TrackerWarning(code, message))
        else:
            logger.warning("costtrack: %s: %s", code, message)

    def report(self, error: Exception) -> None:
        report = getattr(self.tracker, "_report_error", None)
        if callable(report):
            report(error)
        else:
            logger.error("costtrack: instrumentation failed: %r", error)

    def patch(self, owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        """Shadow ``owner.name`` (a method of ``owner``'s class) with ``make(original)`` on the instance."""
        original = getattr(owner, name, None)
        if original is None or name in vars(owner):
            return
        wrapper = functools.wraps(original)(make(original))
        setattr(owner, name, wrapper)

        def undo() -> None:
            if vars(owner).get(name) is wrapper:
                delattr(owner, name)

        self.undo.append(undo)


class Call:
    """One model call: started when created, tracked once by ``finish`` or ``finish_response``.

    What the call is attributed to is fixed when it starts: the context in force then
    (``costtrack.attributes``, the run, a framework's claim) is the one its event is made in,
    and the reservation a ``tracker.reservation`` block offers is taken then, however late the
    call ends and on whichever thread, task or generator its stream is read.

    The call is also what a ``Tracker`` queues for its delivery thread (``_deferred.Deferred``):
    the calling thread keeps the status, the end and what the response says, and ``build``
    makes the event there (one object per call, no copy of the context's values)."""

    __slots__ = (
        "_capture",
        "_context",
        "_end",
        "_found",
        "_identity",
        "_instrumentation",
        "_model",
        "_read",
        "_reservation",
        "_start",
        "_status",
        "done",
    )
    _end: float
    _status: str
    _read: Optional[Read]
    _found: Any
    _identity: Optional[Mapping[str, Any]]

    def __init__(self, instrumentation: Instrumentation, model: Any) -> None:
        self._instrumentation = instrumentation
        self._model = model if isinstance(model, str) else None
        self._context: Context = copy_context()
        self._reservation: Optional[Pending] = take_offered()
        self._start = time.perf_counter()
        self.done = False

    def discard(self) -> None:
        """No call was made (the client refused its arguments): nothing is tracked, and the
        reservation taken goes back to its block."""
        self.done = True
        if self._reservation is not None:
            give_back(self._reservation)
            self._reservation = None

    def finish(self, status: str, usage: Optional[Usage] = None) -> None:
        """Track the call (once) with ``status``, its latency so far and ``usage`` (what a
        ``costtrack._provider_usage`` reader made of the response; ``None``: zero tokens)."""
        if self.done:
            return
        self.done = True
        self._end = time.perf_counter()
        self._status = status
        self._read = None
        self._found = _NOT_READ if usage is None else usage
        self._track(None)

    def finish_response(
        self, status: str, read: Read, response: Any, capture: Optional[Callable[[Any], Any]] = None
    ) -> None:
        """Track the call (once) with ``status``, its latency so far and what ``read(response,
        provider)`` makes of its (non-streamed) ``response``. With ``capture``, the calling thread
        only copies what ``read`` reads (``capture(response)``: plain dicts, or ``None`` when the
        response is not of the shape it copies), and ``read`` runs on the delivery thread."""
        if self.done:
            return
        self.done = True
        self._end = time.perf_counter()
        self._status = status
        self._read = read
        self._found = response
        self._track(capture)

    def _track(self, capture: Optional[Callable[[Any], Any]]) -> None:
        instrumentation = self._instrumentation
        try:
            context = self._context
            attributes = context.get(ATTRIBUTES)
            claim = context.get(claimed)
            self._identity = None
            if claim is not None:  # a framework hook around the call: this event is the one tracked
                claim.tracked = True
                self._identity = claim.identity
            offered = context.get(RESERVATION)
            if (
                instrumentation.at_once
                or (attributes is not None and "metadata" in attributes)
                or (offered is not None and not offered.taken)
            ):
                # The caller's metadata dicts, a tracker given each event, or a reservation
                # offered where the call started and not taken (one given back): made now, in
                # the context the call started in (``track`` reads it).
                self._read, self._found = None, self._usage()
                context.run(self._track_now)
                return
            read = self._read
            if read is not None and capture is not None:
                captured = capture(self._found)
                if captured is None:  # what the response says is read now; the event is made later
                    self._found, self._read = read(self._found, instrumentation.convention), None
                else:
                    self._found = captured
            elif read is not None:
                self._found, self._read = read(self._found, instrumentation.convention), None
            later = instrumentation.later
            assert later is not None  # not at_once
            later(self)
        except Exception as error:  # never into the application
            instrumentation.report(error)

    def _track_now(self) -> None:
        event = self.build()
        if event is not None:
            self._instrumentation.tracker.track(event)

    def _usage(self) -> Usage:
        read = self._read
        return self._found if read is None else read(self._found, self._instrumentation.convention)

    def build(self) -> Optional[TrackEvent]:
        """The event (``None``: it could not be made; the failure went to ``on_error``): on a
        delivery thread from what the calling thread kept (the attribution in force at the
        start: ``costtrack.attributes`` never changes a dict it has set)."""
        instrumentation = self._instrumentation
        try:
            usage = self._usage()
            fields = instrumentation.fields(self._context.get(ATTRIBUTES))
            if self._reservation is not None:
                fields["reservation"] = self._reservation
            return _event(
                instrumentation, self._model, usage, fields, self._identity, self._status, self._start, self._end
            )
        except Exception as error:
            instrumentation.report(error)
            return None

    def __call__(self) -> Optional[Tuple[str, bytes]]:
        return make_later(self._instrumentation.tracker, self.build)

    def fail(self, error: BaseException) -> None:
        self.finish(status_of(error))

    def end_with(self, error: BaseException) -> None:
        """The client's method raised ``error``: a ``TypeError`` is its arguments refused before
        any request (nothing to track), anything else the call's failure."""
        if isinstance(error, TypeError):
            self.discard()
        else:
            self.fail(error)

    def instrumentation_state(self, name: str, make: Callable[[], Any]) -> Any:
        return self._instrumentation.state(name, make)

    def warn_usage_missing(self, reason: str) -> None:
        self._instrumentation.warn(
            USAGE_MISSING, f"a {self._model or 'model'} call was tracked without its usage ({reason}): zero tokens"
        )

    @property
    def model(self) -> Optional[str]:
        """The model the call asked for."""
        return self._model

    @property
    def provider(self) -> str:
        return self._instrumentation.provider

    @property
    def convention(self) -> str:
        """Whose counting convention the call's usage follows (its readers' ``convention``)."""
        return self._instrumentation.convention

    def report(self, error: Exception) -> None:
        self._instrumentation.report(error)


#: What a reader makes of a response: ``read(response, provider)``.
Read = Callable[[Any, str], Usage]


def convention_of(route: str, provider: str, named: bool) -> str:
    """The convention of a client's calls (its first route's; ``named``: the provider was
    given to ``instrument()``, an OpenAI-compatible API)."""
    if named:
        found = next((value for key, value in ROUTES.items() if key[0] == f"{route} provider={provider}"), None)
        return found[1] if found is not None else "openai"
    return next((value[1] for key, value in ROUTES.items() if key[0] == route), "openai")


#: The counts whose meaning the convention decides (an event without them costs the same
#: under every convention, and says none).
_CONVENTION_DECIDES = ("cached_input_tokens", "cache_write_tokens", "reasoning_tokens")
#: The event's ``metadata`` key naming the convention its counts follow.
USAGE_CONVENTION = "usage_convention"


def _event(
    instrumentation: Instrumentation,
    model: Optional[str],
    usage: Usage,
    fields: Dict[str, Any],
    identity: Optional[Mapping[str, Any]],
    status: str,
    start: float,
    end: float,
) -> TrackEvent:
    found_model, counts, pricing = usage
    if counts.get("prompt_tokens") is None and counts.get("completion_tokens") is None:
        counts = {**counts, **_NO_USAGE}
    elif any(counts.get(name) for name in _CONVENTION_DECIDES):
        pricing = {**pricing, USAGE_CONVENTION: instrumentation.convention}
    if identity is not None:
        with_identity(fields, identity)
    fields["latency_ms"] = int((end - start) * 1000 + 0.5)
    fields["status"] = status
    return provider_event("instrument", (found_model or model, counts, pricing), instrumentation.provider, None, fields)


def status_of(error: BaseException) -> str:
    """``cancelled`` for a cancellation, ``timeout`` for any timeout exception (the clients'
    ``APITimeoutError``, httpx's and botocore's timeouts, ``TimeoutError``), else ``error``."""
    names = [cls.__name__ for cls in type(error).__mro__]
    if isinstance(error, (KeyboardInterrupt, GeneratorExit)) or "CancelledError" in names:
        return "cancelled"
    if isinstance(error, TimeoutError) or any("Timeout" in name for name in names):
        return "timeout"
    return "error"
