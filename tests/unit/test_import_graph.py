"""No import circles: in the service (``functions/costtrack_service``), its tools
(``tools/costtrack_tools``) and the Python SDK (``sdk/python/src/costtrack``), no module imports
one that (directly or not) imports it back; and the service never imports its tools.

Every import makes an edge, wherever it is written (top level, inside a function, under
``TYPE_CHECKING``): a circle hidden in a function still ties the two modules together. Importing
a package (``from costtrack_service import catalogue``) is an edge to that module; the package's
own ``__init__`` is a node like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.import_walk import import_statements

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "costtrack_service": ROOT / "functions" / "costtrack_service",
    "costtrack_tools": ROOT / "tools" / "costtrack_tools",
    "costtrack": ROOT / "sdk" / "python" / "src" / "costtrack",
}


def layer(module: str) -> str:
    """``domain`` for ``costtrack_service.domain.ingest.records``; ``""`` for the package itself."""
    return module.split(".")[1] if module.count(".") >= 1 else ""


def module_files(package: str, directory: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (``costtrack_service.domain.ingest.event_validation``)."""
    modules = {}
    for path in sorted(directory.rglob("*.py")):
        parts = path.relative_to(directory).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((package, *parts))] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports, relative imports resolved."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for _, base, names in import_statements(path.read_text(encoding="utf-8"), name, is_package):
        # ``from a import b``: b is a module of its own, or a name in a.
        targets = [base] if names is None else [f"{base}.{n}" if f"{base}.{n}" in modules else base for n in names]
        for target in targets:
            # ``import a.b.c`` runs a, a.b and a.b.c: the deepest of them that is ours counts.
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(package: str, directory: Path) -> dict[str, set[str]]:
    modules = module_files(package, directory)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan), each
    sorted: every module of one is on a circle with every other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_circles(package: str) -> None:
    graph = import_graph(package, PACKAGES[package])
    assert sum(len(targets) for targets in graph.values()) > len(graph) / 2  # the walk found imports
    assert cycles(graph) == []


