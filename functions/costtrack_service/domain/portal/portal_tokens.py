"""Portal tokens: a bearer credential that lets one customer read its own usage
(docs/guides/portal.md).

A token is a random secret starting with ``ctp_``, stored like the keys are (its SHA-256, never
the secret) in the keys table, so the owners' and ingestion keys' look-up by hash finds it and
refuses it by its kind. It names one workspace and one customer, lives ``ttl_seconds`` and can be
revoked; both hold for every request that starts more than a second later, as a key's state does
(docs/api-rules.md#how-fast-changes-take-effect): the portal reads its token on each request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ids import random_token
from costtrack_service.domain.pricing.entries import format_timestamp, parse_timestamp
from costtrack_service.domain.workspaces.keys import KeyState, hash_secret, plausible_secret

PORTAL_TOKEN_PREFIX = "ctp_"  # noqa: S105 - a prefix, not a secret
#: The keys table's ``kind`` of a portal token (ingestion keys and admin tokens have their own).
PORTAL = "portal"
MAX_TTL_SECONDS = 30 * 24 * 3600
_SECRET_LENGTH = 40
#: Characters after the prefix that name a token in lists and in ``DELETE``: about 71 bits, so
#: two tokens of a workspace never share one, and far from enough to use it.
_NAMING_LENGTH = 12


def check_ttl(raw: object) -> int:
    if type(raw) is not int or not 1 <= raw <= MAX_TTL_SECONDS:
        raise invalid("ttl_seconds", f"ttl_seconds must be an integer from 1 to {MAX_TTL_SECONDS}")
    return raw


def new_portal_secret() -> str:
    return PORTAL_TOKEN_PREFIX + random_token(_SECRET_LENGTH)


def token_prefix(secret: str) -> str:
    return secret[: len(PORTAL_TOKEN_PREFIX) + _NAMING_LENGTH]


def plausible_portal_token(candidate: str | None) -> str | None:
    """The presented secret when it can be a portal token, else None (no look-up needed)."""
    return candidate if candidate and plausible_secret(candidate, PORTAL_TOKEN_PREFIX) else None


@dataclass(frozen=True)
class PortalToken:
    token_prefix: str
    token_hash: str
    workspace_id: str
    customer_id: str
    created_at: str
    expires_at: str
    state: KeyState = KeyState.ACTIVE

    @classmethod
    def issue(cls, workspace_id: str, customer_id: str, ttl_seconds: int, now: datetime) -> tuple[str, PortalToken]:
        """A new token (its secret, shown once, and its record)."""
        secret = new_portal_secret()
        record = cls(
            token_prefix=token_prefix(secret),
            token_hash=hash_secret(secret),
            workspace_id=workspace_id,
            customer_id=customer_id,
            created_at=format_timestamp(now),
            expires_at=format_timestamp(now + timedelta(seconds=ttl_seconds)),
        )
        return secret, record

    def expired(self, now: datetime) -> bool:
        return now >= parse_timestamp(self.expires_at)

    def status(self, now: datetime) -> str:
        if self.state is not KeyState.ACTIVE:
            return "revoked"
        return "expired" if self.expired(now) else "active"

    def to_dict(self, now: datetime) -> dict[str, Any]:
        """The token as owners see it in lists: never the secret, never its hash."""
        return {
            "token_prefix": self.token_prefix,
            "customer_id": self.customer_id,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "status": self.status(now),
        }

    def to_item(self) -> dict[str, Any]:
        # ``key_id`` is the keys table's by_workspace index key: the prefix finds the token.
        return {
            "key_hash": self.token_hash,
            "key_id": self.token_prefix,
            "workspace_id": self.workspace_id,
            "kind": PORTAL,
            "state": self.state.value,
            "display_prefix": self.token_prefix,
            "customer_id": self.customer_id,
            "created_at": self.created_at,
            "valid_until": self.expires_at,
        }

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> PortalToken | None:
        """A stored portal token; None for any other item of the keys table."""
        if item.get("kind") != PORTAL:
            return None
        return cls(
            token_prefix=str(item["key_id"]),
            token_hash=str(item["key_hash"]),
            workspace_id=str(item["workspace_id"]),
            customer_id=str(item["customer_id"]),
            created_at=str(item["created_at"]),
            expires_at=str(item["valid_until"]),
            state=KeyState(item["state"]),
        )


def invalid_portal_token() -> ApiError:
    return ApiError("INVALID_PORTAL_TOKEN", "The portal token is missing, invalid, expired or revoked.")


def live_token(record: PortalToken | None, now: datetime) -> PortalToken:
    """The token a portal request may act as: active and not expired, else 401."""
    if record is None or record.state is not KeyState.ACTIVE or record.expired(now):
        raise invalid_portal_token()
    return record
