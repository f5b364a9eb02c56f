"""How the executed-docs test runs a README's blocks against a local stack (``blocks.py`` says
which). Everything a block is given that the README does not write out is here, in one place:

* **Where.** Each Markdown file's blocks run in a folder of their own that looks like a
  checkout after ``make dev``: ``.costtrack/dev.json`` is the test stack's state file (the demo
  workspaces, keys and admin tokens), ``.venv`` links to this checkout's, ``bench`` and ``sdk`` too.
* **The URL.** ``http://127.0.0.1:3000`` in a block is replaced by the test stack's URL (it
  listens on a free port); nothing else in a block is changed.
* **The environment.** ``COSTTRACK_API_KEY`` is the paid demo workspace's key and
  ``COSTTRACK_BASE_URL`` the stack's URL; ``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL`` (with
  dummy API keys) point the providers' official clients at a canned provider on 127.0.0.1;
  ``COSTTRACK_OPENAI_ADMIN_URL``/``COSTTRACK_ANTHROPIC_ADMIN_URL`` point bill imports at canned
  admin APIs (``tests/reconciliation/canned_billing.py``), whose admin keys are in
  ``OPENAI_ADMIN_KEY``/``ANTHROPIC_ADMIN_KEY``.
* **Shell blocks** (``console`` blocks: the lines after a ``$ `` prompt) run in order in one
  bash session per file (``set -euo pipefail``, variables carried from block to block), with
  ``curl`` run as ``curl --fail-with-body --show-error``: an HTTP error answer fails the block,
  as it would fail the reader.
* **Python blocks** run in this checkout's ``.venv`` (the SDK, openai and anthropic installed)
  after a preamble defining the names snippets take as given (``os``, ``costtrack``,
  ``openai_client``, ``messages``, ``key``, ``tracker``), and fail when a ``costtrack.Tracker``
  they leave behind dropped, failed or refused an event.
* **JavaScript and TypeScript blocks** (TypeScript transpiled by the Node SDK's ``typescript``)
  run as ES modules with Node against the built SDK (``import … from "costtrack"``), after a
  preamble defining ``openai``, ``anthropic``, ``messages``, ``user``, ``prompt``, ``model``,
  ``tracker`` and ``require``; the same check of ``tracker``'s stats follows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import NODE_SDK, ROOT
from tests.reconciliation.canned_billing import ANTHROPIC_KEY, OPENAI_KEY

LOCAL_URL = "http://127.0.0.1:3000"
BLOCK_TIMEOUT = 90

PYTHON_PREAMBLE = """\
# -- executed-docs preamble (tests/docs/runners.py) --
import os  # what the README's first examples import, which later fragments continue
import costtrack
import os as _docs_os
import costtrack as _docs_costtrack
import openai as _docs_openai
openai_client = _docs_openai.OpenAI()  # OPENAI_BASE_URL: the canned provider
messages = [{"role": "user", "content": "What is the capital of France?"}]
key = _docs_os.environ["COSTTRACK_API_KEY"]
tracker = _docs_costtrack.Tracker(api_key=key)
# -- the block --
"""

PYTHON_POSTAMBLE = """
# -- executed-docs check (tests/docs/runners.py) --
for _docs_name, _docs_value in list(globals().items()):
    if isinstance(_docs_value, _docs_costtrack.Tracker):
        _docs_value.flush(timeout=20)
        _docs_stats = _docs_value.stats()
        if _docs_stats["failed"] or _docs_stats["dropped"] or _docs_stats["invalid"]:
            raise SystemExit(f"costtrack.Tracker {_docs_name}: {_docs_stats}")
"""

NODE_PREAMBLE = """\
// executed-docs preamble (tests/docs/runners.py): the names snippets take as given.
import { createRequire } from "node:module";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { createAnthropic } from "@ai-sdk/anthropic";
import { Tracker } from "costtrack";

