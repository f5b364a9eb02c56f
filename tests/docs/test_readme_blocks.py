"""Every fenced block of the READMEs and of every page of the documentation site is run against
a local stack, checked against the served OpenAPI document, or visibly marked as not run (docs,
"Contributing and testing").

One stack for the module; the files run in the order a reader meets them (the README, the site's
pages in ``mkdocs.yml``'s navigation, the SDKs' READMEs), each one's blocks in order in a folder
of their own
(``runners.py`` says what they get that the README does not write out). The test of a file
prints how many blocks ran, were checked and were skipped (with the reasons), and fails listing
every broken block by file:line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, built_node_sdk, running_stack
from tests.docs.answers import Document, check_answer, without_elisions
from tests.docs.blocks import Block, MarkerError, parse_blocks
from tests.docs.runners import DocsWorkspace, Outcome
from tests.docs.site import written_pages
from tests.e2e.canned_openai import canned
from tests.reconciliation.canned_billing import Bill, serve, sonnet_day

pytestmark = pytest.mark.integration

DOCUMENTS = (
    "README.md",
    *(str(page.relative_to(ROOT)) for page in written_pages()),
    "sdk/python/README.md",
    "sdk/node/README.md",
)
OUTPUT_LIMIT = 3000


@dataclass
class Result:
    block: Block
    outcome: str  # "ran", "checked", "skipped"
    problem: str | None = None


@pytest.fixture(scope="module")
def docs_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from running_stack(tmp_path_factory, "docs-")


@pytest.fixture(scope="module")
def provider() -> Iterator[Any]:
    """The canned provider the official clients call (OPENAI_BASE_URL, ANTHROPIC_BASE_URL)."""
    server = canned.CannedProvider()
    usage = canned.chat_usage(10_000, 3_000, cached=8_000, reasoning=2_000)
    server.route("POST", "/v1/chat/completions", canned.Canned(body=canned.chat_completion("gpt-5-2025-08-07", usage)))
    usage = {"input_tokens": 1200, "cache_read_input_tokens": 10000, "output_tokens": 500}
    message = canned.Canned(body=canned.anthropic_message("claude-sonnet-4-5-20250929", usage))
    server.route("POST", "/v1/messages", message)
    server.route("POST", "/v1/v1/messages", message)
    yield server
    server.close()


def canned_bill(today: date) -> Bill:
    """What the canned admin APIs bill (README, "Reconcile with the provider's bill"): yesterday,
    calls the docs stack never saw (it tracks from today), so all of it is untracked usage."""
    bill = Bill()
    yesterday = (today - timedelta(days=1)).isoformat()
    bill.openai[yesterday] = {
        "gpt-5-2025-08-07": {
            "input": 1_000_000,
            "cached": 0,
            "output": 200_000,
            "requests": 40,
            "usd": {"input": "1.25", "output": "2.00"},
        }
    }
    bill.anthropic[yesterday] = sonnet_day()
    return bill


@pytest.fixture(scope="module")
def admin_apis() -> Iterator[str]:
    """The canned OpenAI and Anthropic admin APIs bill imports call (one server answers both)."""
    with serve(canned_bill(datetime.now(UTC).date())) as url:
        yield url


@pytest.fixture(scope="module")
def document(docs_stack: Any) -> Document:
    """The OpenAPI document the stack serves (``GET /v1/openapi.json``: the committed file,
    which tests/unit/test_openapi_file.py holds equal to what the code builds)."""
    served = httpx.get(f"{docs_stack.state['api_url']}/v1/openapi.json", timeout=30)
    served.raise_for_status()
    return Document(served.json())


def run_blocks(blocks: list[Block], workspace: DocsWorkspace, document: Document) -> list[Result]:
    results: list[Result] = []
    for n, block in enumerate(blocks):
        if block.action == "skip":
            results.append(Result(block, "skipped"))
            continue
        if block.action == "answer":
            try:
                problems = check_answer(document, block.language, block.detail, block.code)
            except (ValueError, KeyError) as error:
                problems = [str(error)]
            results.append(Result(block, "checked", "; ".join(problems) or None))
            continue
        name = f"block-{n:03d}-line-{block.line}"
        if block.language in ("sh", "bash", "shell", "console"):
            outcome: Outcome = workspace.run_shell(block.code, prompts=block.language == "console")
        elif block.language in ("python", "py"):
            outcome = workspace.run_python(block.code, name)
        else:
            outcome = workspace.run_node(block.code, block.language, name)
        if os.environ.get("COSTTRACK_DOCS_VERBOSE"):
            print(f"== {block.where(ROOT)}\n{outcome.output}")
        results.append(Result(block, "ran", None if outcome.ok else outcome.output[-OUTPUT_LIMIT:]))
    return results


def summary(name: str, results: list[Result]) -> str:
    counts = {kind: sum(r.outcome == kind for r in results) for kind in ("ran", "checked", "skipped")}
    lines = [f"{name}: {counts['ran']} blocks ran, {counts['checked']} checked, {counts['skipped']} skipped"]
    lines += [f"  skipped {r.block.where(ROOT)}: {r.block.detail}" for r in results if r.outcome == "skipped"]
    return "\n".join(lines)


# One test runs a whole document's blocks in order (later blocks use what earlier ones made),
# so the suite-wide 120 s limit would measure the README's length, not a hang: each block has
# its own limit (BLOCK_TIMEOUT) and the document gets this one.
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_block_runs_as_written(
    name: str,
    docs_stack: Any,
    provider: Any,
    admin_apis: str,
    document: Document,
    tmp_path: Path,
    record_property: Any,
) -> None:
    built_node_sdk()
    blocks = parse_blocks(ROOT / name)
    workspace = DocsWorkspace.create(
        tmp_path / "checkout", docs_stack.state, docs_stack.state_file, provider.url, admin_apis
    )
    results = run_blocks(blocks, workspace, document)
    report = summary(name, results)
    record_property("docs_summary", report)
    print(report)
    broken = [r for r in results if r.problem]
    assert not broken, f"{len(broken)} block(s) of {name} broken:\n" + "\n\n".join(
        f"{r.block.where(ROOT)} ({r.block.language or 'plain'}, {r.outcome}):\n{r.problem}" for r in broken
    )


# -- the harness can fail --------------------------------------------------------------------


def test_a_block_the_test_cannot_place_fails_the_parse(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    text = "Intro\n\n```yaml\na: 1\n```\n\n<!-- not-run: needs an AWS account -->\n```sh\nsam deploy\n```\n"
    text += "\n<!-- answer: GET /v1/workspace -->\n```sh\ncurl x\n```\n\n<!-- not-run:-->\n```\nx\n```\n"
    with pytest.raises(MarkerError) as raised:
        parse_blocks(readme, text)
    message = str(raised.value)
    assert f"{readme}:3: a yaml block" in message
    assert f"{readme}:13: <!-- answer: … --> marks json or csv" in message
    assert ":18:" in message and ":9:" not in message


def test_markers_and_languages_decide_each_block(tmp_path: Path) -> None:
    text = "<!-- not-run: needs an AWS account -->\n\n```sh\nsam deploy\n```\n\n```bash\necho hi\n```\n\n"
    text += "<!-- answer: POST /v1/events -->\n```json\n{}\n```\n"
    blocks = parse_blocks(tmp_path / "README.md", text)
    assert [(b.line, b.language, b.action, b.detail) for b in blocks] == [
        (3, "sh", "skip", "needs an AWS account"),
        (7, "bash", "run", ""),
        (12, "json", "answer", "POST /v1/events"),
    ]


def test_a_shown_field_the_document_does_not_declare_is_reported(document: Document) -> None:
    shown = '{"event_id": "evt_…", "cost": "0.1", "warnings": [{"code": "unknown_model", "colour": "red"}], …}'
    assert json.loads(without_elisions(shown))["cost"] == "0.1"
    problems = check_answer(document, "json", "POST /v1/events", shown)
    assert problems == ["fields not declared by POST /v1/events: warnings[0].colour"]
    assert check_answer(document, "json", "schema Warning", '{"code": "budget_exceeded", "budget_id": "bud_…"}') == []
    csv_problems = check_answer(document, "csv", "GET /v1/workspace/statements/{month}", "kind,events,colour\n")
    assert csv_problems == ["columns not declared by GET /v1/workspace/statements/{month}: colour"]


def test_a_curl_answered_with_an_error_fails_its_block(docs_stack: Any, provider: Any, tmp_path: Path) -> None:
    workspace = DocsWorkspace.create(tmp_path / "checkout", docs_stack.state, docs_stack.state_file, provider.url)
    refused = workspace.run_shell(
        "TOKEN=$(python3 -c \"import json; print(json.load(open('.costtrack/dev.json'))"
        "['workspaces']['paid']['admin_token'])\")\n"
        'curl -s http://127.0.0.1:3000/v1/workspace/budgets -H "Authorization: Bearer $TOKEN" -d \'{"amount": "1"}\''
    )
    assert not refused.ok and "415" in refused.output
    assert workspace.run_shell("$ GREETING=hello\nthe output of the command, not run", prompts=True).ok
    carried = workspace.run_shell('test "$GREETING" = hello && echo "$COSTTRACK_API_KEY"')
    assert carried.ok and docs_stack.state["workspaces"]["paid"]["api_key"] in carried.output
    assert not workspace.run_python("tracker.track({'provider': 'openai'})", "invalid").ok
