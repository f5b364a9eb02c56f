"""A paid workspace in moto's tables, and a URL policy that resolves webhook hosts without DNS."""

from __future__ import annotations

from costtrack_service.domain.budgets.webhooks import UrlPolicy
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames
from tests.conftest import moto_tables

#: Webhook hosts resolve to a public address (example.com's), without asking DNS.
public_address = UrlPolicy(resolve=lambda host, port: ["93.184.216.34"])


def paid_workspace(names: TableNames, included_events: int) -> tuple[DynamoStore, WorkspaceState, str]:
    """In moto: the tables, a paid workspace, and the secret of an ingestion key of it."""
    admin = moto_tables(names)
    workspace = admin.workspaces.create_workspace("iam", tier=Tier.PAID, included_events=included_events)
    secret, _ = admin.keys.create_key(workspace.workspace_id)
    return admin, workspace, secret
