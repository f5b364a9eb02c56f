"""The runs list's query string read into the domain's :class:`RunQuery`, for the owners' route
and ``costtrack admin runs top``: each parameter refused as a 400 that names it."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from costtrack_service.domain.errors import invalid
from costtrack_service.domain.runs.reports import RunQuery
from costtrack_service.edge.owner_api.query_params import text_filters

RUN_SORTS = ("cost",)
#: Query parameter -> total attribute, for filtering the runs list.
RUN_FILTERS = {"feature": "feature", "customer": "customer_id"}


def run_query(params: Mapping[str, str]) -> RunQuery:
    sort = params.get("sort") or "cost"
    if sort not in RUN_SORTS:
        raise invalid("sort", f"sort must be one of {', '.join(RUN_SORTS)}")
    return RunQuery(
        first=params.get("from") or None,
        last=params.get("to") or None,
        filters=text_filters(params, RUN_FILTERS),
        min_cost=_min_cost(params.get("min_cost")),
        min_calls=_min_calls(params.get("min_calls")),
        cursor=params.get("cursor") or None,
    )


def _min_cost(text: str | None) -> Decimal | None:
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal(-1)
    if not (len(text) <= 40 and value.is_finite() and value >= 0):
        raise invalid("min_cost", "min_cost must be a decimal amount in USD, 0 or more")
    return value


def _min_calls(text: str | None) -> int | None:
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise invalid("min_calls", "min_calls must be a whole number, 0 or more")
    return int(text)
