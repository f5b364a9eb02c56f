"""``costtrack admin billing connect|list|import|disconnect`` and ``costtrack admin reconcile``,
parsed as the command line parses them and run against moto (DynamoDB, Secrets Manager) and the
canned OpenAI admin API: the raw pages land in a local folder, the reconciliation names a
deliberately wrong price as price drift with the rates applied and the rates billed."""

from __future__ import annotations

import io
import json
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.admin_output import AdminError
from costtrack_tools.cli import build_parser
from tests.conftest import moto_tables
from tests.reconciliation.canned_billing import ANTHROPIC_KEY, OPENAI_KEY, Bill, serve


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        yield moto_tables("cli-bill-")


def run(store: DynamoStore, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    args = build_parser().parse_args(["admin", *argv, "--json"])
    args.handler(store, args)
    return json.loads(capsys.readouterr().out)


def test_connect_import_reconcile(
    store: DynamoStore, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100)
    ws = workspace.workspace_id
    secret, _ = store.keys.create_key(ws)
    # Today's tracked call: gpt-4o-mini, 1M input and 1M output tokens.
    body = {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1_000_000, "completion_tokens": 1_000_000}
    ingest(IngestService(store), IngestRequest({"authorization": f"Bearer {secret}"}, json.dumps(body).encode()))
    today = datetime.now(UTC).date()
    arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="costtrack/billing/openai", SecretString=json.dumps({"admin_key": OPENAI_KEY})
    )["ARN"]
    connected = run(store, capsys, "billing", "connect", ws, "openai", "--secret-arn", arn)
    assert connected["connection"]["provider"] == "openai"
    nobody = build_parser().parse_args(["admin", "billing", "list", "ws_nobody"])
    with pytest.raises(AdminError):
        nobody.handler(store, nobody)

    # The bill: the same tokens, but the provider charged $0.20/$0.80 per 1M, not the catalogue's $0.15/$0.60.
    bill = Bill()
    bill.openai[today.isoformat()] = {
        "gpt-4o-mini-2024-07-18": {
            "input": 1_000_000,
            "cached": 0,
            "output": 1_000_000,
            "requests": 1,
            "usd": {"input": "0.20", "output": "0.80"},
        }
    }
    # The import reaches up to yesterday; let "now" be tomorrow so today's bill is due.
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    monkeypatch.setattr(
        "costtrack_tools.admin_billing.datetime", type("Now", (), {"now": staticmethod(lambda tz: tomorrow)})
    )
    with serve(bill) as url:
        monkeypatch.setenv("COSTTRACK_OPENAI_ADMIN_URL", url)
        # A deployed stack's target (the handler is given moto's store): the key from Secrets Manager.
        imported = run(store, capsys, "billing", "import", ws, "--raw-to", str(tmp_path), "--stack", "costtrack")
    (result,) = imported["results"]
    assert result["status"] == "imported" and result["to"] == today.isoformat()
    raw = tmp_path / result["raw_object"]
    assert raw.is_file() and OPENAI_KEY.encode() not in raw.read_bytes()

    listed = run(store, capsys, "billing", "list", ws)
    assert listed["connections"][0]["last_imported"] == today.isoformat()
    answer = run(store, capsys, "reconcile", ws, "--from", today.isoformat(), "--to", today.isoformat())
    (finding,) = answer["findings"]
    assert finding["classes"] == ["price_drift"] and finding["drift_usd"] == "0.25"
    assert finding["entry"].startswith("openai/gpt-4o-mini")
    assert finding["implied_rates"] == {"input_mtok": "0.2", "output_mtok": "0.8"}
    assert finding["applied_rates"] == {"input_mtok": "0.15", "output_mtok": "0.6", "cache_read_mtok": "0.075"}
    assert run(store, capsys, "billing", "disconnect", ws, "openai") == {"deleted": "openai"}


def test_the_local_stack_keeps_keys_in_its_secrets_file(
    store: DynamoStore, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the local stack (no --stack, no --endpoint-url) the import reads the connection's
    key from ``.costtrack/secrets.json`` beside the state file, and a Bedrock connection fails
    there rather than call AWS's Cost Explorer."""
    ws = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100).workspace_id
    state_file = tmp_path / ".costtrack" / "dev.json"
    local = ("--state-file", str(state_file))
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:costtrack/billing/anthropic-GhIjKl"
    monkeypatch.setattr("sys.stdin", io.StringIO(ANTHROPIC_KEY + "\n"))
    assert run(store, capsys, "billing", "local-secret", arn, *local) == {"secret_arn": arn}
    secrets_file = state_file.parent / "secrets.json"
    assert json.loads(secrets_file.read_text()) == {arn: ANTHROPIC_KEY}
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
    for refused in (("--stack", "costtrack"), ("--endpoint-url", "http://127.0.0.1:8000")):
        args = build_parser().parse_args(["admin", "billing", "local-secret", arn, *refused])
        with pytest.raises(AdminError, match="local stack only"):
            args.handler(store, args)
    monkeypatch.setattr("sys.stdin", io.StringIO("k"))
    outside = arn.replace("costtrack/billing/", "other/")
    bad = build_parser().parse_args(["admin", "billing", "local-secret", outside, *local])
    with pytest.raises(AdminError, match="costtrack/billing/"):
        bad.handler(store, bad)

    run(store, capsys, "billing", "connect", ws, "anthropic", "--secret-arn", arn)
    run(store, capsys, "billing", "connect", ws, "bedrock")
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    bill = Bill()
    bill.anthropic[yesterday] = {
        "claude-sonnet-4-5-20250929": {
            "input": 500_000,
            "write_5m": 0,
            "write_1h": 0,
            "cache_read": 0,
            "output": 50_000,
            "cents": {"uncached_input_tokens": "150", "output_tokens": "75"},
        }
    }
    monkeypatch.delenv("AWS_ENDPOINT_URL_COST_EXPLORER", raising=False)
    with serve(bill) as url:
        monkeypatch.setenv("COSTTRACK_ANTHROPIC_ADMIN_URL", url)
        imported = run(store, capsys, "billing", "import", ws, "--raw-to", str(tmp_path / "raw"), *local)
    by_provider = {result["provider"]: result for result in imported["results"]}
    assert by_provider["anthropic"]["status"] == "imported"
    assert by_provider["bedrock"] == {
        "workspace_id": ws,
        "provider": "bedrock",
        "status": "failed",
        "error": "GetCostAndUsage: CostExplorerNotLocal",
    }
    answer = run(store, capsys, "reconcile", ws, "--from", yesterday, "--to", yesterday)
    (finding,) = answer["findings"]
    assert finding["classes"] == ["untracked"] and finding["billed"]["usd"] == "2.25"

    # A key the secrets file does not hold: the import fails naming the error, never a value.
    secrets_file.write_text("{}")
    with serve(bill) as url:
        monkeypatch.setenv("COSTTRACK_ANTHROPIC_ADMIN_URL", url)
        again = run(store, capsys, "billing", "import", ws, "--raw-to", str(tmp_path / "raw"), *local)
    failed = {result["provider"]: result for result in again["results"]}["anthropic"]
    assert failed["error"] == "the connection's secret could not be read (ResourceNotFoundException)"
