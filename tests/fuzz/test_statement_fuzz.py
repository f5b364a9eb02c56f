"""The statements route fuzzed over HTTP on the local stack, outside the document's types on
purpose: whatever the month in the path (other scripts' digits, lone surrogates, bytes that are
not UTF-8, very long, dates) and whatever ``by`` and ``format`` hold, the answer is a 200 or a
400 naming ``month``, ``by`` or ``format``, never a 5xx.

Fast settings in ``make test``; ``make chaos`` (``COSTTRACK_CHAOS=full``) runs many more cases.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

# The owners' fuzz test's values (its workspace's admin token, ``token``, is a fixture of conftest.py).
from tests.support.fuzz_values import SETTINGS, edgy_text, encoded_value

pytestmark = [pytest.mark.integration, pytest.mark.fuzz]

months = st.one_of(
    edgy_text,
    st.sampled_from(["2026-11", "0001-01", "0000-12", "2026-00", "9999-12", "2026-11-01", "2026-1", "２０２６-１１"]),
    st.dates().map(lambda day: day.strftime("%Y-%m")),
)


@SETTINGS
@given(
    month=st.one_of(
        months.map(lambda text: quote(text.encode("utf-8", "surrogatepass"), safe="")),
        st.binary(min_size=1, max_size=12).map(lambda raw: quote(raw, safe="")),
    ),
    pairs=st.lists(st.tuples(st.sampled_from(["by", "format", "unknown"]), encoded_value), max_size=3),
)
def test_statement_requests_are_answered_or_named(
    local_stack: Any,
    token: str,
    month: str,
    pairs: list[tuple[str, str]],
) -> None:
    query = "&".join(f"{name}={value}" for name, value in pairs)
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        response = client.get(f"/v1/workspace/statements/{month}?{query}", headers={"Authorization": f"Bearer {token}"})
    # An empty month or a dot segment leaves no month in the path: no such route.
    routeless = month in ("", ".", "..", "%2E", "%2E%2E")
    assert response.status_code in ((404,) if routeless else (200, 400)), (month, query, response.status_code)
    if response.status_code == 400:
        field = response.json()["error"]["details"][0]["field"]
        assert field == "month" or field in {name for name, _ in pairs}, (month, query, field)
