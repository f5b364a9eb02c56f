"""Ingestion keys: their form, how they are stored and what each state means.

A key is a random secret starting with ``ct_`` (so secret scanners can find a leaked one). The
service stores only its SHA-256 hash and a short display prefix; the secret is shown once, when
the key is created.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, get_args

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ids import random_token
from costtrack_service.domain.ingest.source import Source

INGEST_KEY_PREFIX = "ct_"
ADMIN_TOKEN_PREFIX = "cta_"  # noqa: S105 - a prefix, not a secret

#: A credential is an ingestion key (sends events) or a workspace admin token (reads usage,
#: manages keys). Each works only where its kind is expected.
KeyKind = Literal["ingest", "admin"]
KEY_KINDS: tuple[KeyKind, ...] = get_args(KeyKind)
INGEST, ADMIN = KEY_KINDS
PREFIXES = {INGEST: INGEST_KEY_PREFIX, ADMIN: ADMIN_TOKEN_PREFIX}
_SECRET_LENGTH = 40  # base62 characters: about 238 bits of randomness
_DISPLAY_LENGTH = 6  # characters after the prefix shown in key lists
_MAX_CREDENTIAL_LENGTH = 256


class KeyState(StrEnum):
    ACTIVE = "active"
    INACTIVE = "inactive"
    REVOKED = "revoked"


#: Allowed key-state changes: action -> (states it may start from, resulting state).
#: Reactivation only brings back a deactivated key; revocation is final (docs/api-rules.md#key-states).
KEY_TRANSITIONS: Mapping[str, tuple[frozenset[KeyState], KeyState]] = {
    "deactivate": (frozenset({KeyState.ACTIVE}), KeyState.INACTIVE),
    "reactivate": (frozenset({KeyState.INACTIVE}), KeyState.ACTIVE),
    "revoke": (frozenset({KeyState.ACTIVE, KeyState.INACTIVE}), KeyState.REVOKED),
}


def transition_refusal(action: str, current: KeyState) -> str | None:
    """Why ``action`` cannot apply to a key in state ``current`` (None when it can)."""
    allowed_from, target = KEY_TRANSITIONS[action]
    if current in allowed_from:
        return None
    if current is target:
        return f"the key is already {target.value}"
    if current is KeyState.REVOKED:
        return "the key is revoked, which is final: create a new key instead"
    return f"only an {' or '.join(sorted(s.value for s in allowed_from))} key can be {action}d"


@dataclass(frozen=True)
class KeyRecord:
    key_id: str
    key_hash: str
    workspace_id: str
    state: KeyState
    display_prefix: str
    created_at: str
    bound: Source | None = None
    last_used_at: str | None = None
    name: str | None = None
    kind: KeyKind = INGEST

    def to_dict(self) -> dict[str, Any]:
        """The key as owners see it: never the secret, never its hash."""
        return {
            "key_id": self.key_id,
            "workspace_id": self.workspace_id,
            "kind": self.kind,
            "name": self.name,
            "prefix": self.display_prefix,
            "state": self.state.value,
            "bound": str(self.bound) if self.bound else None,  # provider/model/feature
            "created_at": self.created_at,
            "last_used_at": self.last_used_at,
        }


def new_secret(prefix: str = INGEST_KEY_PREFIX) -> str:
    return prefix + random_token(_SECRET_LENGTH)


def new_key_id() -> str:
    return "key_" + random_token(16)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def display_prefix(secret: str) -> str:
    """Enough of the key to recognise it in a list, never enough to use it."""
    head, _, _ = secret.partition("_")
    return secret[: len(head) + 1 + _DISPLAY_LENGTH]


def plausible_secret(candidate: str, prefix: str) -> bool:
    """Whether what a request presented can be one of our secrets (its prefix, a sane length):
    anything else is refused without a look-up."""
    return candidate.startswith(prefix) and len(candidate) <= _MAX_CREDENTIAL_LENGTH


def invalid_key() -> ApiError:
    return ApiError("INVALID_API_KEY", "The API key is missing or invalid.")


def rejection_for(record: KeyRecord | None) -> ApiError | None:
    """The 401 an ingestion key in this state gets, or None for an active key."""
    if record is None or record.kind != INGEST:
        return invalid_key()
    if record.state is KeyState.REVOKED:
        return ApiError("REVOKED_API_KEY", "The API key was revoked; create and use a new key.")
    if record.state is KeyState.INACTIVE:
        return ApiError("INACTIVE_API_KEY", "The API key is deactivated; reactivate it or use an active key.")
    return None
