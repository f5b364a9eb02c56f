"""``costtrack admin billing connect|list|import|disconnect`` and ``costtrack admin reconcile``,
parsed as the command line parses them and run against moto (DynamoDB, Secrets Manager) and the
canned OpenAI admin API: the raw pages land in a local folder, the reconciliation names a
deliberately wrong price as price drift with the rates applied and the rates billed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.ingestion import IngestService
from costtrack_service.domain.quota import Tier
from costtrack_service.edge.ingest_request import IngestRequest, ingest
from costtrack_service.store import DynamoStore
from costtrack_tools.admin_output import AdminError
from costtrack_tools.cli import build_parser
from tests.conftest import moto_tables
from tests.reconciliation.canned_billing import OPENAI_KEY, Bill, serve


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
    workspace = store.create_workspace("w", tier=Tier.PAID, included_events=100)
    ws = workspace.workspace_id
    secret, _ = store.create_key(ws)
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
        imported = run(store, capsys, "billing", "import", ws, "--raw-to", str(tmp_path))
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
