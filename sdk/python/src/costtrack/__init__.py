"""costtrack: exact cost tracking for language-model calls.

    import costtrack

    tracker = costtrack.Tracker(api_key=os.environ["COSTTRACK_API_KEY"])
    tracker.track({"provider": "openai", "model": "gpt-5", "prompt_tokens": 1200, "completion_tokens": 300})

Names are loaded on first use: ``import costtrack`` (and ``costtrack.validation``, which the
service imports in AWS Lambda) stays cheap. Such a load runs on the thread that first uses the
name, through the import system and its locks, as any ``import`` statement of the application
does; no thread of costtrack ever imports (``Tracker(...)`` loads what its delivery needs: see
``_http``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, List

from costtrack._version import __version__

if TYPE_CHECKING:
    from costtrack import providers
    from costtrack._attributes import attributes
    from costtrack._event import TrackEvent
    from costtrack._instrument import instrument, uninstrument
    from costtrack._lambda import flush_after
    from costtrack._reservation import BudgetExceeded, Reservation, ReservationBudget, ReservationUnavailable
    from costtrack._runs import Run, Step
    from costtrack._tracker import Tracker
    from costtrack._warnings import ConfigurationError, TrackerWarning
    from costtrack.validation import EventValidationError, FieldError, validate_event
    from costtrack.webhooks import verify_webhook

__all__ = [
    "BudgetExceeded",
    "ConfigurationError",
    "EventValidationError",
    "FieldError",
    "Reservation",
    "ReservationBudget",
    "ReservationUnavailable",
    "Run",
    "Step",
    "TrackEvent",
    "Tracker",
    "TrackerWarning",
    "__version__",
    "attributes",
    "flush_after",
    "instrument",
    "providers",
    "uninstrument",
    "validate_event",
    "verify_webhook",
]

_HOMES = {
    "attributes": "costtrack._attributes",
    "BudgetExceeded": "costtrack._reservation",
    "Reservation": "costtrack._reservation",
    "ReservationBudget": "costtrack._reservation",
    "ReservationUnavailable": "costtrack._reservation",
    "Run": "costtrack._runs",
    "Step": "costtrack._runs",
    "ConfigurationError": "costtrack._warnings",
    "EventValidationError": "costtrack.validation",
    "FieldError": "costtrack.validation",
    "TrackEvent": "costtrack._event",
    "Tracker": "costtrack._tracker",
    "TrackerWarning": "costtrack._warnings",
    "flush_after": "costtrack._lambda",
    "instrument": "costtrack._instrument",
    "uninstrument": "costtrack._instrument",
    "validate_event": "costtrack.validation",
    "verify_webhook": "costtrack.webhooks",
}


def __getattr__(name: str) -> Any:
    if name == "providers":
        return importlib.import_module("costtrack.providers")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'costtrack' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))
