"""A workspace's customers as billing sees them, and the workspace's billing settings
(docs/guides/billing.md#customers).

Customers keep being created implicitly by events (their ``customer_id``); the resource adds
what billing needs: a rate card (else the workspace's default), the billing period's anchor day
and grace hours, ids in billing systems. An event whose customer has no card and whose
workspace has no default is not charged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from costtrack_service.domain.billing.rate_card_versions import check_rate_card_id
from costtrack_service.domain.errors import invalid

#: The same cap as an event's ``customer_id`` (docs/api-rules.md#event-fields).
MAX_CUSTOMER_ID_CHARS = 256
MAX_NAME_CHARS = 256
EXTERNAL_SYSTEMS = ("stripe", "lago", "openmeter", "metronome")
MAX_EXTERNAL_ID_CHARS = 255
ANCHOR_DAYS = (1, 28)
GRACE_HOURS = (0, 72)
MAX_FRAME_ANCESTORS = 10
MAX_FRAME_ANCESTOR_CHARS = 200
#: A CSP source expression: a scheme-qualified host (wildcard subdomains allowed), 'self' or 'none'.
FRAME_ANCESTOR = re.compile(r"'self'|'none'|https?://(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?")

CUSTOMER_FIELDS = frozenset({"name", "rate_card_id", "billing", "external_ids", "credits_enforced"})
SETTINGS_FIELDS = frozenset({"default_rate_card_id", "portal_frame_ancestors"})


def check_customer_id(customer_id: str) -> str:
    """A customer id as a path names it: the edge leaves a ``/`` (no path segment holds one)
    percent-encoded, so an id with ``%`` cannot be told from it and is refused."""
    if (
        not customer_id.strip()
        or len(customer_id) > MAX_CUSTOMER_ID_CHARS
        or not customer_id.isprintable()
        or "%" in customer_id
    ):
        raise invalid(
            "customer_id", f"customer_id must be 1 to {MAX_CUSTOMER_ID_CHARS} printable characters, without / or %"
        )
    return customer_id


@dataclass(frozen=True)
class Customer:
    customer_id: str
    name: str | None = None
    rate_card_id: str | None = None
    anchor_day: int = 1
    grace_hours: int = 1
    external_ids: Mapping[str, str] = field(default_factory=dict)
    credits_enforced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "customer_id": self.customer_id,
            "name": self.name,
            "rate_card_id": self.rate_card_id,
            "billing": {"anchor_day": self.anchor_day, "grace_hours": self.grace_hours},
            "external_ids": dict(self.external_ids),
            "credits_enforced": self.credits_enforced,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Customer:
        billing = data.get("billing") or {}
        return cls(
            customer_id=str(data["customer_id"]),
            name=data.get("name"),
            rate_card_id=data.get("rate_card_id"),
            anchor_day=int(billing.get("anchor_day", 1)),
            grace_hours=int(billing.get("grace_hours", 1)),
            external_ids={str(k): str(v) for k, v in (data.get("external_ids") or {}).items()},
            credits_enforced=bool(data.get("credits_enforced", False)),
        )


def parse_customer(customer_id: str, body: object) -> Customer:
    """A ``PUT`` of a customer (the whole customer: an absent field takes its default), or the
    400 naming the first bad field. Whether its rate card exists is the caller's check."""
    check_customer_id(customer_id)
    if not isinstance(body, Mapping):
        raise invalid("body", "the body must be a JSON object: name, rate_card_id, billing, external_ids")
    unknown = sorted(set(body) - CUSTOMER_FIELDS)
    if unknown:
        raise invalid(unknown[0], f"unknown field {unknown[0]}")
    name = body.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME_CHARS):
        raise invalid("name", f"name must be text of at most {MAX_NAME_CHARS} characters")
    rate_card_id = body.get("rate_card_id")
    if rate_card_id is not None:
        if not isinstance(rate_card_id, str):
            raise invalid("rate_card_id", "rate_card_id must be a rate card's id (text)")
        check_rate_card_id(rate_card_id)
    anchor_day, grace_hours = _billing(body.get("billing"))
    enforced = body.get("credits_enforced", False)
    if not isinstance(enforced, bool):
        raise invalid("credits_enforced", "credits_enforced must be true or false")
    return Customer(
        customer_id=customer_id,
        name=name,
        rate_card_id=rate_card_id,
        anchor_day=anchor_day,
        grace_hours=grace_hours,
        external_ids=_external_ids(body.get("external_ids")),
        credits_enforced=enforced,
    )


