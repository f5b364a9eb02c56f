"""The owners' query strings read into the services' typed questions, so a use case never sees
a parameter (docs/concepts/architecture.md); a bad value is a 400 naming its parameter
(docs/api-rules.md#errors)."""

from __future__ import annotations

from collections.abc import Mapping

from costtrack_service.domain.report_days import checked_filter

#: Query parameter -> stored event attribute, for filtering the event list.
EVENT_FILTERS = {
    "feature": "feature",
    "model": "model",
    "provider": "provider",
    "environment": "environment",
    "status": "status",
    "customer_id": "customer_id",
}


def text_filters(params: Mapping[str, str | None], attributes: Mapping[str, str]) -> dict[str, str]:
    """The filters present in ``params`` (query parameter -> stored attribute), each checked."""
    return {
        attribute: checked_filter(name, value) for name, attribute in attributes.items() if (value := params.get(name))
    }