globalThis.require = createRequire(import.meta.url);
globalThis.openai = new OpenAI(); // OPENAI_BASE_URL: the canned provider
globalThis.anthropic = new Anthropic(); // ANTHROPIC_BASE_URL: the canned provider
globalThis.messages = [{ role: "user", content: "What is the capital of France?" }];
globalThis.user = { id: "cus_42" };
globalThis.prompt = "What is the capital of France?";
globalThis.model = createAnthropic()("claude-sonnet-4-5");
globalThis.tracker = new Tracker({ apiKey: process.env.COSTTRACK_API_KEY });
"""

NODE_POSTAMBLE = """
// executed-docs check (tests/docs/runners.py)
if (typeof tracker !== "undefined") {
  await tracker.flush(20000);
  const docsStats = tracker.stats();
  if (docsStats.failed || docsStats.dropped) {
    console.error(`costtrack Tracker: ${JSON.stringify(docsStats)}`);
    process.exit(1);
  }
}
"""

TRANSPILE = """\
import { readFileSync, writeFileSync } from "node:fs";
import ts from "typescript";
const [source, target] = process.argv.slice(2);
const out = ts.transpileModule(readFileSync(source, "utf8"), {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  reportDiagnostics: true,
});
if (out.diagnostics?.length) {
  for (const d of out.diagnostics) console.error(ts.flattenDiagnosticMessageText(d.messageText, "\\n"));
  process.exit(1);
}
writeFileSync(target, out.outputText);
"""


@dataclass
class Outcome:
    ok: bool
    output: str


@dataclass
class DocsWorkspace:
    """The folder a file's blocks run in, and the environment they get."""

    folder: Path
    api_url: str
    env: dict[str, str]
    state_names: list[str] = field(default_factory=list)

    @classmethod
    def create(
        cls, folder: Path, state: dict[str, Any], state_file: Path, canned_url: str, admin_url: str | None = None
    ) -> DocsWorkspace:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".costtrack").mkdir(exist_ok=True)
        shutil.copyfile(state_file, folder / ".costtrack" / "dev.json")
        for name in (".venv", "bench", "sdk"):
            link = folder / name
            if not link.exists():
                link.symlink_to(ROOT / name)
        _node_modules(folder / "node_modules")
        (folder / "docs_preamble.mjs").write_text(NODE_PREAMBLE)
        (folder / "transpile.mjs").write_text(TRANSPILE)
        env = {
            **os.environ,
            "COSTTRACK_API_KEY": state["workspaces"]["paid"]["api_key"],
            "COSTTRACK_BASE_URL": state["api_url"],
            "OPENAI_BASE_URL": f"{canned_url}/v1",
            "OPENAI_API_KEY": "sk-docs-test",
            # Anthropic's SDKs append /v1/messages, the AI SDK's provider /messages: the canned
            # provider answers both paths.
            "ANTHROPIC_BASE_URL": f"{canned_url}/v1",
            "ANTHROPIC_API_KEY": "sk-ant-docs-test",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        if admin_url is not None:
            env |= {
                "COSTTRACK_OPENAI_ADMIN_URL": admin_url,
                "COSTTRACK_ANTHROPIC_ADMIN_URL": admin_url,
                "OPENAI_ADMIN_KEY": OPENAI_KEY,
                "ANTHROPIC_ADMIN_KEY": ANTHROPIC_KEY,
            }
        env.pop("PYTHONPATH", None)
        return cls(folder, state["api_url"], env)

    def prepare(self, code: str) -> str:
        return code.replace(LOCAL_URL, self.api_url)

    def _run(self, command: list[str], stdin: str | None = None) -> Outcome:
        try:
            done = subprocess.run(
                command,
                cwd=self.folder,
                env=self.env,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT,
            )
        except subprocess.TimeoutExpired as timeout:
            shown = "".join(part if isinstance(part, str) else "" for part in (timeout.stdout, timeout.stderr))
            return Outcome(False, f"timed out after {BLOCK_TIMEOUT} s\n{shown}")
        return Outcome(done.returncode == 0, f"exit {done.returncode}\n{done.stdout}{done.stderr}")

    # -- shell ------------------------------------------------------------------------------

    def run_shell(self, code: str, prompts: bool = False) -> Outcome:
        """One block of the file's bash session: the variables earlier blocks set, then the
        block, then what it set saved for the next (``declare -p`` of every variable that a
        bare ``bash`` does not have). ``prompts`` (a ``console`` block): only the lines after a
        ``$ `` prompt are commands; the others are their output."""
        if prompts:
            code = "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ "))
        state = self.folder / ".docs-shell-state"
        if not self.state_names:
            baseline = subprocess.run(["bash", "-c", "compgen -v"], env={}, capture_output=True, text=True, check=True)
            self.state_names = baseline.stdout.split()
        script = "\n".join(
            [
                "set -euo pipefail",
                'curl() { command curl --fail-with-body --show-error "$@"; }',
                f"[ -f {state} ] && source {state}",
                self.prepare(code),
                "__docs_skip=' " + " ".join(self.state_names) + " '",
                f'for __docs_name in $(compgen -v); do case "$__docs_skip" in *" $__docs_name "*) ;; '
                f'__docs_*) ;; *) declare -p "$__docs_name";; esac; done > {state}.new || true',
                f"mv {state}.new {state}",
            ]
        )
        return self._run(["bash", "-c", script])

    # -- python -----------------------------------------------------------------------------

    def run_python(self, code: str, name: str) -> Outcome:
        path = self.folder / f"{name}.py"
        path.write_text(PYTHON_PREAMBLE + self.prepare(code) + PYTHON_POSTAMBLE)
        return self._run([sys.executable, str(path)])

    # -- node -------------------------------------------------------------------------------

    def run_node(self, code: str, language: str, name: str) -> Outcome:
        source = 'import "./docs_preamble.mjs";\n' + self.prepare(code) + NODE_POSTAMBLE
        target = self.folder / f"{name}.mjs"
        if language in ("ts", "typescript"):
            typescript = self.folder / f"{name}.ts"
            typescript.write_text(source)
            transpiled = self._run(["node", "transpile.mjs", typescript.name, target.name])
            if not transpiled.ok:
                return transpiled
        else:
            target.write_text(source)
        return self._run(["node", target.name])


def _node_modules(folder: Path) -> None:
    """node_modules for the blocks: the built Node SDK as ``costtrack``, and the packages the
    checkout installs (the repository's dev tools first, then the Node SDK's dev dependencies)."""
    if folder.exists():
        return
    folder.mkdir()
    (folder / "costtrack").symlink_to(NODE_SDK)
    for source in (ROOT / "node_modules", NODE_SDK / "node_modules"):
        if not source.is_dir():
            continue
        for entry in source.iterdir():
            if entry.name.startswith("."):
                continue
            if entry.name.startswith("@"):
                scope = folder / entry.name
                scope.mkdir(exist_ok=True)
                for package in entry.iterdir():
                    if not (scope / package.name).exists():
                        (scope / package.name).symlink_to(package)
            elif not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
