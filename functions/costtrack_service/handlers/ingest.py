"""Lambda entry point of the ingestion function: ``POST /v1/events``, ``POST /v1/traces``, ``GET /v1/openapi.json``.

Built at import, so the DynamoDB client and the caches live as long as the warm container.
"""

from costtrack_service.handlers.init_phase import init_phase

with init_phase():
    from costtrack_service.edge.ingest import create_handler

    handler = create_handler()
