"""The owners' side of enforced budgets and templates on the local stack (CONTRACT §10): every
budget shows ``spent``, ``held`` and ``remaining``; a template's instances, top first; and a
template alerts once per threshold per instance per period, naming ``budget_id`` and
``instance``."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from costtrack_service.domain.budgets.webhooks import UrlPolicy
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from tests.conftest import GPT5_EVENT
from tests.support.admin_cli import Admin, post

pytestmark = pytest.mark.integration

LOCAL = UrlPolicy(allow_loopback=True)  # GPT5_EVENT costs 0.0335 USD


class Owner:
    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        store = local_stack.store
        workspace = store.workspaces.create_workspace("instances", tier=Tier.PAID, included_events=10_000)
        self.key, _ = store.keys.create_key(workspace.workspace_id)
        self.token, _ = store.keys.create_key(workspace.workspace_id, kind=ADMIN)
        self.api = api

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.api.request(method, path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    def budget(self, **fields: Any) -> dict[str, Any]:
        response = self.call("POST", "/v1/workspace/budgets", json=fields)
        assert response.status_code == 201, response.text
        budget: dict[str, Any] = response.json()["budget"]
        return budget

    def send(self, customer: str, **fields: Any) -> None:
        response = self.api.post(
            "/v1/events",
            json={**GPT5_EVENT, "customer_id": customer, **fields},
            headers={"Authorization": f"Bearer {self.key}", "Idempotency-Key": str(uuid.uuid4())},
        )
        assert response.status_code == 200, response.text

    def reserve(self, customer: str, amount: str) -> dict[str, Any]:
        response = self.api.post(
            "/v1/reservations",
            json={"provider": "openai", "model": "gpt-5", "customer_id": customer, "estimate": {"amount": amount}},
            headers={"Authorization": f"Bearer {self.key}", "Idempotency-Key": str(uuid.uuid4())},
        )
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def listed(self) -> dict[str, dict[str, Any]]:
        return {line["budget_id"]: line for line in self.call("GET", "/v1/workspace/budgets").json()["budgets"]}


@pytest.fixture
def owner(local_stack: Any, api: httpx.Client) -> Owner:
    return Owner(local_stack, api)


def test_spent_held_remaining_and_a_templates_instances(owner: Owner) -> None:
    plain = owner.budget(amount="1", name="all")
    assert (plain["spent"], plain["held"], plain["remaining"]) == ("0", "0", "1")
    template = owner.budget(amount="0.1", scope="customer", scope_value="*", enforce=True, name="per customer")
    hard = owner.budget(amount="0.2", scope="customer", scope_value="initech", enforce=True)
    time.sleep(1.1)  # enforced budgets are re-read at most a second old
    owner.send("acme")
    owner.send("acme")
    owner.send("globex")
    owner.send("initech")  # its own budget overrides the template
    held = owner.reserve("globex", "0.05")
    [line] = held["budgets"]
    assert (line["budget_id"], line["instance"], line["held"]) == (template["budget_id"], "globex", "0.05")

    lines = owner.listed()
    assert (lines[plain["budget_id"]]["spent"], lines[plain["budget_id"]]["held"]) == ("0.134", "0")
    assert lines[plain["budget_id"]]["remaining"] == "0.866"
    assert (lines[hard["budget_id"]]["spent"], lines[hard["budget_id"]]["remaining"]) == ("0.0335", "0.1665")
    # A template shows its instance nearest the limit: globex, 0.0335 spent + 0.05 held of 0.1.
    summary = lines[template["budget_id"]]
    assert summary["enforce"] is True and summary["instances"] == 2
    assert (summary["spent"], summary["held"], summary["remaining"]) == ("0.0335", "0.05", "0.0165")
    assert [top["instance"] for top in summary["top_instances"]] == ["globex", "acme"]
    assert summary["spend"] == "0.067" and summary["crossed"] == [50]  # the alerts': acme spent most

    path = f"/v1/workspace/budgets/{template['budget_id']}/instances"
    by_share = owner.call("GET", path, params={"sort": "share"}).json()
    assert by_share["count"] == 2 and by_share["enforce"] is True
    assert by_share["instances"] == [
        {"instance": "globex", "spent": "0.0335", "held": "0.05", "remaining": "0.0165", "share": "83.5"},
        {"instance": "acme", "spent": "0.067", "held": "0", "remaining": "0.033", "share": "67"},
    ]
    by_spent = owner.call("GET", path, params={"sort": "spent", "limit": 1}).json()
    assert [line["instance"] for line in by_spent["instances"]] == ["acme"] and by_spent["count"] == 2

    # Released: globex holds nothing any more.
    assert (
        owner.api.delete(
            f"/v1/reservations/{held['reservation_id']}", headers={"Authorization": f"Bearer {owner.key}"}
        ).status_code
        == 204
    )
    assert owner.call("GET", path).json()["instances"][0] == {
        "instance": "acme", "spent": "0.067", "held": "0", "remaining": "0.033", "share": "67"
    }  # fmt: skip

    assert owner.call("GET", path, params={"sort": "cost"}).status_code == 400
    assert owner.call("GET", path, params={"limit": 0}).status_code == 400
    assert owner.call("GET", f"/v1/workspace/budgets/{plain['budget_id']}/instances").status_code == 400
    assert owner.call("GET", "/v1/workspace/budgets/bud_nothere/instances").status_code == 404


def test_a_template_alerts_once_per_threshold_per_instance(owner: Owner, local_stack: Any) -> None:
    template = owner.budget(amount="0.05", scope="customer", scope_value="*", thresholds=[50, 100])
    owner.budget(amount="0.01", scope="customer", scope_value="initech", thresholds=[100])
    webhook = owner.call("POST", "/v1/workspace/webhooks", json={"url": "http://127.0.0.1:9/hook"})
    assert webhook.status_code == 201, webhook.text
    sent: list[dict[str, Any]] = []

    def send(target: Any, body: bytes, headers: Any) -> int:
        sent.append(json.loads(body))
        return 200

    def alerts(now: datetime | None = None) -> Alerts:
        clock = (lambda: now) if now else (lambda: datetime.now(UTC))
        return Alerts(local_stack.store, AlertSettings(url_policy=LOCAL), send=send, clock=clock)

    owner.send("acme")
    owner.send("acme")  # 0.067 of 0.05: 50 and 100
    owner.send("globex")  # 0.0335: 50
    owner.send("initech")  # its own budget: not an instance of the template
    with ThreadPoolExecutor(3) as pool:  # concurrent and repeated evaluators: one claim each
        list(pool.map(lambda _: alerts().run(), range(3)))
    alerts().run()
    mine = [body for body in sent if body["budget_id"] == template["budget_id"]]
    assert sorted((body["instance"], body["threshold"]) for body in mine) == [
        ("acme", 50),
        ("acme", 100),
        ("globex", 50),
    ]
    acme = next(body for body in mine if body["instance"] == "acme" and body["threshold"] == 100)
    assert acme["spend"] == "0.067" and acme["percent"] == "134" and acme["budget"]["scope_value"] == "*"
    assert len({body["id"] for body in mine}) == 3
    others = [body for body in sent if body["budget_id"] != template["budget_id"]]
    assert [(body.get("instance"), body["threshold"]) for body in others] == [(None, 100)]

    # globex crosses 100 later: one more notification, for globex only.
    owner.send("globex")
    alerts().run()
    mine = [body for body in sent if body["budget_id"] == template["budget_id"]]
    assert sorted((body["instance"], body["threshold"]) for body in mine)[-1] == ("globex", 100)
    assert len(mine) == 4
    # The next month is a new period: the same instances alert afresh once they spend again.
    next_month = (datetime.now(UTC).replace(day=1) + timedelta(days=32)).replace(day=2)
    alerts(next_month).run()
    assert len([body for body in sent if body["budget_id"] == template["budget_id"]]) == 4


def test_show_and_list_from_the_command_line(local_stack: Any, api: httpx.Client, capsys: Any) -> None:
    admin = Admin(local_stack, capsys)
    ws = admin.json("workspace", "create", "Instances", "--plan", "paid")["workspace_id"]
    key = admin.json("key", "create", ws)["api_key"]
    created = admin.json(
        "budgets", "create", ws, "--amount", "0.1", "--scope", "customer", "--value", "*", "--enforce", "--name", "pc"
    )
    assert created["enforce"] is True and created["held"] == "0"
    plain = admin.json("budgets", "create", ws, "--amount", "1")
    assert plain["enforce"] is False
    for customer in ("acme", "acme", "globex"):
        post(api, key, {**GPT5_EVENT, "customer_id": customer})

    shown = admin.json("budgets", "show", ws, created["budget_id"], "--top", "1")
    assert [line["instance"] for line in shown["instances_by_share"]] == ["acme"]
    assert (shown["spent"], shown["remaining"], shown["instances"]) == ("0.067", "0.033", 2)
    text = admin.run("budgets", "show", ws, created["budget_id"])
    assert "enforced (a hard limit): spent 0.067" in text and "globex" in text and "67%" in text
    listed = admin.run("budgets", "list", ws)
    assert "acme 67%" in listed and "top instance" in listed
    lifted = admin.json("budgets", "change", ws, created["budget_id"], "--no-enforce")
    assert lifted["enforce"] is False and lifted["held"] == "0"
    assert admin.run("budgets", "show", ws, "bud_nothere", expect=1)


def test_a_rolling_templates_instance_rearms_on_its_own(owner: Owner, local_stack: Any) -> None:
    template = owner.budget(amount="0.05", scope="customer", scope_value="*", thresholds=[50], period="rolling_7d")
    owner.call("POST", "/v1/workspace/webhooks", json={"url": "http://127.0.0.1:9/hook"})
    sent: list[dict[str, Any]] = []
    now = datetime.now(UTC)

    def run(at: datetime) -> dict[str, Any]:
        settings = AlertSettings(url_policy=LOCAL)
        send = lambda target, body, headers: sent.append(json.loads(body)) or 200  # noqa: E731
        result: dict[str, Any] = Alerts(local_stack.store, settings, send=send, clock=lambda: at).run()
        return result

    owner.send("acme")
    owner.send("globex")
    run(now)
    assert sorted(body["instance"] for body in sent if body["budget_id"] == template["budget_id"]) == ["acme", "globex"]
    # A week on, neither has spend in the window: each instance's threshold re-arms, once (the
    # episodes below). The evaluator's own count covers every workspace of the shared local
    # stack, where other tests' rolling budgets may re-arm too: it is only a lower bound here.
    assert run(now + timedelta(days=8))["evaluate"]["rearmed"] >= 1
    run(now + timedelta(days=8))
    [budget] = [
        b for b in local_stack.store.budgets.list_budgets(template_workspace(local_stack, template)) if b.template
    ]
    assert sorted(budget.episodes.values()) == [1, 1] and len(budget.episodes) == 2
    # So the spend seen again (here: the clock back in the week) notifies again, per instance.
    run(now)
    mine = [body for body in sent if body["budget_id"] == template["budget_id"]]
    assert sorted(body["instance"] for body in mine) == ["acme", "acme", "globex", "globex"]
    assert len({body["id"] for body in mine}) == 4


def template_workspace(local_stack: Any, template: dict[str, Any]) -> str:
    owners = [b.workspace_id for b in local_stack.store.budgets.all_budgets() if b.budget_id == template["budget_id"]]
    return owners[0]
