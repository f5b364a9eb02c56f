"""What the service's docstrings and comments say about the code holds: a module they name
exists, and they tell no history and cite no issue numbers (the README's "How it is built"; the
git log keeps the story). Checked in the service, its tools, the tests and the benches, since a
module move leaves every one of them pointing at the old name."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import subprocess
import sys
import tokenize
import unicodedata
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "functions" / "costtrack_service"
SCANNED = [SERVICE, ROOT / "tools" / "costtrack_tools", ROOT / "tests", ROOT / "bench"]
LAYERS = ("catalogue", "domain", "edge", "handlers", "jobs", "services", "store")

#: ``costtrack_service.store.items`` and ``costtrack_service.store.items.EventItem``.
DOTTED = re.compile(r"\bcosttrack_service((?:\.\w+)+)")
#: ``store/items.py``, ``functions/costtrack_service/store/items.py``, ``edge/ingest/``.
PATH = re.compile(rf"(?<![\w./-])(?:functions/)?(?:costtrack_service/)?((?:{'|'.join(LAYERS)})/[\w/]*?\w+\.py)\b")
#: A layer-relative dotted name in double backquotes: ``jobs.budget_evaluator.Alerts``.
QUOTED_DOTTED = re.compile(rf"``((?:{'|'.join(LAYERS)})(?:\.\w+)+)")
#: ``ledger_items.settle_rejection``: a module named by its file's name and one of its names.
SHORT_DOTTED = re.compile(r"``([a-z][a-z0-9]*_[a-z0-9_]+)\.(\w+)")
ISSUE = re.compile(r"\b[Ii]ssues?\s*#?\d+|(?<![\w&/#])#\d{2,}\b")


def texts(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each docstring and comment of a module."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first.lineno, first.value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


@cache
def names_defined(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return frozenset(found)


def resolves(parts: list[str], base: Path = SERVICE) -> bool:
    """Whether ``parts`` (below the service package) name a package, a module, or a name in one."""
    here = base
    for index, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
            continue
        if (here / f"{part}.py").is_file():
            rest = parts[index + 1 :]
            return not rest or rest[0] in names_defined(here / f"{part}.py")
        init = here / "__init__.py"
        return here != base and init.is_file() and part in names_defined(init)
    return True


#: Dotted attribute names of the wire formats (OpenTelemetry's, Anthropic's usage), not modules.
WIRE_NAMES = frozenset({"gen_ai", "cache_creation", "server_tool_use"})
FILE_SUFFIXES = frozenset({"py", "mjs", "js", "ts", "json", "yaml"})


@cache
def repository_files() -> frozenset[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return frozenset(Path(line).name for line in listed.splitlines())


@cache
def module_stems() -> frozenset[str]:
    """Every module and package name of ours (the service, tools, SDK, tests, benches)."""
    paths = [Path(name) for name in repository_files()]
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    folders = {part for line in listed.splitlines() for part in Path(line).parts[:-1]}
    return frozenset({path.stem for path in paths if path.suffix == ".py"} | folders)


def unknown_module(name: str, attribute: str, known_names: frozenset[str]) -> bool:
    """Whether ``name`` in ``name.attribute`` is no module of ours, of Python or installed, nor a
    name the module itself uses (``operator_store.x``: a variable); ``name.py``: no such file."""
    if attribute in FILE_SUFFIXES:
        return f"{name}.{attribute}" not in repository_files()
    if name in module_stems() or name in known_names or name in WIRE_NAMES or name in sys.stdlib_module_names:
        return False
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def stale_references(text: str, known_names: frozenset[str] = frozenset()) -> list[str]:
    found = [
        match.group(0)
        for match in SHORT_DOTTED.finditer(text)
        if unknown_module(match.group(1), match.group(2), known_names)
    ]
    found += [match.group(0) for match in DOTTED.finditer(text) if not resolves(match.group(1).split(".")[1:])]
    found += [match.group(0) for match in QUOTED_DOTTED.finditer(text) if not resolves(match.group(1).split("."))]
    found += [match.group(0) for match in PATH.finditer(text) if not (SERVICE / match.group(1)).is_file()]
    return found


def python_files() -> list[Path]:
    return sorted(path for folder in SCANNED for path in folder.rglob("*.py") if "__pycache__" not in path.parts)


def test_docstrings_and_comments_name_modules_that_exist() -> None:
    offences = []
    for path in python_files():
        if path == Path(__file__).resolve():
            continue  # its own examples are stale on purpose
        known = names_defined(path)
        for line, text in texts(path.read_text(encoding="utf-8")):
            offences += [f"{path.relative_to(ROOT)}:{line}: {name}" for name in stale_references(text, known)]
    assert offences == []


def test_the_check_finds_a_stale_name() -> None:
    assert stale_references("see ``store/items.py`` and costtrack_service.store.items.event_item_key") == []
    assert stale_references("kept by ``store/store_items.py``") == ["store/store_items.py"]
    stale = "costtrack_service.store.ledger_items.Ledger"
    assert stale_references(stale) == [stale]
    assert stale_references("costtrack_service.store.items.NoSuchName") == ["costtrack_service.store.items.NoSuchName"]
    assert stale_references("``jobs.pricing_jobs.sync``") == ["``jobs.pricing_jobs.sync"]
    assert stale_references("functions/costtrack_service/edge/workspace.py") == [
        "functions/costtrack_service/edge/workspace.py"
    ]
    assert stale_references("as ``ledger_items.settle_rejection`` reads it") == ["``ledger_items.settle_rejection"]
    assert stale_references("``event_validation.to_usage_event`` and ``json.loads``") == []
    assert stale_references("``gen_ai.usage.cost`` as ``otlp_node.mjs`` sends it") == []
    assert stale_references("``no_such_script.mjs``") == ["``no_such_script.mjs"]


def test_the_service_cites_no_issue_numbers() -> None:
    """A docstring says why the code is so; an issue number sends the reader elsewhere for it."""
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {match.group(0)}"
        for path in sorted(SERVICE.rglob("*.py"))
        for line, text in texts(path.read_text(encoding="utf-8"))
        for match in ISSUE.finditer(text)
    ]
    assert offences == []
    assert ISSUE.search("(issue 29)") and ISSUE.search("see #123") and not ISSUE.search("&#123; or a/#12")


# -- citations of the documentation --------------------------------------------------------------

#: Where code explains itself by citing the documentation: the service, its tools, both SDKs'
#: sources, the benches and the build scripts.
CITING = [
    SERVICE,
    ROOT / "tools" / "costtrack_tools",
    ROOT / "sdk" / "python" / "src",
    ROOT / "sdk" / "node" / "src",
    ROOT / "bench",
    ROOT / "scripts",
]
DOCS = ROOT / "docs"
#: ``docs/api-rules.md#errors``, ``docs/guides/budgets.md``: a page of the site and an anchor in it.
DOCS_CITATION = re.compile(r"(?<![\w/.-])docs/([\w/.-]+?\.md)(?:#([\w-]+))?")
#: ``README, "Prices"``, ``the README's "Performance" table``, ``README "Spend control"``.
README_CITATION = re.compile(r"\bREADME(?:'s)?,?\s+\"([^\"\n]*)\"?")
#: Comments of TypeScript and JavaScript: ``// …`` and ``/* … */``.
SCRIPT_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
FENCE = re.compile(r"^(```|~~~)")


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs' ``toc`` extension makes it (Python-Markdown's ``slugify``)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(path: Path) -> list[str]:
    """The Markdown headings of a page, code blocks aside (a shell comment is no heading)."""
    found, in_code = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            in_code = not in_code
        elif not in_code and (match := re.match(r"#{1,6}\s+(.+?)\s*#*$", line)):
            found.append(re.sub(r"`([^`]*)`", r"\1", match.group(1)))
    return found


@cache
def anchors(page: Path) -> frozenset[str]:
    return frozenset(slug(heading) for heading in headings(page))


@cache
def readme_sections() -> frozenset[str]:
    return frozenset(headings(ROOT / "README.md"))


def bad_citations(text: str) -> list[str]:
    """The documentation ``text`` cites that does not exist: a page, an anchor in it, or a
    README section (the README is short; its topics are pages of the site)."""
    found = []
    for match in DOCS_CITATION.finditer(text):
        page = DOCS / match.group(1)
        if not page.is_file() or (match.group(2) and match.group(2) not in anchors(page)):
            found.append(match.group(0))
    found += [match.group(0) for match in README_CITATION.finditer(text) if match.group(1) not in readme_sections()]
    return found


def commented_files() -> list[Path]:
    suffixes = {".py", ".ts", ".js", ".mjs"}
    return sorted(
        path
        for folder in CITING
        for path in folder.rglob("*")
        if path.suffix in suffixes and not {"__pycache__", "node_modules", "dist"} & set(path.parts)
    )


def comments(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each docstring and comment of a Python, TypeScript or JavaScript file."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        yield from texts(source)
        return
    for match in SCRIPT_COMMENT.finditer(source):
        yield source.count("\n", 0, match.start()) + 1, match.group(0)


def test_docstrings_and_comments_cite_documentation_that_exists() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {cited}"
        for path in commented_files()
        for line, text in comments(path)
        for cited in bad_citations(text)
    ]
    assert offences == []


def test_the_check_finds_a_missing_page_anchor_or_readme_section() -> None:
    assert bad_citations("(docs/api-rules.md#errors; docs/guides/budgets.md)") == []
    assert bad_citations("docs/api-rules.md#no-such-rule") == ["docs/api-rules.md#no-such-rule"]
    assert bad_citations("see docs/guides/no-such-page.md") == ["docs/guides/no-such-page.md"]
    assert bad_citations('(README, "Budgets and alerts")') == ['README, "Budgets and alerts"']
    assert bad_citations('the README\'s "Performance" table') == ['README\'s "Performance"']
    assert bad_citations('README, "Deploy"') == []
    assert slug("Reconcile with the provider's bill") == "reconcile-with-the-providers-bill"
    assert slug("`track`, `flush` and shutdown") == "track-flush-and-shutdown"


def test_the_sdks_tools_benches_and_scripts_cite_no_issue_numbers() -> None:
    """The SDKs' sources are read by their users, and the rest by whoever changes it: an issue
    number sends either to a tracker for what the comment should say."""
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {match.group(0)}"
        for path in commented_files()
        for line, text in comments(path)
        for match in ISSUE.finditer(text)
    ]
    assert offences == []


# -- file paths ----------------------------------------------------------------------------------

#: A file path: ``x.py``, ``layer/x.py``, ``bench/x.py``, ``tests/unit/test_x.py``.
FILE_PATH = re.compile(r"(?<![\w.-])[\w./-]*\w\.py\b")


def file_paths(text: str) -> list[str]:
    """The file paths ``text`` names."""
    return FILE_PATH.findall(text)


def test_the_service_names_no_file_paths() -> None:
    """A docstring or comment names the class, function or docs section it means: a file path
    says nothing of what is in the file, and goes stale at the next move."""
    found = Counter(
        f"{path.relative_to(SERVICE)}: {name}"
        for path in sorted(SERVICE.rglob("*.py"))
        for _, text in texts(path.read_text(encoding="utf-8"))
        for name in file_paths(text)
    )
    assert sorted(found.elements()) == []


def test_the_check_finds_a_file_path() -> None:
    assert file_paths("its ledger (:class:`Ledger`, ``edge.http_event``; docs/concepts/allowance.md)") == []
    assert file_paths("``x.pyi``, ``genai_prices.data``, ``openapi.json``, ``make openapi``, a py file") == []
    assert file_paths("a debt (``debit.py``)") == ["debit.py"]
    assert file_paths("first line\n  the tables (``store/tables.py``).") == ["store/tables.py"]
    assert file_paths("measured (``bench/cold_imports.py``)") == ["bench/cold_imports.py"]
    assert file_paths("# tests/unit/test_x.py and ``a.py``, ``b.py``") == ["tests/unit/test_x.py", "a.py", "b.py"]
