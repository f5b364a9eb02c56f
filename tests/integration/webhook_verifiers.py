"""Verifying a delivery as a receiver would (docs, "Budgets and alerts", "Signatures"): the
Standard Webhooks reference libraries (PyPI and npm ``standardwebhooks``) and the guide's
snippets, which call the SDKs' verifiers; each pair must agree."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.conftest import NODE_SDK

ROOT = Path(__file__).resolve().parents[2]


def budgets_guide() -> str:
    """The docs' guide "Budgets and alerts"."""
    return (ROOT / "docs" / "guides" / "budgets.md").read_text()


def readme_snippet(language: str) -> str:
    """The verification snippet of ``language`` from the guide "Budgets and alerts"."""
    blocks = re.findall(rf"```{language}\n(.*?)```", budgets_guide(), re.DOTALL)
    [snippet] = [block for block in blocks if "verify" in block.lower()]
    return snippet


def verify_in_python(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Whether the Standard Webhooks library and the README's snippet (the Python SDK's
    ``costtrack.verify_webhook``) both verify the delivery; they must agree."""
    try:
        Webhook(secret).verify(body, headers)
        reference = True
    except WebhookVerificationError:
        reference = False
    namespace: dict[str, Any] = {}
    exec(readme_snippet("python"), namespace)  # noqa: S102 - the README's own snippet
    import costtrack.webhooks

    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("COSTTRACK_WEBHOOK_SECRET", secret)
            namespace["costtrack_alert"](body, headers)
        ours = True
    except costtrack.webhooks.WebhookVerificationError:
        ours = False
    assert reference == ours, (reference, ours)
    return ours


def verify_in_node(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The same in Node: npm's ``standardwebhooks`` and the README's snippet (the Node SDK's
    ``verifyWebhook``), run from the Node SDK's folder (its build and dev dependencies)."""
    script = readme_snippet("js") + (
        "\nconst { Webhook } = require('standardwebhooks');"
        "\nconst chunks = []; process.stdin.on('data', (c) => chunks.push(c)); process.stdin.on('end', () => {"
        "  const body = Buffer.concat(chunks); const headers = JSON.parse(process.env.HEADERS);"
        "  const outcome = (f) => { try { f(); return 'valid'; } catch { return 'invalid'; } };"
        "  const reference = outcome(() => new Webhook(process.env.COSTTRACK_WEBHOOK_SECRET).verify(body, headers));"
        "  const ours = outcome(() => costtrackAlert(body, headers));"
        "  process.stdout.write(JSON.stringify([reference, ours])); });"
    )
    result = subprocess.run(
        ["node", "-e", script],
        input=body,
        capture_output=True,
        cwd=NODE_SDK,
        env={
            "COSTTRACK_WEBHOOK_SECRET": secret,
            "HEADERS": json.dumps(headers),
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
        timeout=60,
        check=True,
    )
    reference, ours = json.loads(result.stdout)
    assert reference == ours, result.stdout
    return bool(ours == "valid")


def signed_part(headers: dict[str, str]) -> dict[str, str]:
    return {name: headers[name] for name in ("webhook-id", "webhook-timestamp", "webhook-signature")}