def _billing(raw: object) -> tuple[int, int]:
    if raw is None:
        return 1, 1
    if not isinstance(raw, Mapping):
        raise invalid("billing", "billing must be an object: anchor_day, grace_hours")
    unknown = sorted(set(raw) - {"anchor_day", "grace_hours"})
    if unknown:
        raise invalid(f"billing.{unknown[0]}", f"unknown field {unknown[0]}")
    anchor = _whole("billing.anchor_day", raw.get("anchor_day", 1), ANCHOR_DAYS)
    grace = _whole("billing.grace_hours", raw.get("grace_hours", 1), GRACE_HOURS)
    return anchor, grace


def _whole(name: str, value: object, bounds: tuple[int, int]) -> int:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid(name, f"{name} must be a whole number from {low} to {high}")
    return value


def _external_ids(raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise invalid("external_ids", "external_ids must be an object: " + ", ".join(EXTERNAL_SYSTEMS))
    ids = {}
    for system, value in raw.items():
        if system not in EXTERNAL_SYSTEMS:
            raise invalid(f"external_ids.{system}", f"unknown billing system {system}: " + ", ".join(EXTERNAL_SYSTEMS))
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_EXTERNAL_ID_CHARS:
            raise invalid(f"external_ids.{system}", f"external_ids.{system} must be 1 to 255 characters")
        ids[system] = value
    return ids


@dataclass(frozen=True)
class BillingSettings:
    """A workspace's billing settings: the card of customers without one, where the portal may
    be embedded."""

    default_rate_card_id: str | None = None
    portal_frame_ancestors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "default_rate_card_id": self.default_rate_card_id,
            "portal_frame_ancestors": list(self.portal_frame_ancestors),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BillingSettings:
        return cls(data.get("default_rate_card_id"), tuple(data.get("portal_frame_ancestors") or ()))


def merge_settings(current: BillingSettings, body: object) -> BillingSettings:
    """A ``PUT`` of the settings: each field given replaces its value (``null`` clears it), an
    absent one is left as it is."""
    if not isinstance(body, Mapping):
        raise invalid("body", "the body must be a JSON object: default_rate_card_id, portal_frame_ancestors")
    unknown = sorted(set(body) - SETTINGS_FIELDS)
    if unknown:
        raise invalid(unknown[0], f"unknown field {unknown[0]}")
    default = current.default_rate_card_id
    if "default_rate_card_id" in body:
        default = body["default_rate_card_id"]
        if default is not None:
            if not isinstance(default, str):
                raise invalid("default_rate_card_id", "default_rate_card_id must be a rate card's id (text) or null")
            check_rate_card_id(default, "default_rate_card_id")
    ancestors = current.portal_frame_ancestors
    if "portal_frame_ancestors" in body:
        ancestors = _frame_ancestors(body["portal_frame_ancestors"])
    return BillingSettings(default, ancestors)


def _frame_ancestors(raw: object) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_FRAME_ANCESTORS:
        raise invalid(
            "portal_frame_ancestors", f"portal_frame_ancestors must be a list of at most {MAX_FRAME_ANCESTORS} sources"
        )
    for index, source in enumerate(raw):
        if (
            not isinstance(source, str)
            or len(source) > MAX_FRAME_ANCESTOR_CHARS
            or not FRAME_ANCESTOR.fullmatch(source)
        ):
            raise invalid(
                f"portal_frame_ancestors.{index}",
                "each source must be https://host (optionally *.host and :port), 'self' or 'none'",
            )
    return tuple(raw)
