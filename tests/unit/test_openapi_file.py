"""The committed OpenAPI document is the one the code builds (`make openapi` regenerates it)."""

from __future__ import annotations

from importlib import resources

from costtrack_service.edge.api_document import openapi_document, openapi_file_text
from costtrack_service.edge.ingest import OPENAPI_FILE, served_openapi_document


def test_the_committed_document_is_current() -> None:
    committed = resources.files("costtrack_service").joinpath(OPENAPI_FILE).read_text(encoding="utf-8")
    assert committed == openapi_file_text(), "functions/costtrack_service/openapi.json is stale: run make openapi"


def test_the_ingestion_function_serves_that_document() -> None:
    assert served_openapi_document() == openapi_document()
