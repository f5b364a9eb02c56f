"""Each SDK installs the way its README says, into a clean environment, and sends an event.

The artefacts are built here as ``make dist`` builds them: ``uv build`` (the sdist, then the
wheel from it) and ``npm pack`` from a clean copy of ``sdk/node`` (no ``dist/``: the package's
``prepack`` script must build it). Each is installed into a new environment that sees nothing
of the checkout: the wheel on the oldest and newest Python found (3.9, 3.13; an absent one is
skipped), the sdist, the git repository (``git+file://`` this checkout,
``#subdirectory=sdk/python``, what ``pip install "costtrack @ git+https://…"`` does), each into a
``uv venv`` with ``uv pip install`` (which reads no machine-wide pip configuration); and the
tarball with the README's ``npm install --prefix APP TARBALL`` (the machine's Node). Each sends
the contract's gpt-5 event through a recording proxy to the local stack; the event must be
stored at 0.0335 USD, with ``User-Agent`` naming the installed version.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import tomllib
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GPT5_EVENT, NODE_SDK, built_node_sdk

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PYTHON_SDK = ROOT / "sdk" / "python"
PYTHON_NAME = tomllib.loads((PYTHON_SDK / "pyproject.toml").read_text())["project"]["name"]
_version = re.search(r'^__version__ = "(.+)"$', (PYTHON_SDK / "src/costtrack/_version.py").read_text(), re.MULTILINE)
assert _version is not None
PYTHON_VERSION = _version.group(1)
NODE_PACKAGE = json.loads((NODE_SDK / "package.json").read_text())


def _uv() -> str:
    found = shutil.which("uv") or str(ROOT / ".costtrack" / "tools" / "bin" / "uv")
    if not Path(found).exists():
        pytest.skip("uv is not installed (make deps installs it)")
    return found


def _python(version: str) -> str | None:
    found = subprocess.run([str(ROOT / "scripts" / "find-python"), version], capture_output=True, text=True)
    return found.stdout.strip() or None


class RecordingProxy:
    """Forwards each request to the stack and remembers its ``User-Agent``."""

    def __init__(self, upstream: str) -> None:
        self.agents: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.agents.append(self.headers.get("User-Agent", ""))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                request = urllib.request.Request(  # noqa: S310 (the stack, on 127.0.0.1)
                    upstream + self.path, data=body, headers=headers, method="POST"
                )
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
                        status, content, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
                except urllib.error.HTTPError as refused:
                    status, content, kind = refused.code, refused.read(), refused.headers.get("Content-Type")
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def proxy(local_stack: Any) -> Iterator[RecordingProxy]:
    recording = RecordingProxy(local_stack.state["api_url"])
    yield recording
    recording.close()


@pytest.fixture(scope="module")
def python_artefacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("python-dist")
    newest = _python("3.13") or _python("3.12") or "3.13"
    subprocess.run(
        [_uv(), "build", "--quiet", "--python", newest, "--out-dir", str(out), str(PYTHON_SDK)],
        check=True,
        timeout=120,
    )
    stem = f"{PYTHON_NAME.replace('-', '_')}-{PYTHON_VERSION}"
    artefacts = {"wheel": out / f"{stem}-py3-none-any.whl", "sdist": out / f"{stem}.tar.gz"}
    for path in artefacts.values():
        assert path.is_file(), sorted(out.iterdir())
    return artefacts


def _stored(local_stack: Any, workspace_id: str) -> list[Any]:
    return list(local_stack.store.export_reads.iter_events(workspace_id))


SEND_PY = """
import json, os, sys
import costtrack
tracker = costtrack.Tracker(
    os.environ["KEY"], base_url=os.environ["URL"], on_warning=lambda w: print("warning", w.code, w, file=sys.stderr)
)
tracker.track(json.loads(os.environ["EVENT"]))
delivered = tracker.shutdown(timeout=30)
print(json.dumps({"version": costtrack.__version__, "file": costtrack.__file__, "delivered": delivered}))
"""


@pytest.mark.parametrize(
    ("python", "source"),
    [("3.9", "wheel"), ("3.13", "wheel"), ("3.13", "sdist"), ("3.9", "git")],
)
def test_the_python_sdk_installs_into_a_clean_environment_and_sends_an_event(
    python: str,
    source: str,
    python_artefacts: dict[str, Path],
    local_stack: Any,
    workspace_factory: Any,
    proxy: RecordingProxy,
    tmp_path: Path,
) -> None:
    interpreter = _python(python)
    if interpreter is None:
        pytest.skip(f"no Python {python} on this machine")
    # A new virtual environment, and an installer that reads no machine-wide pip configuration
    # (uv pip takes the READMEs' pip lines as they are).
    venv = tmp_path / "venv"
    subprocess.run([_uv(), "venv", "--quiet", "--python", interpreter, str(venv)], check=True, timeout=60)
    target = {
        "wheel": str(python_artefacts["wheel"]),
        "sdist": str(python_artefacts["sdist"]),
        # What `pip install "costtrack @ git+https://…#subdirectory=sdk/python"` does, from this checkout.
        "git": f"{PYTHON_NAME} @ git+{ROOT.as_uri()}#subdirectory=sdk/python",
    }[source]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    installed = subprocess.run(
        [_uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), target],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert installed.returncode == 0, installed.stderr
    workspace_id, key = workspace_factory(included=10)
    event = {**GPT5_EVENT, "feature": f"install-{source}-{python}"}
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", SEND_PY],
        env={**env, "KEY": key, "URL": proxy.url, "EVENT": json.dumps(event)},
        cwd=tmp_path,  # not the checkout: nothing of it on sys.path
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["delivered"] is True, result.stderr
    assert answer["version"] == PYTHON_VERSION
    assert Path(answer["file"]).is_relative_to(venv), answer["file"]
    assert f"costtrack-python/{PYTHON_VERSION}" in proxy.agents
    [stored] = _stored(local_stack, workspace_id)
    assert (stored.event.feature, str(stored.cost)) == (event["feature"], "0.0335")


SEND_MJS = """
import { createRequire } from "node:module";
import { Tracker, VERSION } from "costtrack";

