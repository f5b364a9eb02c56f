"""The records of owners' writes in memory: what ``store/write_records.py`` does in DynamoDB,
with the same conditions, for the owners' API on the in-memory store."""

from __future__ import annotations

import threading
from dataclasses import replace

from costtrack_service.domain.recorded_writes import RecordedWrite


class MemoryWriteRecords:
    def __init__(self) -> None:
        self.recorded_writes: dict[tuple[str, str], RecordedWrite] = {}
        self._write_lock = threading.Lock()

    def claim_write(
        self, workspace_id: str, key: str, fingerprint: str, until: str, *, lapsed: RecordedWrite | None = None
    ) -> RecordedWrite | None:
        with self._write_lock:
            held = self.recorded_writes.get((workspace_id, key))
            if held is not None and not (lapsed is not None and held == lapsed and not held.done):
                return held
            self.recorded_writes[(workspace_id, key)] = RecordedWrite(fingerprint, until)
            return None

    def complete_write(self, workspace_id: str, key: str, fingerprint: str, status: int, body: str) -> None:
        with self._write_lock:
            held = self.recorded_writes[(workspace_id, key)]
            if held.fingerprint == fingerprint:
                self.recorded_writes[(workspace_id, key)] = replace(held, status=status, body=body)

    def release_write(self, workspace_id: str, key: str, fingerprint: str) -> None:
        with self._write_lock:
            held = self.recorded_writes.get((workspace_id, key))
            if held is not None and held.fingerprint == fingerprint and not held.done:
                del self.recorded_writes[(workspace_id, key)]
