"""What the instrumentation tests share: a tracker that records what it is given (conftest's
``recorder`` fixture; ``canned`` is the canned provider in an isolated environment), and the
check that an event is the helper's plus the call's status and latency. (sdk/python/tests is
not a package: imported by name, like canned_provider.)"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from costtrack._conventions import CONVENTIONS
from costtrack.validation import validate_event


class Recorder:
    """A tracker for ``costtrack.instrument``: keeps each event, validated as the service would,
    and each error the instrumentation reports (``Tracker`` reports them to ``on_error``)."""

    def __init__(self) -> None:
        self.events: List[Dict[str, Any]] = []
        self.errors: List[Exception] = []

    def track(self, event: Any) -> None:
        self.events.append(validate_event(event).fields)

    def _report_error(self, error: Exception) -> None:
        self.errors.append(error)

    @property
    def event(self) -> Dict[str, Any]:
        """The one event tracked."""
        assert not self.errors, self.errors
        assert len(self.events) == 1, self.events
        return self.events[0]


def without_convention(event: Dict[str, Any], convention: Optional[str] = None) -> Dict[str, Any]:
    """``event`` without ``metadata.usage_convention``, which an instrumented event has only
    when its counts have cached, cache-write or reasoning tokens (``convention``: the one it
    must name); a framework hook's events have none."""
    metadata = dict(event.get("metadata") or {})
    found = metadata.pop("usage_convention", None)
    decides = any(event.get(name) for name in ("cached_input_tokens", "cache_write_tokens", "reasoning_tokens"))
    assert found is None or decides, event
    assert found is None or found in CONVENTIONS, event
    assert convention is None or found == convention, event
    plain = {name: value for name, value in event.items() if name != "metadata"}
    if metadata:
        plain["metadata"] = metadata
    return plain


def as_helper_gives(event: Dict[str, Any], expected: Any, status: str = "success") -> None:
    """``event`` is ``expected`` (the provider helper's event for the same response) plus the
    call's status and a measured latency (and the convention its counts follow)."""
    event = without_convention(event)
    latency = event.get("latency_ms")
    assert isinstance(latency, int) and 0 <= latency < 10_000, event
    assert event == {**validate_event(expected).fields, "status": status, "latency_ms": latency}


def failed(provider_id: str, model: str, status: str, **fields: Any) -> Dict[str, Any]:
    """The event of a call that failed before the provider reported usage: zero tokens."""
    return {
        "provider": provider_id,
        "model": model,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "status": status,
        **fields,
    }


def without_latency(event: Dict[str, Any]) -> Dict[str, Any]:
    assert isinstance(event.get("latency_ms"), int), event
    return {name: value for name, value in event.items() if name != "latency_ms"}