const require = createRequire(import.meta.url);
const tracker = new Tracker({
  apiKey: process.env.KEY,
  baseUrl: process.env.URL,
  onWarning(w) { console.error("warning", w.code, w.message); },
});
tracker.track(JSON.parse(process.env.EVENT));
const delivered = await tracker.shutdown(30000);
const file = require.resolve("costtrack");
console.log(JSON.stringify({ version: VERSION, cjs: require("costtrack").VERSION, file, delivered }));
"""


@pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None, reason="needs Node and npm")
def test_the_node_tarball_is_built_by_npm_pack_from_a_clean_copy_and_installs_into_a_new_app(
    local_stack: Any, workspace_factory: Any, proxy: RecordingProxy, tmp_path: Path
) -> None:
    built_node_sdk()  # sdk/node/node_modules, for the copy's TypeScript
    clean = tmp_path / "sdk-node"
    shutil.copytree(
        NODE_SDK, clean, ignore=shutil.ignore_patterns("node_modules", "dist", "version.ts", "*.tgz", "test")
    )
    (clean / "node_modules").symlink_to(NODE_SDK / "node_modules")
    packed = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(tmp_path)],
        cwd=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert packed.returncode == 0, packed.stderr
    tarball = tmp_path / f"{NODE_PACKAGE['name']}-{NODE_PACKAGE['version']}.tgz"
    assert tarball.is_file(), packed.stdout

    # As the README says: `npm install --prefix "$APP" …/costtrack-<version>.tgz`, into a new folder.
    app = tmp_path / "app"
    installed = subprocess.run(
        ["npm", "install", "--prefix", str(app), "--no-audit", "--no-fund", "--loglevel=error", str(tarball)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    (app / "send.mjs").write_text(SEND_MJS)

    workspace_id, key = workspace_factory(included=10)
    event = {
        "provider": "openai",
        "model": "gpt-5",
        "feature": "install-node-tarball",
        "promptTokens": GPT5_EVENT["prompt_tokens"],
        "cachedInputTokens": GPT5_EVENT["cached_input_tokens"],
        "completionTokens": GPT5_EVENT["completion_tokens"],
        "reasoningTokens": GPT5_EVENT["reasoning_tokens"],
    }
    result = subprocess.run(
        ["node", "send.mjs"],
        cwd=app,
        env={**os.environ, "KEY": key, "URL": proxy.url, "EVENT": json.dumps(event)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    version = NODE_PACKAGE["version"]
    assert answer == {
        "version": version,
        "cjs": version,
        "file": str(app / "node_modules" / NODE_PACKAGE["name"] / "dist" / "cjs" / "index.js"),
        "delivered": True,
    }, result.stderr
    assert f"costtrack-node/{version}" in proxy.agents
    [stored] = _stored(local_stack, workspace_id)
    assert (stored.event.feature, str(stored.cost)) == ("install-node-tarball", "0.0335")
