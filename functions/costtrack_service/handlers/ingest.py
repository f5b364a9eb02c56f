"""Lambda entry point of the ingestion function: ``POST /v1/events``, ``POST /v1/traces``, ``GET /v1/openapi.json``.

Built at import, so the DynamoDB client and the caches live as long as the warm container.

Tracing: with the template's ``Tracing`` on (``Active``), Lambda traces every invocation and its
init in X-Ray without any code here. The X-Ray SDK (Powertools' Tracer, botocore patched, so each
DynamoDB call is a subsegment) is imported only when ``COSTTRACK_INGEST_TRACE_AWS_CALLS`` is
``true`` (the template's ``IngestTraceAwsCalls``): its import costs the cold start more than the
5 % this function's init is allowed to grow (docs/guides/operations.md).
"""

import os

from costtrack_service.handlers.init_phase import init_phase

with init_phase():
    from costtrack_service.edge.ingest.ingest_routes import create_handler

    handler = create_handler()
    if os.environ.get("COSTTRACK_INGEST_TRACE_AWS_CALLS") == "true":
        from aws_lambda_powertools import Tracer

        handler = Tracer(service="costtrack-ingest", patch_modules=("botocore",)).capture_lambda_handler(
            handler, capture_response=False
        )
