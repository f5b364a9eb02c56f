"""The committed OpenAPI document is the one the code builds (`make openapi` regenerates it)."""

from __future__ import annotations

from importlib import resources

from costtrack.validation import INTEGER_FIELDS, MAX_SAFE_INTEGER, STATUSES, STRING_LIMITS
from costtrack_service.domain.ingest.batch import MAX_BATCH_ITEMS
from costtrack_service.domain.ingest.records import WarningCode
from costtrack_service.edge.api_document import openapi_document, openapi_file_text
from costtrack_service.edge.ingest.ingest_routes import OPENAPI_FILE, served_openapi_document


def test_the_committed_document_is_current() -> None:
    committed = resources.files("costtrack_service").joinpath(OPENAPI_FILE).read_text(encoding="utf-8")
    assert committed == openapi_file_text(), "functions/costtrack_service/openapi.json is stale: run make openapi"


def test_the_ingestion_function_serves_that_document() -> None:
    assert served_openapi_document() == openapi_document()


def test_the_owners_routes_document_every_answer_and_no_422() -> None:
    """Powertools documents a 422 for failed validation; the owners' API answers 400 instead. Its
    only 422 is a reused Idempotency-Key, on the routes that take one."""
    document = openapi_document()
    owners = {path: ops for path, ops in document["paths"].items() if path.startswith("/v1/workspace")}
    assert len(owners) >= 14
    for operations in owners.values():
        for operation in operations.values():
            answers = operation["responses"]
            keyed = any(parameter["name"].lower() == "idempotency-key" for parameter in operation.get("parameters", []))
            if keyed:
                assert "422" in answers, operation["operationId"]
            if "422" in answers:
                assert "IDEMPOTENCY_KEY_REUSED" in answers["422"]["description"], operation["operationId"]
            assert {"401", "500", "503"} <= set(answers), operation["operationId"]
            assert operation["security"] == [{"adminToken": []}]
            queried = any(parameter["in"] == "query" for parameter in operation.get("parameters", []))
            if "requestBody" in operation or queried:
                assert "400" in answers, operation["operationId"]
    assert "HTTPValidationError" not in document["components"]["schemas"]
    assert set(document["components"]["securitySchemes"]) == {"bearer", "apiKeyHeader", "adminToken", "portalToken"}


def test_the_event_is_typed_from_the_one_field_definition() -> None:
    schemas = openapi_document()["components"]["schemas"]
    event = schemas["Event"]
    for name, (max_chars, required, _) in STRING_LIMITS.items():
        field = event["properties"][name]
        limits = [field] if required else field["anyOf"]
        assert max_chars in {limit.get("maxLength") for limit in limits}, name
        assert (name in event["required"]) == required
    for name in INTEGER_FIELDS:
        assert event["properties"][name]["anyOf"][0]["maximum"] == MAX_SAFE_INTEGER
    assert event["properties"]["status"]["anyOf"][0]["enum"] == list(STATUSES)
    assert schemas["Batch"]["properties"]["batch"]["maxItems"] == MAX_BATCH_ITEMS
    assert schemas["Warning"]["properties"]["code"] == {"$ref": "#/components/schemas/WarningCode"}
    assert schemas["WarningCode"]["enum"] == [code.value for code in WarningCode]


def test_the_otlp_route_documents_both_encodings_and_its_partial_success() -> None:
    traces = openapi_document()["paths"]["/v1/traces"]["post"]
    assert set(traces["requestBody"]["content"]) == {"application/json", "application/x-protobuf"}
    assert set(traces["responses"]["200"]["content"]) == {"application/json", "application/x-protobuf"}
    partial = openapi_document()["components"]["schemas"]["PartialSuccess"]
    assert set(partial["properties"]) == {"rejectedSpans", "errorMessage"}
