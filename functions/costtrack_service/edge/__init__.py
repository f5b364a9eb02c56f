"""HTTP, one package per function: ``ingest/`` (the ingestion function's own small router, no
resolver, for its cold start) and ``owner_api/`` (the owners' API and dashboard on Powertools'
resolver); what both share at this level (:class:`HttpRequest` and its answers, the OpenAPI document)."""
