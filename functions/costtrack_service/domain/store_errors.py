"""What the store raises when it cannot do what was asked: its own errors, not HTTP ones.

The store knows tables and conditions, not status codes; the HTTP edge maps these to the
contract's error body (docs/api-rules.md#errors) and ``costtrack admin`` prints their message.
"""

from __future__ import annotations


class StoreError(Exception):
    """A store operation that did not happen; the message says why, for people."""


class StoreUnavailable(StoreError):
    """The database is throttling or unreachable: a 503 the client should retry."""


class SurveyConflict(StoreUnavailable):
    """The allowance survey's ``TransactGetItems`` met a write in flight on one of its items:
    read again after a pause (a 503 to callers that do not)."""


class NotFound(StoreError):
    """The item to change does not exist (or no longer does)."""


class Conflict(StoreError):
    """The write's condition failed: what it would replace changed meanwhile, or would clash."""


class TransitionRefused(Conflict):
    """The item exists, but its current state does not allow the change (a key revoked meanwhile)."""
