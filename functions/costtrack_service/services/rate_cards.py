"""A workspace's rate cards (docs/guides/billing.md#rate-cards), for the owners' API
(``/v1/workspace/rate-cards``) and ``costtrack admin billing rate-cards``.

A ``PUT`` adds a version. With an ``Idempotency-Key`` it is replay-safe (docs/api-rules.md#idempotency):
the same key with the same body answers the version it made, a different body is 422.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from costtrack_service.domain.billing.rate_card_versions import (
    RATE_CARD_ID,
    RateCardVersion,
    check_rate_card_id,
    new_version,
    parse_terms,
    version_at,
)
from costtrack_service.domain.cursors import checked_limit, decode_cursor, encode_cursor, keyed_page, scope_of
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.event_validation import parse_idempotency_key
from costtrack_service.services.workspace import not_found

#: A page of the rate-card list: by id, a key order that new cards or versions do not reorder.
MAX_CARDS = 100
CARD_POSITION = {"card": RATE_CARD_ID}


class RateCardRecords(Protocol):
    def put_rate_card_version(self, workspace_id: str, version: RateCardVersion) -> None: ...

    def rate_card_versions(self, workspace_id: str, rate_card_id: str) -> list[RateCardVersion]: ...

    def rate_cards(self, workspace_id: str) -> dict[str, list[RateCardVersion]]: ...


class RateCardStore(Protocol):
    """The part of the store rate cards live in."""

    @property
    def billing(self) -> RateCardRecords: ...


@dataclass(frozen=True)
class Written:
    """A write's answer and whether it replays an earlier one."""

    body: dict[str, Any]
    replayed: bool = False


def idempotency_key_reused() -> ApiError:
    return ApiError(
        "IDEMPOTENCY_KEY_REUSED",
        "This Idempotency-Key was already used for a different rate card version; use a new key per change.",
    )


class RateCardService:
    def __init__(self, store: RateCardStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock

    def put(self, workspace_id: str, rate_card_id: str, body: object, idempotency_key: str | None = None) -> Written:
        """Add a version to the card (creating it)."""
        check_rate_card_id(rate_card_id)
        key = parse_idempotency_key(idempotency_key)
        now = self.clock()
        terms = parse_terms(body, now)
        existing = self.store.billing.rate_card_versions(workspace_id, rate_card_id)
        if key is not None:
            earlier = next((version for version in existing if version.idempotency_key == key), None)
            if earlier is not None:
                if earlier.fingerprint != terms.fingerprint:
                    raise idempotency_key_reused()
                return Written(earlier.to_dict(), replayed=True)
        version = new_version(rate_card_id, terms, existing, now, key)
        self.store.billing.put_rate_card_version(workspace_id, version)
        return Written(version.to_dict())

    def get(self, workspace_id: str, rate_card_id: str) -> dict[str, Any]:
        """The card's versions, oldest first, and the one in force now."""
        check_rate_card_id(rate_card_id)
        versions = self.store.billing.rate_card_versions(workspace_id, rate_card_id)
        if not versions:
            raise not_found("rate card")
        return _card(rate_card_id, versions, self.clock())

    def list(self, workspace_id: str, limit: int = MAX_CARDS, cursor: str | None = None) -> dict[str, Any]:
        """The cards by id, a page of ``limit`` after the cursor's card (docs/guides/dashboard.md, the paged lists)."""
        limit = checked_limit(limit, MAX_CARDS)
        scope = scope_of("rate-cards", workspace_id, {})
        after = (
            decode_cursor(cursor, scope, CARD_POSITION, required=frozenset(CARD_POSITION))["card"] if cursor else None
        )
        now = self.clock()
        cards = sorted(self.store.billing.rate_cards(workspace_id).items())
        page, more = keyed_page(cards, lambda card: card[0], after, limit)
        return {
            "rate_cards": [_card(card_id, versions, now, summary=True) for card_id, versions in page],
            "next_cursor": encode_cursor(scope, {"card": page[-1][0]}) if more else None,
        }


def _card(
    rate_card_id: str, versions: list[RateCardVersion], now: datetime, *, summary: bool = False
) -> dict[str, Any]:
    ordered = sorted(versions, key=lambda version: version.version)
    current = version_at(ordered, now)
    assert current is not None
    data: dict[str, Any] = {
        "rate_card_id": rate_card_id,
        "name": ordered[-1].name,
        "current_version": current.version,
        "versions_count": len(ordered),
        "current": current.to_dict(),
    }
    if not summary:
        data["versions"] = [version.to_dict() for version in ordered]
    return data
