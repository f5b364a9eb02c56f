"""OpenTelemetry GenAI spans as usage events: a span's fields (``spans.py``) and its token counts
(``tokens.py``)."""
