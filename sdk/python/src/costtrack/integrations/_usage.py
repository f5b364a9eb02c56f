"""What the framework integrations share: a framework's usage, normalized across providers
("all-in": the input count includes cache reads and writes, the output count includes reasoning),
read back into each provider's own conventions, as costtrack prices them (docs/api-rules.md#cost);
and the tracking of one finished run. Imports no framework."""

from __future__ import annotations

import re
import time
from typing import Any, Dict, Mapping, Optional

from costtrack._instrument_core import DEFAULT_FIELDS, Instrumentation, with_identity
from costtrack._pricing_metadata import as_count
from costtrack._provider_events import Usage, provider_event

__all__ = ["Run", "all_in_usage", "instrumentation", "run_identity"]

#: CONTRACT section 11: the form of ``trace_id``, ``session_id`` and ``parent_id``.
_RUN_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

#: Providers whose prompt count excludes the cache (costtrack's Anthropic and Bedrock events).
_PROMPT_WITHOUT_CACHE = frozenset({"anthropic", "bedrock"})
#: Providers whose completion count excludes reasoning, passed apart (costtrack's Gemini events).
_COMPLETION_WITHOUT_REASONING = frozenset({"google", "gemini"})


def all_in_usage(
    provider: str,
    model: Any,
    *,
    prompt: Any,
    completion: Any,
    cache_read: Any = None,
    cache_write: Any = None,
    reasoning: Any = None,
    total: Any = None,
    pricing: Optional[Dict[str, Any]] = None,
) -> Usage:
    """``Usage`` from all-in counts: for Anthropic and Bedrock the cache is taken out of the
    prompt, for Gemini the reasoning out of the completion (and passed as ``reasoning_tokens``),
    so that no token is counted twice or lost. ``total`` is passed only where nothing was taken
    out (elsewhere the service computes it, as for the direct helpers)."""
    prompt, completion = as_count(prompt), as_count(completion)
    cached, written, thought = as_count(cache_read), as_count(cache_write), as_count(reasoning)
    counts: Dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_input_tokens": cached or None,
        "cache_write_tokens": written or None,
    }
    if provider in _PROMPT_WITHOUT_CACHE and prompt is not None:
        counts["prompt_tokens"] = max(0, prompt - (cached or 0) - (written or 0))
    elif provider in _COMPLETION_WITHOUT_REASONING and thought:
        if completion is not None and completion >= thought:
            counts["completion_tokens"] = completion - thought
        counts["reasoning_tokens"] = thought
    else:
        counts["total_tokens"] = as_count(total)
    return model, counts, dict(pricing or {})


def run_identity(
    *,
    trace_id: Optional[str] = None,
    session_id: Optional[str] = None,
    parent_id: Optional[str] = None,
    run_name: Optional[str] = None,
) -> Dict[str, Any]:
    """The event fields that name the run a model call belongs to (CONTRACT section 11:
    ``trace_id``, ``session_id``, ``parent_id``, ``run_name``), each kept only in the form the
    contract allows (ids of 1 to 128 ``[A-Za-z0-9._:-]``, a name trimmed to 1 to 200 characters),
    so that a framework's odd id never makes the whole event invalid."""
    found: Dict[str, str] = {}
    for name, value in (("trace_id", trace_id), ("session_id", session_id), ("parent_id", parent_id)):
        if isinstance(value, str) and _RUN_ID.fullmatch(value):
            found[name] = value
    if isinstance(run_name, str) and 0 < len(run_name.strip()) <= 200:
        found["run_name"] = run_name.strip()
    return found


def instrumentation(integration: str, tracker: Any, defaults: Mapping[str, Any]) -> Instrumentation:
    """The tracker and defaults of a handler (the keyword arguments ``costtrack.instrument`` takes)."""
    unknown = sorted(set(defaults) - set(DEFAULT_FIELDS))
    if unknown:
        raise TypeError(f"{integration}() got an unexpected keyword argument {unknown[0]!r}")
    if not callable(getattr(tracker, "track", None)):
        raise TypeError(f"{integration}() needs tracker=, a costtrack.Tracker")
    return Instrumentation(tracker, "", defaults)


class Run:
    """One model run of a framework: its attribution (``costtrack.attributes`` in force when it
    started, over the handler's defaults) and start time; tracked once by ``finish``."""

    __slots__ = ("_fields", "_instrumentation", "_start", "model", "provider")

    def __init__(
        self,
        instrumentation: Instrumentation,
        provider: Optional[str],
        model: Optional[str],
        timed: bool = True,
        identity: Optional[Mapping[str, Any]] = None,
        fields: Optional[Dict[str, Any]] = None,
    ) -> None:
        """``timed``: the latency is measured from now to ``finish``; else ``finish`` is given it
        (``None``: not known, left out). ``identity``: the run's (``run_identity``). ``fields``:
        the attribution taken where the call was made (``Instrumentation.fields()`` there), when
        the run is tracked from elsewhere (another thread); else the one in force now."""
        self._instrumentation = instrumentation
        self._fields = with_identity(dict(fields) if fields is not None else instrumentation.fields(), identity or {})
        self._start: Optional[float] = time.perf_counter() if timed else None
        self.provider = provider
        self.model = model

    def provider_for(self, named: Optional[str] = None) -> str:
        """The event's provider: the handler's ``provider=``, else ``named`` (what the response
        says), else what the run's start said, else ``"unknown"``."""
        return self._instrumentation.provider or named or self.provider or "unknown"

    def finish(
        self, status: str, usage: Optional[Usage], provider: Optional[str] = None, latency_ms: Optional[int] = None
    ) -> None:
        """Track the run with ``status`` and ``usage`` (``None``, or no counts: zero tokens) as
        ``provider`` (``provider_for()`` when not given)."""
        try:
            if self._start is not None:
                latency_ms = int((time.perf_counter() - self._start) * 1000 + 0.5)
            found_model, counts, pricing = usage if usage is not None else (None, {}, {})
            if counts.get("prompt_tokens") is None and counts.get("completion_tokens") is None:
                counts = {**counts, "prompt_tokens": 0, "completion_tokens": 0}
            fields = {**self._fields, "status": status}
            if latency_ms is not None:
                fields["latency_ms"] = max(0, latency_ms)
            named = provider or self.provider_for()
            event = provider_event("track", (found_model or self.model, counts, pricing), named, None, fields)
            self._instrumentation.tracker.track(event)
        except Exception as error:  # never into the application
            self._instrumentation.report(error)
