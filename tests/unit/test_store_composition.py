"""The store is composed, not stacked (docs/concepts/architecture.md).

Rule: a class of the store has at most one base besides ``Protocol`` and ``object``, and no
class inherits ``TableAccess``: the client and the table names reach a part once, passed in
(``TablePart``). A function's store (``DynamoStore``, ``IngestionStore``) has no base at all:
its parts are attributes, and every part of one store shares that store's one ``TableAccess``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from costtrack_service.store.client import TableAccess, TablePart, dynamodb_client
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.ingestion import IngestionStore
from costtrack_service.store.tables import TableNames

STORE = Path(__file__).resolve().parents[2] / "functions" / "costtrack_service" / "store"
NOT_COUNTED = {"Protocol", "object"}


def offline_client() -> Any:
    """A client of an endpoint nothing listens on: making a store sends no request."""
    return dynamodb_client("http://127.0.0.1:9", "us-east-1", {"aws_access_key_id": "x", "aws_secret_access_key": "x"})


def store_classes() -> list[tuple[str, ast.ClassDef]]:
    return [
        (path.name, node)
        for path in sorted(STORE.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    ]


def base_names(node: ast.ClassDef) -> list[str]:
    return [ast.unparse(base).rpartition(".")[2] for base in node.bases]


def test_no_store_class_has_more_than_one_base() -> None:
    classes = store_classes()
    assert len(classes) > 20  # the walk found the store's classes
    stacked = {
        f"{module}: {node.name}({', '.join(base_names(node))})"
        for module, node in classes
        if len([name for name in base_names(node) if name not in NOT_COUNTED]) > 1
    }
    assert stacked == set()


def test_table_access_is_passed_in_never_inherited() -> None:
    heirs = {f"{module}: {node.name}" for module, node in store_classes() if "TableAccess" in base_names(node)}
    assert heirs == set()
    assert not issubclass(TablePart, TableAccess)


def test_a_functions_store_has_no_base() -> None:
    for store in (DynamoStore, IngestionStore):
        assert store.__bases__ == (object,), store


@pytest.mark.parametrize("make", [DynamoStore, IngestionStore])
def test_every_part_of_a_store_shares_its_one_access(make: type[DynamoStore] | type[IngestionStore]) -> None:
    client = dynamodb_client(
        "http://127.0.0.1:9", "us-east-1", {"aws_access_key_id": "x", "aws_secret_access_key": "x"}
    )
    store = make(client, TableNames.with_prefix("t-"))
    parts = {name: part for name, part in vars(store).items() if isinstance(part, TablePart)}
    assert {"events", "prices", "budgets", "reservations", "rollups"} <= set(parts)
    assert {name for name, part in parts.items() if part.access is not store.access} == set()
    # a part given another part is given the store's own
    for part in parts.values():
        for name, inner in vars(part).items():
            if isinstance(inner, TablePart):
                assert inner is getattr(store, name), (part, name)


def test_the_ingestion_store_composes_only_ingestions_parts() -> None:
    client = dynamodb_client(
        "http://127.0.0.1:9", "us-east-1", {"aws_access_key_id": "x", "aws_secret_access_key": "x"}
    )
    names = TableNames.with_prefix("t-")
    ingestion = {name for name, part in vars(IngestionStore(client, names)).items() if isinstance(part, TablePart)}
    every = {name for name, part in vars(DynamoStore(client, names)).items() if isinstance(part, TablePart)}
    assert ingestion < every
    assert ingestion == {"events", "run_totals", "prices", "budgets", "reservations", "rollups", "billing", "credits"}
