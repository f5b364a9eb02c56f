"""Every parameter of the key owners' API, fuzzed over HTTP on the local stack: whatever the
query string or key id holds (dates at the calendar's ends, digits of other scripts, forged
cursors, lone surrogates, bytes that are not UTF-8, very long values), the answer is a 200 or a
400 that names a parameter the request had, never a 5xx. Schemathesis (test_openapi_fuzz.py)
stays inside the document's types; this goes outside them on purpose.

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

ROUTES = {
    "/v1/workspace/usage": ["from", "to", "group_by"],
    "/v1/workspace/unknown-models": ["from", "to"],
    "/v1/workspace/events": ["limit", "cursor", "feature", "model", "provider", "environment", "status", "customer_id"],
    "/v1/workspace/customers/acme/invoices": ["limit", "cursor"],
}


@SETTINGS
@given(
    route=st.sampled_from(sorted(ROUTES)),
    data=st.data(),
)
def test_query_parameters_are_answered_or_named(local_stack: Any, token: str, route: str, data: Any) -> None:
    names = st.sampled_from([*ROUTES[route], "unknown", "group_by", "limit"])
    pairs = data.draw(st.lists(st.tuples(names, encoded_value), max_size=4))
    query_answered_or_named(local_stack.state["api_url"], route, token, pairs)


@SETTINGS
@given(
    key_id=st.one_of(
        edgy_text,
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=1, max_size=80),
    ),
    action=st.sampled_from(["deactivate", "reactivate", "revoke"]),
)
def test_key_ids_are_answered_or_named(local_stack: Any, token: str, key_id: str, action: str) -> None:
    path = f"/v1/workspace/keys/{quote(key_id.encode('utf-8', 'surrogatepass'), safe='')}/{action}"
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        response = client.post(path, headers={"Authorization": f"Bearer {token}"})
    # 404: not a key of this workspace (or, for an empty id, no such route)
    assert response.status_code in (400, 404), (path, response.status_code, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]["details"][0]["field"] == "key_id"


@SETTINGS
@given(
    invoice_id=st.one_of(
        edgy_text,
        st.from_regex(r"in_[0-9]{8}_[0-9a-f]{12}_[A-Za-z0-9_-]{0,40}", fullmatch=True),
    ),
    action=st.sampled_from(["", "?format=csv", "?format=html", "/finalize"]),
)
def test_invoice_ids_are_answered_or_named(local_stack: Any, token: str, invoice_id: str, action: str) -> None:
    """Any invoice id, read or finalized: 404 (no such invoice here) or a 400 naming it, never a 5xx."""
    path = f"/v1/workspace/invoices/{quote(invoice_id.encode('utf-8', 'surrogatepass'), safe='')}{action}"
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        send = client.post if action == "/finalize" else client.get
        response = send(path, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code in (400, 404, 405), (path, response.status_code, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]["details"][0]["field"] == "invoice_id", (path, response.text[:300])


#: JSON values of every kind, for the billing bodies' fields (money as numbers, nested junk).
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**20), max_value=10**20),
        st.floats(allow_nan=False, allow_infinity=False),
        edgy_text,
        st.sampled_from(["20", "-100", "-100.0001", "0.0001", "1e3", "2027-01-01T00:00:00Z", "gpt-5*", "*", "USD"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)),
    max_leaves=8,
)
RULE_FIELDS = ["provider", "model", "feature", "markup_percent", "unit_prices"]
CARD_FIELDS = ["name", "currency", "markup_percent", "minimum_per_call", "rules", "effective_from"]
CUSTOMER_FIELDS = ["name", "rate_card_id", "billing", "external_ids", "credits_enforced"]
SINK_FIELDS = ["base_url", "event_name", "value"]


@SETTINGS
@given(
    path=st.sampled_from(
        [
            "/v1/workspace/rate-cards/{id}",
            "/v1/workspace/customers/{id}",
            "/v1/workspace/billing",
            "/v1/workspace/billing-sinks/{id}",
        ]
    ),
    ident=st.one_of(edgy_text, st.sampled_from(["std", "acme", "a.b-c_d"])),
    body=st.one_of(
        json_values,
        st.fixed_dictionaries(
            {"name": st.just("n"), "markup_percent": st.just("10")},
            optional={
                name: json_values
                for name in {*CARD_FIELDS, *CUSTOMER_FIELDS, "default_rate_card_id"} - {"name", "markup_percent"}
            },
        ),
        st.fixed_dictionaries(
            {"name": st.just("n"), "markup_percent": st.just("10")},
            optional={"rules": st.lists(st.dictionaries(st.sampled_from(RULE_FIELDS), json_values), max_size=3)},
        ),
        st.fixed_dictionaries(
            {"kind": st.sampled_from(["stripe", "lago", "paypal"]), "secret_name": st.just("costtrack/sinks/s")},
            optional={name: json_values for name in SINK_FIELDS},
        ),
    ),
)
def test_billing_writes_are_answered_or_named(local_stack: Any, token: str, path: str, ident: str, body: Any) -> None:
    """Rate cards, customers, settings and billing sinks: any body, any id, 200 or a 4xx naming
    something."""
    url = path.replace("{id}", quote(ident.encode("utf-8", "surrogatepass"), safe=""))
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        response = client.put(
            url,
            content=json.dumps(body),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
    assert response.status_code in (200, 400, 404, 405, 409), (url, body, response.status_code, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]["details"][0]["field"], (url, body)


GRANT_FIELDS = ["amount", "expires_at", "note"]


@SETTINGS
@given(
    ident=st.one_of(edgy_text, st.sampled_from(["acme", "a.b-c_d", "a#b"])),
    body=st.one_of(
        json_values,
        st.dictionaries(st.sampled_from([*GRANT_FIELDS, "amout"]), json_values, max_size=3),
        st.fixed_dictionaries(
            {"amount": st.sampled_from(["1", "0", "-1", "0.00000000001", "1e3", "1000000001", " 5 "])},
            optional={"expires_at": json_values, "note": json_values},
        ),
    ),
    grant=st.one_of(edgy_text, st.just("cg_00000000000000000000000000")),
)
def test_credit_routes_are_answered_or_named(local_stack: Any, token: str, ident: str, body: Any, grant: str) -> None:
    """Grants, their list, void and the balance: any body, any id, 2xx or a 4xx naming something."""
    customer = quote(ident.encode("utf-8", "surrogatepass"), safe="")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        answers = [
            client.post(f"/v1/workspace/customers/{customer}/credits", content=json.dumps(body), headers=headers),
            client.get(f"/v1/workspace/customers/{customer}/credits", headers=headers),
            client.get(f"/v1/workspace/customers/{customer}/balance", headers=headers),
            client.delete(
                f"/v1/workspace/customers/{customer}/credits/{quote(grant.encode('utf-8', 'surrogatepass'), safe='')}",
                headers=headers,
            ),
        ]
    for response in answers:
        assert response.status_code in (200, 201, 400, 404, 405), (
            ident,
            body,
            response.status_code,
            response.text[:300],
        )
        if response.status_code == 400:
            assert response.json()["error"]["details"][0]["field"], (ident, body)
