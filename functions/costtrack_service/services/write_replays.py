"""Owners' writes with an ``Idempotency-Key``: the first runs, a retry is answered from its
record, another request under the same key is refused (docs: Concepts › Idempotency)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.recorded_writes import CLAIM_SECONDS, RecordedWrite, WriteRecords

REUSED = "This Idempotency-Key was used for another request; use a new key for a new request."
IN_PROGRESS = "A request with this Idempotency-Key is still running; retry in a few seconds."


@dataclass(frozen=True)
class WriteAnswer:
    status: int
    body: Mapping[str, Any]
    replayed: bool


class WriteReplayService:
    def __init__(self, records: WriteRecords, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.records = records
        self.clock = clock

    def answer(
        self,
        workspace_id: str,
        key: str,
        fingerprint: str,
        write: Callable[[], tuple[int, Mapping[str, Any]]],
    ) -> WriteAnswer:
        """The write's answer: run once for a new key, the recorded one for its retries."""
        now = self.clock()
        until = format_timestamp(now + timedelta(seconds=CLAIM_SECONDS))
        held = self.records.claim_write(workspace_id, key, fingerprint, until)
        if held is not None:
            replay = self._recorded(held, fingerprint, now)
            if replay is not None:
                return replay
            # The claim lapsed: its request died before answering, so this one writes instead.
            if self.records.claim_write(workspace_id, key, fingerprint, until, lapsed=held) is not None:
                raise ApiError("CONFLICT", IN_PROGRESS, retry_after=1)
        try:
            status, body = write()
        except BaseException:
            self.records.release_write(workspace_id, key, fingerprint)
            raise
        self.records.complete_write(workspace_id, key, fingerprint, status, json.dumps(body, separators=(",", ":")))
        return WriteAnswer(status, body, replayed=False)

    @staticmethod
    def _recorded(held: RecordedWrite, fingerprint: str, now: datetime) -> WriteAnswer | None:
        """The answer a record gives this request, or None when its claim lapsed."""
        if held.fingerprint != fingerprint:
            raise ApiError("IDEMPOTENCY_KEY_REUSED", REUSED)
        if held.status is not None and held.body is not None:
            return WriteAnswer(held.status, json.loads(held.body), replayed=True)
        if held.claimed_until > format_timestamp(now):
            raise ApiError("CONFLICT", IN_PROGRESS, retry_after=1)
        return None
