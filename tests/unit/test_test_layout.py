"""The tests' own layout: a helper shared by test modules lives in a ``conftest.py`` (fixtures,
found by pytest without an import) or in ``tests/support/`` (plain code, imported), never in a
test module that others import. Importing a test module runs its module-level code again under
another name and, for a fixture imported by name, makes pytest build it once per importing module
(a session-scoped one as often); the ``F811`` suppressions those imports needed go with them.

Every import counts, wherever it is written (top level or inside a function), absolute or
relative. A test module is what pytest collects by its default names: ``test_*.py`` and
``*_test.py``.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.support.import_walk import import_statements

TESTS = Path(__file__).resolve().parents[1]
SUPPRESSED_REDEFINITION = re.compile(r"\bnoqa\b[^#]*\bF811\b")


def is_test_module(dotted: str) -> bool:
    last = dotted.rpartition(".")[2]
    return last.startswith("test_") or last.endswith("_test")


def module_name(path: Path) -> str:
    """``tests.unit.test_edge`` for ``tests/unit/test_edge.py``; a package's ``__init__`` is the package."""
    parts = path.relative_to(TESTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_test_modules(source: str, name: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) for each import in ``source`` (the module ``name``) of a test module."""
    found = []
    for line, base, names in import_statements(source, name, is_package):
        # ``from a import b``: b may be a module of its own (``from tests.unit import test_edge``).
        targets = [base] if names is None else [base, *(f"{base}.{n}" for n in names)]
        # ``import a.b.c`` runs a, a.b and a.b.c: any of them that is one of our test modules counts.
        hits = {
            ".".join(target.split(".")[: depth + 1])
            for target in targets
            if target.split(".")[0] == "tests"
            for depth, part in enumerate(target.split("."))
            if is_test_module(part)
        }
        found.extend((line, hit) for hit in sorted(hits))
    return found


def suppressed_redefinitions(source: str) -> list[int]:
    """The lines whose comment silences F811 (a name defined twice: an imported fixture shadowed
    by the parameter that asks for it)."""
    return [
        token.start[0]
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT and SUPPRESSED_REDEFINITION.search(token.string)
    ]


def python_files() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts)


def test_no_module_under_tests_imports_a_test_module() -> None:
    offences = [
        f"{path.relative_to(TESTS.parent)}:{line} imports {target}"
        for path in python_files()
        for line, target in imported_test_modules(
            path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"
        )
    ]
    assert not offences, "move the helper to tests/support/ or a conftest.py:\n" + "\n".join(offences)


def test_no_imported_fixture_is_left_to_silence() -> None:
    offences = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in python_files()
        for line in suppressed_redefinitions(path.read_text(encoding="utf-8"))
    ]
    assert not offences, "a fixture shared across modules belongs in a conftest.py:\n" + "\n".join(offences)


def test_the_shared_helpers_have_their_places() -> None:
    """The two places exist and hold code: the layout test above would pass vacuously if
    ``tests/support`` were gone and every helper copied back."""
    support = sorted(path.name for path in (TESTS / "support").glob("*.py") if path.name != "__init__.py")
    assert len(support) >= 10, support
    assert all(not is_test_module(Path(name).stem) for name in support)
    assert len(list(TESTS.rglob("conftest.py"))) >= 2


@pytest.mark.parametrize(
    ("source", "name", "expected"),
    [
        ("from tests.unit.test_edge import dynamo", "tests.unit.test_peek", ["tests.unit.test_edge"]),
        ("import tests.e2e.test_otlp_python", "tests.e2e.x", ["tests.e2e.test_otlp_python"]),
        ("import tests.e2e.test_otlp_python as other", "tests.e2e.x", ["tests.e2e.test_otlp_python"]),
        ("from tests.store import test_dynamo_store", "tests.unit.x", ["tests.store.test_dynamo_store"]),
        ("from .test_edge import SAMPLES", "tests.unit.test_peek", ["tests.unit.test_edge"]),
        ("from . import test_edge", "tests.unit.test_peek", ["tests.unit.test_edge"]),
        ("from ..store.test_dynamo_store import record", "tests.unit.x", ["tests.store.test_dynamo_store"]),
        ("from tests.unit.helpers_test import x", "tests.unit.y", ["tests.unit.helpers_test"]),
        (
            "def f():\n    from tests.deploy.test_built_template import ROOT\n",
            "tests.security.x",
            ["tests.deploy.test_built_template"],
        ),
        ("from tests.support.event_records import record", "tests.unit.test_export", []),
        ("from tests.conftest import GPT5_EVENT", "tests.unit.test_ingestion", []),
        ("from tests.e2e.canned_openai import canned", "tests.e2e.test_otlp_python", []),
        ("from tests.docs import answers", "tests.docs.test_readme_blocks", []),
        ("import pytest\nfrom costtrack_service.domain.ingest import events", "tests.unit.test_x", []),
        ("import somelib.test_utils", "tests.unit.test_x", []),  # not ours
    ],
)
def test_the_check_finds_every_spelling_of_an_import(source: str, name: str, expected: list[str]) -> None:
    assert [target for _, target in imported_test_modules(source, name)] == expected


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("def test_a(dynamo: Any,  # noqa: F811\n) -> None: ...\n", [1]),
        ("x = 1  # noqa: E501, F811 - the fixture\n", [1]),
        ("x = 1  # noqa:F811\n", [1]),
        ("x = 1  # noqa: F401\n", []),
        ('x = "# noqa: F811"\n', []),  # a string, not a comment
    ],
)
def test_the_check_reads_only_comments(source: str, lines: list[int]) -> None:
    assert suppressed_redefinitions(source) == lines
