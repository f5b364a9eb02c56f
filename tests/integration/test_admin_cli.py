"""`costtrack admin` against the local stack: the README's operator walkthrough, plans, key
states as ingestion sees them, pricing changes that never re-price history, and targets."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.stub import Stubber

from costtrack_service.store.tables import TABLES
from costtrack_tools.admin import AdminError, resolve_store
from costtrack_tools.cli import main
from tests.support.admin_cli import Admin, post

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


def test_readme_walkthrough(admin: Admin, api: httpx.Client) -> None:
    """Create a workspace and a free key bound to a triple, import the catalogue, send an
    event, see it in `admin usage`."""
    workspace = admin.json("workspace", "create", "Acme", "--plan", "free")
    ws = workspace["workspace_id"]
    assert workspace["plan"] == {"tier": "free", "status": "active", "included_events": 1000, "credits": 0}

    error = admin.run("key", "create", ws, expect=1)
    assert error.count("\n") == 1 and "--bind" in error

    key = admin.json("key", "create", ws, "--bind", "OpenAI/gpt-4o-mini/chat", "--name", "web")
    assert key["api_key"].startswith("ct_") and key["bound"] == "openai/gpt-4o-mini/chat"

    shown = admin.json("pricing", "show", "openai/gpt-4o-mini")  # the bundled catalogue is built in
    assert (shown["model"], shown["matched"], shown["in_force"]["origin"]) == ("gpt-4o-mini", "exact", "bundled")

    event = {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1200, "completion_tokens": 300}
    assert post(api, key["api_key"], {**event, "feature": "chat"}).json()["cost"] == "0.00036"
    assert post(api, key["api_key"], {**event, "feature": "chat", "customer_id": "cus_1"}).status_code == 200
    assert post(api, key["api_key"], {**event, "feature": "search"}).json()["dashboard_visible"] is False

    report = admin.json("usage", "--workspace", ws, "--by", "feature")
    assert report["totals"] == {"events": 2, "tokens": 3000, "cost": "0.00072", "unknown_model_events": 0}
    assert [(g["key"], g["events"]) for g in report["groups"]] == [("chat", 2)]
    assert report["hidden"]["free_source_mismatch"]["events"] == 1
    human = admin.run("usage", "--workspace", ws, "--by", "customer")
    assert "cus_1" in human and "(none)" in human and "1 events hidden: free_source_mismatch" in human

    usage = admin.json("plan", "usage", ws)["usage"]
    assert (usage["included_used"], usage["included_left"]) == (3, 997)  # hidden events count too


def test_plans_and_credits(admin: Admin, api: httpx.Client) -> None:
    ws = admin.json("workspace", "create", "Credits", "--plan", "paid", "--included", "1")["workspace_id"]
    key = admin.json("key", "create", ws)["api_key"]
    event = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10}
    assert post(api, key, event, "a").status_code == 200
    assert post(api, key, event, "b").json()["error"]["code"] == "QUOTA_EXCEEDED"

    assert admin.json("plan", "add-credits", ws, "2")["plan"]["credits"] == 2
    assert [post(api, key, event, i).status_code for i in ("b", "c", "d")] == [200, 200, 429]
    usage = admin.json("plan", "usage", ws)["usage"]
    assert (usage["included_used"], usage["credits_used"], usage["credits_left"]) == (1, 2, 0)

    assert admin.json("plan", "set", ws, "--status", "inactive")["plan"]["status"] == "inactive"
    time.sleep(1.1)  # the warm function's copy of the plan expires within a second
    assert post(api, key, event, "e").json()["error"]["code"] == "PLAN_INACTIVE"
    assert admin.json("plan", "set", ws, "--status", "active", "--included", "10")["plan"]["included_events"] == 10
    time.sleep(1.1)
    assert post(api, key, event, "e").status_code == 200
    assert "nothing to change" in admin.run("plan", "set", ws, expect=1)
    assert "positive" in admin.run("plan", "add-credits", ws, "0", expect=1)


def test_key_states_as_ingestion_sees_them(admin: Admin, api: httpx.Client) -> None:
    ws = admin.json("workspace", "create", "Keys", "--plan", "paid")["workspace_id"]
    created = admin.json("key", "create", ws)
    key, key_id = created["api_key"], created["key_id"]
    event = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10}
    assert post(api, key, event).status_code == 200

    listed = admin.run("key", "list", ws)
    assert key_id in listed and key not in listed and created["prefix"] in listed

    assert admin.json("key", "deactivate", ws, key_id)["state"] == "inactive"
    # Within a second, despite the warm function's cache (docs/api-rules.md#how-fast-changes-take-effect).
    time.sleep(1.1)
    assert post(api, key, event).json()["error"]["code"] == "INACTIVE_API_KEY"
    assert admin.json("key", "reactivate", ws, key_id)["state"] == "active"
    time.sleep(1.1)
    assert post(api, key, event).status_code == 200

    assert admin.json("key", "revoke", ws, key_id)["state"] == "revoked"
    time.sleep(1.1)
    assert post(api, key, event).json()["error"]["code"] == "REVOKED_API_KEY"
    assert "final" in admin.run("key", "reactivate", ws, key_id, expect=1)
    assert "already revoked" in admin.run("key", "revoke", ws, key_id, expect=1)
    assert "no key" in admin.run("key", "revoke", "ws_other", key_id, expect=1)
    [listed_key] = admin.json("key", "list", ws)
    assert listed_key["state"] == "revoked" and listed_key["last_used_at"]


def test_price_change_never_reprices_history(admin: Admin, api: httpx.Client, local_stack: Any) -> None:
    ws = admin.json("workspace", "create", "Prices", "--plan", "paid")["workspace_id"]
    key = admin.json("key", "create", ws)["api_key"]
    model = f"m-{time.time_ns()}"
    # A provider of its own: a warm ingestion function keeps a provider's prices for a minute
    # (docs/api-rules.md#how-fast-changes-take-effect), and other tests price "acme" too.
    provider = f"acme-{model}"
    first = admin.json(
        "pricing",
        "add",
        f"{provider}/{model}",
        "--effective-from",
        "2025-01-01",
        "--input",
        "1",
        "--output",
        "2",
        "--no-prompt-includes-cached",
        "--completion-includes-reasoning",
        "--alias",
        f"{model}-v1",
        "--source",
        "https://acme.example/pricing",
    )
    assert first["closed"] is None
    event = {"provider": provider, "model": f"{model}-v1", "prompt_tokens": 1_000_000, "completion_tokens": 1_000_000}
    before = post(api, key, event, "before").json()
    assert before["cost"] == "3"

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    change = admin.json(
        "pricing", "add", f"{provider}/{model}", "--effective-from", now, "--input", "10", "--output", "20"
    )
    assert change["closed"]["effective_to"] == change["added"]["effective_from"]
    assert change["added"]["aliases"] == [f"{model}-v1"] and change["added"]["prompt_includes_cached"] is False

    history = admin.json("pricing", "show", f"{provider}/{model}-v1")["entries"]
    assert [(h["prices"]["input_mtok"], h["effective_to"] is None) for h in history] == [("1", False), ("10", True)]

    replay = post(api, key, event, "before").json()
    assert replay["replayed"] is True and replay["cost"] == "3"  # the stored answer, never re-priced
    stored = next(local_stack.store.export_reads.iter_events(ws))
    assert str(stored.cost) == "3" and stored.rates is not None and stored.rates["input_mtok"] == "1"

    retired = admin.json("pricing", "retire", f"{provider}/{model}")
    assert retired["status"] == "retired"
    assert "no price in force" in admin.run("pricing", "retire", f"{provider}/{model}", expect=1).lower()
    assert "after the latest" in admin.run(
        "pricing",
        "add",
        f"{provider}/{model}",
        "--effective-from",
        "2025-06-01",
        "--input",
        "1",
        "--output",
        "1",
        expect=1,
    )
    assert "input" in admin.run(  # `add` runs the same checks as `import`
        "pricing",
        "add",
        "acme/brand-new",
        "--effective-from",
        "2025-06-01",
        "--input",
        "1e3",
        "--output",
        "1",
        expect=1,
    )


def test_import_a_catalogue_file(admin: Admin, tmp_path: Path) -> None:
    entry = {
        "provider": "local",
        "model": f"llm-{time.time_ns()}",
        "effective_from": "2025-01-01",
        "rates": {"input": "0.5", "output": "1.5"},
        "prompt_includes_cached": True,
        "completion_includes_reasoning": True,
        "source": "https://example.com/prices",
    }
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"entries": [entry]}))
    assert admin.json("pricing", "import", str(good))["added"] == 1
    assert admin.json("pricing", "show", f"local/{entry['model']}")["entries"][0]["prices"]["output_mtok"] == "1.5"

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"entries": [{**entry, "rates": {"input": 0.5, "output": "1"}}]}))
    assert "is not of type 'string'" in admin.run("pricing", "import", str(bad), expect=1)
    assert "No such file" in admin.run("pricing", "import", str(tmp_path / "missing.json"), expect=1)


def test_listing_workspaces_and_prices(admin: Admin, local_stack: Any) -> None:
    names = {w["name"] for w in admin.json("workspace", "list")}
    assert {"Demo (paid)", "Demo (free)"} <= names
    shown = admin.json("workspace", "show", local_stack.state["workspaces"]["paid"]["workspace_id"])
    assert len(shown["keys"]) >= 3
    listed = admin.json("pricing", "list")
    assert listed["catalogue"].startswith("genai-prices") and "openai" in listed["catalogued_providers"]
    dated = admin.json("pricing", "show", "openai/gpt-5-2025-08-07")
    assert (dated["model"], dated["matched"]) == ("gpt-5", "alias")
    assert "no workspace" in admin.run("workspace", "show", "ws_missing", expect=1)


def test_without_a_target_the_error_says_what_to_do(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["admin", "workspace", "list", "--state-file", str(tmp_path / "none.json")]) == 1
    error = capsys.readouterr().err
    assert "make dev" in error and "--stack" in error and error.count("\n") == 1


def stack_args(**overrides: Any) -> argparse.Namespace:
    values = {
        "stack": "costtrack-prod",
        "region": "eu-west-1",
        "endpoint_url": None,
        "table_prefix": None,
        "state_file": None,
    }
    return argparse.Namespace(**{**values, **overrides})


def test_stack_outputs_name_the_tables() -> None:
    cloudformation = boto3.client("cloudformation", region_name="eu-west-1")
    outputs = [
        {"OutputKey": f"{name}TableName", "OutputValue": f"prod-{name}-ABC"}
        for name in (spec.name.capitalize() for spec in TABLES)
    ] + [{"OutputKey": "ApiUrl", "OutputValue": "https://x.execute-api.eu-west-1.amazonaws.com"}]
    with Stubber(cloudformation) as stub:
        stub.add_response(
            "describe_stacks",
            {
                "Stacks": [
                    {
                        "StackName": "costtrack-prod",
                        "CreationTime": datetime.now(UTC),
                        "StackStatus": "CREATE_COMPLETE",
                        "Outputs": outputs,
                    }
                ]
            },
            {"StackName": "costtrack-prod"},
        )
        store = resolve_store(stack_args(), cloudformation)
    assert (store.tables.keys, store.tables.events) == ("prod-Keys-ABC", "prod-Events-ABC")


def test_a_stack_without_costtrack_outputs_is_refused() -> None:
    cloudformation = boto3.client("cloudformation", region_name="eu-west-1")
    with Stubber(cloudformation) as stub:
        stub.add_response(
            "describe_stacks",
            {"Stacks": [{"StackName": "other", "CreationTime": datetime.now(UTC), "StackStatus": "CREATE_COMPLETE"}]},
            {"StackName": "other"},
        )
        with pytest.raises(AdminError, match="KeysTableName"):
            resolve_store(stack_args(stack="other"), cloudformation)


def test_the_workspace_attribute_map_steers_otlp_spans(admin: Admin, api: httpx.Client) -> None:
    """`workspace attributes` sets where /v1/traces reads event fields from; a change holds
    within the ingestion function's one-second workspace cache."""
    ws = admin.json("workspace", "create", "Traced", "--plan", "paid")["workspace_id"]
    key = admin.json("key", "create", ws)["api_key"]
    assert admin.json("workspace", "attributes", ws)["attributes"] == {}
    shown = admin.json("workspace", "attributes", ws, "feature=app.feature,service.name", "metadata.team=team.name")
    assert shown["attributes"] == {"feature": ["app.feature", "service.name"], "metadata.team": ["team.name"]}
    assert "costtrack.feature" in admin.run("workspace", "attributes", ws)  # the defaults come after
    assert "unknown field 'model'" in admin.run("workspace", "attributes", ws, "model=x", expect=1)

    def send(span_id: str) -> dict[str, Any]:
        attributes = {
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 1200,
            "gen_ai.usage.output_tokens": 300,
            "costtrack.feature": "default-feature",
            "team.name": "core",
        }
        body = {
            "resourceSpans": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "support-bot"}}]},
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    "traceId": "0af7651916cd43dd8448eb211c80319c",
                                    "spanId": span_id,
                                    "attributes": [
                                        {
                                            "key": k,
                                            "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v},
                                        }
                                        for k, v in attributes.items()
                                    ],
                                }
                            ]
                        }
                    ],
                }
            ]
        }
        response = api.post("/v1/traces", json=body, headers={"X-Api-Key": key})
        assert response.status_code == 200 and response.json() == {}, response.text
        return response.json()

    send("b7ad6b7169203331")
    admin.run("workspace", "attributes", ws, "--reset")
    time.sleep(1.1)  # the ingestion function re-reads the workspace after a second
    send("b7ad6b7169203332")
    report = admin.json("usage", "--workspace", ws, "--by", "feature")
    assert sorted((g["key"], g["events"]) for g in report["groups"]) == [("default-feature", 1), ("support-bot", 1)]
    assert report["totals"]["cost"] == "0.00072"
