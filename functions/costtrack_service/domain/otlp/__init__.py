"""OpenTelemetry GenAI spans as usage events: a span's fields (:class:`SpanData`) and its token counts
(:class:`SpanTokens`)."""
