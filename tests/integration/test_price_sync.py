"""The price sync and the backfill against the local stack (DynamoDB Local), with a data file in
genai-prices' published form served on 127.0.0.1: a new model, a changed price and an
implausible change; events that came in unpriced are priced once, rollups move exactly."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.conftest import stored_event
from tests.support.admin_cli import Admin, post
from tests.support.price_data import NEW_MODEL, data_file

pytestmark = pytest.mark.integration
pytest.importorskip("genai_prices")


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    body = data_file()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/data.json"
    server.shutdown()
    server.server_close()


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


def test_a_sync_prices_new_models_and_backfills_their_history(
    admin: Admin, api: httpx.Client, local_stack: Any, workspace_factory: Any, served: str
) -> None:
    ws, key = workspace_factory()
    event = {"provider": "openai", "model": NEW_MODEL, "prompt_tokens": 1_000_000, "completion_tokens": 500_000}
    first = post(api, key, event, "unpriced-1").json()
    assert (first["pricing_status"], first["cost"]) == ("unknown_model", "0")
    assert [w["code"] for w in first["warnings"]] == ["unknown_model"]
    assert post(api, key, {**event, "prompt_tokens": 2_000_000}, "unpriced-2").json()["cost"] == "0"

    plan = admin.json("pricing", "sync", "--from", served, "--dry-run")
    assert [(a["provider"], a["model"]) for a in plan["added"]] == [("openai", NEW_MODEL)]
    assert ("openai", "gpt-3.5-turbo") in {(c["provider"], c["model"]) for c in plan["changed"]}
    held = {(h["provider"], h["model"]): h["reason"] for h in plan["held_back"]}
    assert "more than 10x" in held[("openai", "gpt-4-turbo")]
    assert (
        "backfill" not in plan and local_stack.store.prices.get_price_entries("openai") == []
    )  # a dry run writes nothing

    applied = admin.json("pricing", "sync", "--from", served)
    assert applied["written"] == len(applied["added"]) + len(applied["changed"])
    assert applied["backfill"]["priced"] >= 2

    expected = {"unpriced-1": Decimal("3") + Decimal("6"), "unpriced-2": Decimal("6") + Decimal("6")}
    for idempotency_key, cost in expected.items():
        stored = stored_event(local_stack.store, ws, f"k#{idempotency_key}")
        assert stored.pricing_status == "priced" and stored.cost == cost and stored.priced_at
        assert stored.pricing_entry_id == f"openai/{NEW_MODEL}@1970-01-01T00:00:00.000Z"
        assert [w.code for w in stored.warnings] == []

    report = admin.json("usage", "--workspace", ws, "--by", "model")
    assert report["totals"]["cost"] == "21" and report["totals"]["unknown_model_events"] == 0
    assert report["totals"]["events"] == 2

    again = admin.json("pricing", "sync", "--from", served)
    assert again["written"] == 0 and again["added"] == [] and again["changed"] == []
    assert admin.json("pricing", "backfill")["priced"] == 0  # nothing changes twice
    assert admin.json("usage", "--workspace", ws, "--by", "model")["totals"]["cost"] == "21"
    replay = post(api, key, event, "unpriced-1")
    assert replay.json()["replayed"] is True and replay.json()["cost"] == "9"


def test_a_broken_data_file_changes_nothing(admin: Admin, tmp_path: Any) -> None:
    broken = tmp_path / "data.json"
    broken.write_text('{"not": "a list"}')
    assert "holds no providers" in admin.run("pricing", "sync", "--from", str(broken), expect=1)
    assert "could not fetch" in admin.run("pricing", "sync", "--from", "http://127.0.0.1:9/none.json", expect=1)
