"""The local stack itself: `costtrack dev` as a user runs it (and stops it), persistence across
restarts, and the moto fallback for machines without Java."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import httpx
import pytest

from costtrack_tools.local.stack import LocalStack
from tests.conftest import GPT5_EVENT, start_dev, wait_for_state

pytestmark = pytest.mark.integration

EVENT = {
    "provider": "openai",
    "model": "gpt-4o-mini",
    "feature": "chat",
    "prompt_tokens": 1000,
    "completion_tokens": 100,
}


def port_open(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def test_costtrack_dev_serves_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    state_file = tmp_path / "dev.json"
    process = start_dev(state_file)
    try:
        state = wait_for_state(state_file, process)
        assert oct(state_file.stat().st_mode & 0o777) == "0o600"  # it holds keys
        assert set(state["workspaces"]) == {"paid", "free", "quota", "plan_inactive"}
        assert set(state["keys"]) == {"inactive", "revoked"}
        assert state["workspaces"]["quota"]["allowance"] == 5
        response = httpx.post(
            f"{state['api_url']}/v1/events",
            json=EVENT,
            headers={"Authorization": f"Bearer {state['workspaces']['paid']['api_key']}"},
        )
        assert response.status_code == 200 and response.json()["pricing_status"] == "priced"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "curl" in out and state["api_url"] in out
    assert f"demo history: {state['demo']['events']} events" in out  # seeded before the URL is printed
    assert "POST /v1/events 200" in err  # the access log
    assert not port_open(state["api_url"])
    assert not port_open(state["dynamodb_endpoint"])  # DynamoDB Local went with it


def test_persisted_data_and_keys_survive_a_restart(tmp_path: Path) -> None:
    data, state_file = tmp_path / "data", tmp_path / "dev.json"
    with LocalStack(port=0, state_file=state_file, persist_dir=data) as first:
        key = first.state["workspaces"]["paid"]["api_key"]
        original = httpx.post(
            f"{first.state['api_url']}/v1/events", json=EVENT, headers={"X-Api-Key": key, "Idempotency-Key": "kept"}
        ).json()
    if first.state["engine"] != "dynamodb-local":
        pytest.skip("persistence needs DynamoDB Local (Java)")
    with LocalStack(port=0, state_file=state_file, persist_dir=data) as second:
        assert second.state["workspaces"]["paid"]["api_key"] == key
        replay = httpx.post(
            f"{second.state['api_url']}/v1/events", json=EVENT, headers={"X-Api-Key": key, "Idempotency-Key": "kept"}
        ).json()
    assert replay == {**original, "replayed": True}


def test_moto_fallback_serves_the_same_api(tmp_path: Path) -> None:
    with LocalStack(port=0, state_file=tmp_path / "dev.json", prefer_engine="moto") as stack:
        assert stack.state["engine"] == "moto"
        response = httpx.post(
            f"{stack.state['api_url']}/v1/events",
            json=GPT5_EVENT,
            headers={"Authorization": f"Bearer {stack.state['workspaces']['paid']['api_key']}", "Idempotency-Key": "m"},
        )
        assert response.json()["cost"] == "0.0335"
