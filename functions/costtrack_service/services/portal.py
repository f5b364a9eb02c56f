"""The customer portal (docs/guides/portal.md): the owners create, list and revoke a customer's
portal tokens; a portal token reads that customer's own usage, and nothing else."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from costtrack_service.domain.billing.customer_billing import check_customer_id
from costtrack_service.domain.cursors import checked_limit, decode_cursor, encode_cursor, keyed_page, scope_of
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.portal.portal_tokens import (
    PORTAL_TOKEN_PREFIX,
    PortalToken,
    check_ttl,
    live_token,
    plausible_portal_token,
)
from costtrack_service.domain.portal.portal_usage import (
    DEFAULT_LINES,
    LINE_POSITION,
    MAX_LINES,
    customer_usage,
    line_body,
    line_dimensions,
)
from costtrack_service.domain.report_days import day_range
from costtrack_service.domain.usage import RollupReader
from costtrack_service.domain.workspaces.keys import hash_secret
from costtrack_service.services.customers import CustomerRecords

#: A token prefix as lists show it: ``ctp_`` and 12 base62 characters.
PREFIX_PATTERN = f"^{PORTAL_TOKEN_PREFIX}[0-9A-Za-z]{{12}}$"


class PortalTokenStore(Protocol):
    def put(self, token: PortalToken) -> None: ...

    def get(self, token_hash: str) -> PortalToken | None: ...

    def list(self, workspace_id: str) -> list[PortalToken]: ...

    def find(self, workspace_id: str, prefix: str) -> PortalToken | None: ...

    def revoke(self, token: PortalToken) -> PortalToken: ...


class PortalStore(Protocol):
    """The parts the portal uses: its tokens, the daily rollups, customers and settings."""

    @property
    def portal_tokens(self) -> PortalTokenStore: ...

    @property
    def rollups(self) -> RollupReader: ...

    @property
    def billing(self) -> CustomerRecords: ...


@dataclass(frozen=True)
class UsageQuery:
    first: str | None = None
    last: str | None = None
    limit: int = DEFAULT_LINES
    cursor: str | None = None


class PortalService:
    def __init__(self, store: PortalStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock

    # -- the owners' side -----------------------------------------------------------------

    def create(self, workspace_id: str, customer_id: str, body: object, base_url: str) -> dict[str, Any]:
        """A new token for the customer: its secret, in this answer only, and the page's URL."""
        check_customer_id(customer_id)
        if not isinstance(body, Mapping):
            raise invalid("body", "the body must be a JSON object: ttl_seconds")
        unknown = sorted(set(body) - {"ttl_seconds"})
        if unknown:
            raise invalid(unknown[0], f"unknown field {unknown[0]}")
        if "ttl_seconds" not in body:
            raise invalid("ttl_seconds", "ttl_seconds is required")
        secret, token = PortalToken.issue(workspace_id, customer_id, check_ttl(body["ttl_seconds"]), self.clock())
        self.store.portal_tokens.put(token)
        return {
            "token": secret,
            "token_prefix": token.token_prefix,
            "customer_id": customer_id,
            "expires_at": token.expires_at,
            "url": portal_url(base_url, workspace_id, secret),
        }

    def list(self, workspace_id: str, customer_id: str | None = None) -> dict[str, Any]:
        now = self.clock()
        tokens = self.store.portal_tokens.list(workspace_id)
        if customer_id is not None:
            tokens = [token for token in tokens if token.customer_id == customer_id]
        ordered = sorted(tokens, key=lambda token: (token.created_at, token.token_prefix))
        return {"tokens": [token.to_dict(now) for token in ordered]}

    def revoke(self, workspace_id: str, prefix: str) -> dict[str, Any]:
        token = self.store.portal_tokens.find(workspace_id, prefix)
        if token is None:
            raise ApiError("NOT_FOUND", f"No portal token {prefix} in this workspace.")
        return self.store.portal_tokens.revoke(token).to_dict(self.clock())

    # -- the customer's side --------------------------------------------------------------

    def authenticate(self, presented: str | None) -> PortalToken:
        """The live token of a portal request (read on each request: §7's one second)."""
        secret = plausible_portal_token(presented)
        record = self.store.portal_tokens.get(hash_secret(secret)) if secret else None
        return live_token(record, self.clock())

    def usage(self, token: PortalToken, query: UsageQuery) -> dict[str, Any]:
        """The customer's usage over the days: totals and the charts' groups, and its lines by
        day, model and feature a page at a time."""
        first, last = day_range(query.first, query.last, self.clock().date())
        limit = checked_limit(query.limit, MAX_LINES)
        scope = scope_of("portal-usage", token.workspace_id, {"customer": token.customer_id, "from": first, "to": last})
        after = None
        if query.cursor:
            found = decode_cursor(query.cursor, scope, LINE_POSITION, required=frozenset(LINE_POSITION))
            after = (found["day"], found["model"], found["feature"])
        rows = self.store.rollups.query_rollups(token.workspace_id, line_dimensions(token.customer_id), first, last)
        usage = customer_usage(token.customer_id, rows)
        lines, more = keyed_page(usage.ordered_lines(), lambda entry: entry[0], after, limit)
        position = dict(zip(("day", "model", "feature"), lines[-1][0], strict=True)) if more else None
        return {
            "customer_id": token.customer_id,
            "currency": self.currency(token.workspace_id, token.customer_id),
            "from": first,
            "to": last,
            **usage.summary(),
            "lines": [line_body(line, figures) for line, figures in lines],
            "next_cursor": encode_cursor(scope, position) if position else None,
        }

    def currency(self, workspace_id: str, customer_id: str) -> str | None:
        """The currency of the customer's card (its own, else the workspace's default): what its
        charges are in; None when nothing charges it."""
        customer = self.store.billing.get_customer(workspace_id, customer_id)
        card = (customer.rate_card_id if customer else None) or self.store.billing.get_billing_settings(
            workspace_id
        ).default_rate_card_id
        versions = self.store.billing.rate_card_versions(workspace_id, card) if card else []
        return versions[-1].currency if versions else None

    def frame_ancestors(self, workspace_id: str) -> tuple[str, ...]:
        return self.store.billing.get_billing_settings(workspace_id).portal_frame_ancestors


def portal_url(base_url: str, workspace_id: str, secret: str) -> str:
    """The page for a token: the workspace in the query (which origins may embed the page is
    the workspace's), the token in the fragment, which no browser sends to a server."""
    return f"{base_url.rstrip('/')}/portal?w={workspace_id}#token={secret}"
