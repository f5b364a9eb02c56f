"""An owners' write sent again with its ``Idempotency-Key`` is answered from the record of the
first, whatever has changed since (docs: Concepts › Idempotency): a retry after a timeout
never creates a second budget or webhook, and never meets a limit the first one passed.

A key is claimed before the write runs and completed with its answer after it, so two
requests with one key never both write. A claim whose request died (the function timed out
between the claim and the answer) lapses after ``CLAIM_SECONDS``, longer than any request may
run; a refused or failed write records nothing, so its retry is tried afresh.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

#: Longer than the owners' function may run (its timeout in the template is 30 s).
CLAIM_SECONDS = 60
#: As long as an event's key is kept (CONTRACT §4: never less than 35 days).
RECORD_DAYS = 35


@dataclass(frozen=True)
class RecordedWrite:
    """What the record of a key holds: the request it was claimed for and, once the write is
    done, its answer (``status`` None while the claim is live)."""

    fingerprint: str
    claimed_until: str
    status: int | None = None
    body: str | None = None

    @property
    def done(self) -> bool:
        return self.status is not None


def request_fingerprint(method: str, route: str, path: Mapping[str, str], body: Any) -> str:
    """The request a key stands for: the same route, path ids and JSON body (its keys in any
    order, its spacing any) give the same fingerprint."""
    canonical = json.dumps([method, route, dict(sorted(path.items())), body], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class WriteRecords(Protocol):
    """Where the records of owners' writes are kept (one per workspace and key)."""

    def claim_write(
        self, workspace_id: str, key: str, fingerprint: str, until: str, *, lapsed: RecordedWrite | None = None
    ) -> RecordedWrite | None:
        """Claim ``key`` for this request: None when claimed, else the record that holds it.
        With ``lapsed``, take over that record if it is still the one read."""
        ...

    def complete_write(self, workspace_id: str, key: str, fingerprint: str, status: int, body: str) -> None: ...

    def release_write(self, workspace_id: str, key: str, fingerprint: str) -> None: ...
