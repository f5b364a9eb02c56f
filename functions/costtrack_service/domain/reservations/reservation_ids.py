"""Reservation ids: where a reservation's holds are, so settling and releasing need no lookup.

``rsv_<entry>.<expires>.<month>[.<ref><shard>]…[:<ref><shard>]``: the hold's name in its shards (16
characters), its expiry (epoch seconds, base 36), the ledgers' month (``YYYYMM``) and, per
enforced budget instance, the ledger's ref (10 hex digits) and the shard (two digits); a
customer's credit ledger, which has no month, follows ``:`` instead of ``.``. At most
``MAX_PARTS`` budgets fit the 128 characters an event's ``reservation_id`` may have (CONTRACT
§10, §11). An id that does not parse is unknown (``reservation_unknown``), never an error.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from costtrack_service.domain.ids import random_token

PREFIX = "rsv_"
ENTRY_CHARS = 16
MAX_PARTS = 7
_ID = re.compile(r"rsv_([A-Za-z0-9]{16})\.([0-9a-z]{1,8})\.([0-9]{6})((?:[.:][0-9a-f]{10}[0-9]{2}){0,7})")
_PART = re.compile(r"([.:])([0-9a-f]{10})([0-9]{2})")
#: The month a credit ledger's items are keyed by: one ledger for all time.
CREDIT_PERIOD = "credit"


@dataclass(frozen=True)
class Part:
    ref: str
    shard: int
    credit: bool = False  # a customer's credit ledger (spent by the charge; no month)

    def month(self, month: str) -> str:
        """The ledger's month in item keys: the reservation's, or none for credits."""
        return CREDIT_PERIOD if self.credit else month


@dataclass(frozen=True)
class ReservationId:
    entry: str
    expires: int
    month: str  # "2026-11"
    parts: tuple[Part, ...]

    def __str__(self) -> str:
        parts = "".join(f"{':' if part.credit else '.'}{part.ref}{part.shard:02d}" for part in self.parts)
        return f"{PREFIX}{self.entry}.{_base36(self.expires)}.{self.month.replace('-', '')}{parts}"


def new_entry(workspace_id: str, idempotency_key: str | None) -> str:
    """A random entry, or one derived from the Idempotency-Key (a retry names the same hold)."""
    if idempotency_key is None:
        return random_token(ENTRY_CHARS)
    digest = hashlib.sha256(f"{workspace_id}\x00{idempotency_key}".encode("utf-8", "surrogatepass")).digest()
    return base64.b32encode(digest).decode("ascii")[:ENTRY_CHARS].lower().replace("=", "a")


def parse(reservation_id: str) -> ReservationId | None:
    match = _ID.fullmatch(reservation_id)
    if match is None:
        return None
    entry, expires, month, rest = match.groups()
    parts = tuple(Part(ref, int(shard), mark == ":") for mark, ref, shard in _PART.findall(rest))
    return ReservationId(entry, int(expires, 36), f"{month[:4]}-{month[4:]}", parts)


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        value, digit = divmod(value, 36)
        text = digits[digit] + text
        if not value:
            return text