def test_the_walk_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_walk_resolves_relative_and_package_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg import top\n")
    (package / "top.py").write_text("from .sub import leaf\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "leaf.py").write_text("def f():\n    from .. import top\n")
    graph = import_graph("pkg", package)
    assert graph == {"pkg": {"pkg.top"}, "pkg.top": {"pkg.sub.leaf"}, "pkg.sub": set(), "pkg.sub.leaf": {"pkg.top"}}
    assert cycles(graph) == [["pkg.sub.leaf", "pkg.top"]]


def test_the_domain_imports_only_the_domain() -> None:
    """The domain is plain Python and the bottom layer: HTTP is the edge's, DynamoDB the store's,
    use cases the services', and the bundled catalogue (files on disk) is passed in. Of our
    packages it imports only itself and the SDK's validation, which both sides share."""
    graph = import_graph("costtrack_service", PACKAGES["costtrack_service"])
    assert "costtrack_service.domain.errors" in graph and "costtrack_service.store.items" in graph
    domain = {name: targets for name, targets in graph.items() if layer(name) == "domain"}
    assert len(domain) > 40
    for module, targets in domain.items():
        assert {layer(target) for target in targets} <= {"domain"}, module
    for path in sorted((PACKAGES["costtrack_service"] / "domain").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "costtrack":
                assert node.module == "costtrack.validation", path
            if isinstance(node, ast.Import):
                assert not [a.name for a in node.names if a.name.split(".")[0] == "costtrack"], path


def test_no_use_case_lives_in_the_domain() -> None:
    """A ``*Service`` is a use case (it drives the store through the domain's rules): its home is
    ``services/``, so there is one place to look for what the API and the CLI can do."""
    found = [
        f"{path.relative_to(PACKAGES['costtrack_service'])}: {node.name}"
        for path in sorted((PACKAGES["costtrack_service"] / "domain").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Service")
    ]
    assert found == []
    services = PACKAGES["costtrack_service"] / "services"
    assert "class IngestService" in (services / "event_ingest.py").read_text(encoding="utf-8")


#: What each layer may import (README, "How it is built"): only what is below it. The handlers
#: compose a function (edge, jobs, its store); the edge and the jobs build the store they need;
#: the store and the catalogue implement what the domain declares. A use case states what it
#: needs from the store as a ``Protocol``, so services import no store module.
LAYER_IMPORTS = {
    "handlers": {"handlers", "edge", "jobs", "services", "store", "catalogue", "domain"},
    "edge": {"edge", "services", "store", "catalogue", "domain", ""},
    "jobs": {"jobs", "services", "store", "catalogue", "domain"},
    "services": {"services", "catalogue", "domain"},
    "store": {"store", "catalogue", "domain"},
    "catalogue": {"catalogue", "domain"},
    "domain": {"domain"},
}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if module != "costtrack_service"
        for target in sorted(targets)
        if layer(target) not in LAYER_IMPORTS[layer(module)]
    ]


def test_no_module_imports_a_layer_above_it() -> None:
    assert upward_imports(import_graph("costtrack_service", PACKAGES["costtrack_service"])) == []


def test_the_layer_rule_catches_an_upward_import(tmp_path: Path) -> None:
    package = tmp_path / "costtrack_service"
    for folder in ("domain", "services"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "services" / "use.py").write_text("from costtrack_service.domain import rule\n")
    (package / "domain" / "rule.py").write_text("from costtrack_service.services.use import x\n")
    graph = import_graph("costtrack_service", package)
    assert upward_imports(graph) == ["costtrack_service.domain.rule imports costtrack_service.services.use"]


def test_the_service_never_imports_its_tools() -> None:
    """The tools (CLI, local stack, in-memory store) are not deployed: a service module that
    imported one would fail in Lambda (``tests/deploy/test_built_package.py`` checks the build)."""
    offenders = []
    for path in sorted(PACKAGES["costtrack_service"].rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            offenders += [f"{path.name}: {name}" for name in names if name.split(".")[0] == "costtrack_tools"]
    assert offenders == []


def test_the_layout_draws_the_architecture() -> None:
    """The folders are the architecture (README, "How it is built"): nothing at the service
    package's root but ``__init__``; no flat list of more than a dozen modules in ``domain/``
    or any of its packages."""
    root = PACKAGES["costtrack_service"]
    assert sorted(path.name for path in root.glob("*.py")) == ["__init__.py"]
    for folder in [root / "domain", *sorted(path for path in (root / "domain").iterdir() if path.is_dir())]:
        modules = [path for path in folder.glob("*.py") if path.name != "__init__.py"]
        assert len(modules) <= 12, folder


def test_no_two_modules_share_a_file_name() -> None:
    """One name, one module: ``events.py`` in two layers makes a reader (and a traceback) ask
    which one. Package ``__init__`` files aside."""
    names: dict[str, list[str]] = {}
    for path in sorted(PACKAGES["costtrack_service"].rglob("*.py")):
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(str(path.relative_to(PACKAGES["costtrack_service"])))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}


#: Headers of the service's HTTP answers: the edge's to set, from what a use case returns.
HTTP_HEADERS = ("retry-after", "content-disposition", "cache-control", "idempotent-replayed", "x-request-id")


def http_leaks(path: Path, layer_name: str) -> list[str]:
    """What in a module of ``layer_name`` belongs to the edge: an HTTP answer's header, or (in the
    domain) a function that takes a request's raw query parameters."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in HTTP_HEADERS:
            found.append(f"{path.name}:{node.lineno}: header {node.value}")
        if layer_name == "domain" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [f"{path.name}:{node.lineno}: {node.name}(params)" for a in node.args.args if a.arg == "params"]
    return found


def test_requests_and_answers_are_the_edges() -> None:
    """The edge reads the query string into a typed question and says an answer in HTTP; the
    use cases and the rules below never see either (docs/concepts/architecture.md)."""
    root = PACKAGES["costtrack_service"]
    found = [
        leak
        for layer_name in ("services", "domain")
        for path in sorted((root / layer_name).rglob("*.py"))
        for leak in http_leaks(path, layer_name)
    ]
    assert found == []


def test_the_http_rule_finds_a_header_and_raw_parameters(tmp_path: Path) -> None:
    module = tmp_path / "rule.py"
    module.write_text('def days(params, today):\n    return {"Retry-After": "1"}\n')
    assert sorted(http_leaks(module, "domain")) == ["rule.py:1: days(params)", "rule.py:2: header Retry-After"]
    assert http_leaks(module, "services") == ["rule.py:2: header Retry-After"]
