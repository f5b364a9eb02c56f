"""A workspace's price overrides (docs/api-rules.md#workspace-price-overrides), for the owners' API
(``/v1/workspace/price-overrides``) and ``costtrack admin pricing override``.

The workspace is given explicitly, as for every owners' operation (``workspace.py``): the
admin token's for the API, never the request's; the command line's for the CLI.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from costtrack_service.domain.errors import invalid
from costtrack_service.domain.pricing.overrides import Override, parse_override
from costtrack_service.domain.workspaces.plans import WorkspaceState
from costtrack_service.services.workspace import not_found

MAX_OVERRIDES = 200


class OverrideRecords(Protocol):
    def get_price_overrides(self, workspace_id: str) -> list[Override]: ...

    def put_price_override(self, override: Override) -> None: ...

    def delete_price_override(self, workspace_id: str, override_id: str) -> bool: ...


class OverrideStore(Protocol):
    """The part a workspace's price overrides are kept in."""

    @property
    def prices(self) -> OverrideRecords: ...


class OverrideService:
    def __init__(self, store: OverrideStore) -> None:
        self.store = store

    def list(self, workspace: WorkspaceState) -> dict[str, Any]:
        overrides = self.store.prices.get_price_overrides(workspace.workspace_id)
        ordered = sorted(overrides, key=lambda o: (o.provider, o.model or "", o.effective_from))
        return {"overrides": [override.to_dict() for override in ordered]}

    def set(self, workspace: WorkspaceState, body: object) -> dict[str, Any]:
        """Create or replace the override of a scope (provider, model, start)."""
        if not isinstance(body, dict):
            raise invalid("body", "the body must be a JSON object: provider, model, discount_percent or rates")
        unknown = sorted(
            set(body) - {"provider", "model", "discount_percent", "rates", "effective_from", "effective_to", "note"}
        )
        if unknown:
            raise invalid(unknown[0], f"unknown field {unknown[0]!r}")
        try:
            override = parse_override(workspace.workspace_id, body)
        except ValueError as exc:
            # parse_override's messages start with the field they are about ("rates: …").
            field = re.split(r"[ /:]", str(exc), maxsplit=1)[0]
            raise invalid(field or "body", str(exc)) from None
        existing = self.store.prices.get_price_overrides(workspace.workspace_id)
        if len(existing) >= MAX_OVERRIDES and override.override_id not in {o.override_id for o in existing}:
            raise invalid("body", f"a workspace has at most {MAX_OVERRIDES} price overrides")
        self.store.prices.put_price_override(override)
        return {"override": override.to_dict()}

    def delete(self, workspace: WorkspaceState, override_id: str) -> dict[str, Any]:
        if len(override_id) > 600 or not self.store.prices.delete_price_override(workspace.workspace_id, override_id):
            raise not_found("price override")
        return {"deleted": override_id}
