"""The customer portal's parameters fuzzed over HTTP on the local stack, outside the document's
types on purpose (docs/guides/portal.md): any query of ``/v1/portal/usage`` is a 200 or a 400
naming one of its parameters; any customer id, body and token prefix of the owners' token routes
is answered 2xx or a 4xx naming something, never a 5xx.

Fast settings in ``make test``; ``make chaos`` (``COSTTRACK_CHAOS=full``) runs many more cases.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz_values import SETTINGS, edgy_text, encoded_value, query_answered_or_named

pytestmark = [pytest.mark.integration, pytest.mark.fuzz]

USAGE_PARAMETERS = ["from", "to", "limit", "cursor"]


@pytest.fixture(scope="module")
def portal_token(local_stack: Any, token: str) -> str:
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        answer = client.post(
            "/v1/workspace/customers/acme/portal-tokens",
            json={"ttl_seconds": 3600},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert answer.status_code == 201, answer.text
    secret: str = answer.json()["token"]
    return secret


@SETTINGS
@given(data=st.data())
def test_portal_queries_are_answered_or_named(local_stack: Any, portal_token: str, data: Any) -> None:
    names = st.sampled_from([*USAGE_PARAMETERS, "unknown", "customer_id"])
    pairs = data.draw(st.lists(st.tuples(names, encoded_value), max_size=4))
    query_answered_or_named(local_stack.state["api_url"], "/v1/portal/usage", portal_token, pairs)


@SETTINGS
@given(
    customer_id=st.one_of(edgy_text, st.sampled_from(["acme", "a:b", "cus 1"])),
    body=st.one_of(
        st.none(),
        st.integers(),
        edgy_text,
        st.dictionaries(
            st.sampled_from(["ttl_seconds", "customer_id", "x"]),
            st.one_of(st.integers(min_value=-(10**12), max_value=10**12), st.floats(allow_nan=False), edgy_text),
            max_size=2,
        ),
    ),
)
def test_token_creation_is_answered_or_named(local_stack: Any, token: str, customer_id: str, body: Any) -> None:
    path = f"/v1/workspace/customers/{quote(customer_id.encode('utf-8', 'surrogatepass'), safe='')}/portal-tokens"
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        response = client.post(
            path,
            content=json.dumps(body),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
    assert response.status_code in (201, 400, 404), (path, body, response.status_code, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]["details"][0]["field"], (path, body)


@SETTINGS
@given(prefix=st.one_of(edgy_text, st.from_regex(r"ctp_[0-9A-Za-z]{12}", fullmatch=True)))
def test_token_prefixes_are_answered_or_named(local_stack: Any, token: str, prefix: str) -> None:
    path = f"/v1/workspace/portal-tokens/{quote(prefix.encode('utf-8', 'surrogatepass'), safe='')}"
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        response = client.delete(path, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code in (400, 404), (path, response.status_code, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]["details"][0]["field"] == "token_prefix"
