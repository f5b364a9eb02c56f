"""The OpenAI Agents SDK integration (``pip install openai-agents``): a tracing processor that
tracks every model call of every agent run as one event, with the run's identity::

    from agents import add_trace_processor
    from costtrack.integrations.openai_agents import CosttrackTracingProcessor

    add_trace_processor(CosttrackTracingProcessor(tracker=tracker, feature="support-agent"))

Why a tracing processor and not ``RunHooks``: it is registered once for the process and sees
every model call of every run (handoffs, agents used as tools, nested runs) without a
``hooks=`` argument at each ``Runner.run``; it is told of failed and cancelled calls (the span's
error; ``RunHooks`` has no hook for a failed model call); and each call's span carries the run's
trace id, its parent span and, through the trace, the workflow name and group id. The Agents
SDK creates a ``response`` span (Responses API models) or a ``generation`` span (Chat
Completions models, ``LitellmModel``) around each model call and records its usage there, with
cached and reasoning tokens apart (``input_tokens`` counts the cache reads, ``output_tokens``
the reasoning: OpenAI's convention). The processor sees nothing when the Agents SDK's tracing
is off (``set_tracing_disabled(True)``, ``RunConfig(tracing_disabled=True)``,
``OPENAI_AGENTS_DISABLE_TRACING=1``).

Run identity, on the event's own fields (CONTRACT section 11) by ``agents_identity``: the trace
id as ``trace_id`` (``trace_<32 hex>``, sent as its 32 hex digits, as OTLP trace ids are), the
group id as ``session_id``, the parent span id as ``parent_id`` (24 hex digits) and the workflow
name as ``run_name``.

With ``costtrack.instrument(client)`` on the client the agents use as well, each model call is
tracked once: the processor puts a claim in the context of the call, the instrumented client
tracks the call (its own exact reading of the response, latency and status) with the run's
identity and marks the claim, and the processor leaves that call out.

Only this module imports ``agents``; ``import costtrack`` never does.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Dict, Optional, Tuple

from agents.tracing import Span, Trace, TracingProcessor

from costtrack._instrument_core import Claim, claimed, status_of
from costtrack._provider_events import Usage, get
from costtrack._provider_usage import openai_usage
from costtrack.integrations._usage import Run, all_in_usage, instrumentation, run_identity

__all__ = ["CosttrackTracingProcessor", "agents_identity"]

#: The span types of a model call.
_MODEL_SPANS = frozenset({"generation", "response"})
#: Traces and calls that never ended are forgotten beyond this many.
_MAX_OPEN = 10_000
#: ``LitellmModel``'s ``provider/model`` prefixes that are not costtrack's provider id as they are.
_PREFIXES = {"gemini": "google", "vertex_ai": "google", "together_ai": "together", "fireworks_ai": "fireworks"}


def agents_identity(
    trace_id: Optional[str], group_id: Optional[str], parent_id: Optional[str], workflow_name: Optional[str]
) -> Dict[str, Any]:
    """The run identity of a model call from the Agents SDK's ids: ``trace_<hex>`` and
    ``span_<hex>`` without their prefix (the form OTLP ids have), the group id as the session."""

    def bare(value: Optional[str], prefix: str) -> Optional[str]:
        if isinstance(value, str) and value.startswith(prefix):
            return value[len(prefix) :]
        return value

    return run_identity(
        trace_id=bare(trace_id, "trace_"),
        session_id=group_id,
        parent_id=bare(parent_id, "span_"),
        run_name=workflow_name,
    )


class _Open:
    """A model call under way: its run (attribution, start time), its claim, and the claim in
    force before it (restored when the call's span ends)."""

    __slots__ = ("claim", "previous", "run")

    def __init__(self, run: Run, claim: Claim, previous: Optional[Claim]) -> None:
        self.run, self.claim, self.previous = run, claim, previous


def _split_model(model: Any) -> Tuple[Optional[str], Optional[str]]:
    """The provider a ``LitellmModel`` name gives (``anthropic/claude-...``) and the model."""
    if not isinstance(model, str) or not model:
        return None, None
    prefix, slash, rest = model.partition("/")
    if slash and rest and prefix.isidentifier():
        return _PREFIXES.get(prefix.lower(), prefix.lower()), rest
    return None, model


def _usage(span_data: Any, provider: str, model: Optional[str]) -> Optional[Usage]:
    """What the span says of the call's usage: the Responses API's whole response when the span
    kept it (``trace_include_sensitive_data``; read as ``from_openai`` reads it), else the span's
    usage (Responses-shaped, all-in)."""
    response = get(span_data, "response")
    if response is not None and get(response, "usage") is not None:
        found_model, counts, pricing = openai_usage(response, provider)
        return found_model or model, counts, pricing
    usage = get(span_data, "usage")
    if not isinstance(usage, dict):
        return None
    inputs, outputs = usage.get("input_tokens_details"), usage.get("output_tokens_details")
    return all_in_usage(
        provider,
        model,
        prompt=usage.get("input_tokens"),
        completion=usage.get("output_tokens"),
        cache_read=get(inputs, "cached_tokens"),
        cache_write=get(inputs, "cache_write_tokens"),
        reasoning=get(outputs, "reasoning_tokens"),
        total=usage.get("total_tokens"),
    )


def _requested_model(error: Optional[BaseException]) -> Optional[str]:
    """The model a failed call asked for, from the request the ``openai`` client's error keeps
    (a ``response`` span names no model until the response arrives)."""
    try:
        content = getattr(getattr(error, "request", None), "content", None)
        model = json.loads(content).get("model") if isinstance(content, bytes) and content else None
    except Exception:
        return None
    return model if isinstance(model, str) and model else None


def _status(span: Any) -> str:
    """``success``; else from the exception the span's ``with`` block is ending on (the Agents
    SDK ends a model call's span as the exception passes), or the span's recorded error."""
    error = get(span, "error")
    raised = sys.exc_info()[1]
    if raised is not None and (error is not None or status_of(raised) == "cancelled"):
        return status_of(raised)
    if error is None:
        return "success"
    text = str(error).lower()
    return "timeout" if "timeout" in text or "timed out" in text else "error"


class CosttrackTracingProcessor(TracingProcessor):
    """Tracks every model call of the Agents SDK (each ``response`` and ``generation`` span) as
    one event: its usage, ``latency_ms`` (span start to end), ``status`` (``success``, else
    ``error``, ``timeout``, ``cancelled``; zero tokens unless the span recorded usage before
    the failure) and the run's identity (``agents_identity``). ``defaults`` are those of
    ``costtrack.instrument`` (``feature``, ``customer_id``, ``customer_name``, ``environment``,
    ``metadata``, ``provider``), under what ``costtrack.attributes`` sets where the call is made.

    The provider is ``provider=``, else a ``LitellmModel``'s ``provider/`` prefix, else
    ``openai``. Register it with ``agents.add_trace_processor`` (beside the SDK's own exporter)
    or ``agents.set_trace_processors`` (instead of it). It runs inline, in the task of the call,
    so the event is tracked before the call returns."""

    def __init__(self, *, tracker: Any, **defaults: Any) -> None:
        self._instrumentation = instrumentation("CosttrackTracingProcessor", tracker, defaults)
        self._traces: Dict[str, Tuple[Optional[str], Optional[str]]] = {}
        self._calls: Dict[str, _Open] = {}
        self._lock = threading.Lock()

    def on_trace_start(self, trace: Trace) -> None:
        try:
            with self._lock:
                if len(self._traces) >= _MAX_OPEN:
                    self._traces.pop(next(iter(self._traces)))
                self._traces[trace.trace_id] = (get(trace, "name"), get(trace, "group_id"))
        except Exception as error:  # never in the way
            self._instrumentation.report(error)

    def on_trace_end(self, trace: Trace) -> None:
        with self._lock:
            self._traces.pop(get(trace, "trace_id"), None)

    def on_span_start(self, span: Span[Any]) -> None:
        try:
            if get(span.span_data, "type") not in _MODEL_SPANS:
                return
            with self._lock:
                name, group = self._traces.get(span.trace_id, (None, None))
            identity = agents_identity(span.trace_id, group, span.parent_id, name)
            named, model = _split_model(get(span.span_data, "model"))
            claim = Claim(identity)
            call = _Open(Run(self._instrumentation, named, model, identity=identity), claim, claimed.get())
            # The span starts in the context of the model call: an instrumented client sees the claim.
            claimed.set(claim)
            with self._lock:
                if len(self._calls) >= _MAX_OPEN:
                    self._calls.pop(next(iter(self._calls)))
                self._calls[span.span_id] = call
        except Exception as error:
            self._instrumentation.report(error)

    def on_span_end(self, span: Span[Any]) -> None:
        with self._lock:
            call = self._calls.pop(get(span, "span_id"), None)
        if call is None:
            return
        try:
            if claimed.get() is call.claim:
                claimed.set(call.previous)
            if call.claim.tracked:  # the instrumented client tracked it, with the run's identity
                return
            named, model = _split_model(get(span.span_data, "model") or _requested_model(sys.exc_info()[1]))
            provider = call.run.provider_for(named or "openai")
            usage = _usage(span.span_data, provider, model)
            if usage is None and model is not None:
                usage = (model, {}, {})
        except Exception as error:
            self._instrumentation.report(error)
            return
        call.run.finish(_status(span), usage, provider)

    def shutdown(self) -> None:
        """Nothing to release: the tracker delivers the events (and is shut down by its owner)."""

    def force_flush(self) -> None:
        """Events are handed to the tracker as each call ends; its own ``flush`` delivers them."""
