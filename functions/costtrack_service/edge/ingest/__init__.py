"""The ingestion function's HTTP: its own small router on the API Gateway event, no resolver,
so its cold start stays small (``handlers.ingest``)."""
