"""The three implementations of the event rules agree on generated events, not only on the
shared vectors: the service (``validate(parse_body(...))``), the Python SDK (``track()`` ->
``on_error``) and the Node SDK (its validator, in one ``node`` process per batch).

Events are built to sit near the rules' edges: blank and padded strings, length caps, lone
surrogates, integers around 0 and 2**53, floats, booleans, numeric strings, odd metadata.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costtrack import Tracker
from costtrack.validation import EventValidationError
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.edge.ingest.ingest_request import parse_body
from tests.conftest import built_node_sdk

pytestmark = pytest.mark.fuzz

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
MAX = 9007199254740991

edgy_text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "\t\n", " chat ", "\u00a0x", "\ud800", "x\udfff", "😀", "é"]),
    st.integers(min_value=60, max_value=260).map(lambda n: "x" * n),
    st.integers(min_value=60, max_value=70).map(lambda n: " " + "y" * n + " "),
)
edgy_integer = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=MAX - 2, max_value=MAX + 2),
    st.integers(min_value=0, max_value=10**7),
)
scalar = st.one_of(
    st.none(),
    st.booleans(),
    edgy_integer,
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    edgy_text,
)
metadata = st.one_of(
    st.dictionaries(st.text(max_size=6), st.one_of(scalar, st.lists(scalar, max_size=3)), max_size=4),
    st.fixed_dictionaries({"feature": edgy_text}),
    scalar,
    st.lists(scalar, max_size=2),
)
FIELDS = {
    "provider": edgy_text,
    "model": edgy_text,
    "feature": st.one_of(edgy_text, scalar),
    "environment": st.one_of(edgy_text, scalar),
    "customer_id": st.one_of(edgy_text, scalar),
    "customer_name": edgy_text,
    "prompt_tokens": st.one_of(edgy_integer, scalar),
    "completion_tokens": edgy_integer,
    "total_tokens": st.one_of(edgy_integer, scalar),
    "reasoning_tokens": edgy_integer,
    "cached_input_tokens": st.one_of(edgy_integer, scalar),
    "cache_write_tokens": edgy_integer,
    "latency_ms": st.one_of(edgy_integer, scalar),
    "status": st.one_of(st.sampled_from(["success", "error", "timeout", "cancelled", "SUCCESS", "ok"]), scalar),
    "metadata": metadata,
}
events = st.fixed_dictionaries(
    {
        "provider": st.one_of(st.sampled_from(["openai", " anthropic "]), FIELDS["provider"], st.none()),
        "model": st.one_of(st.sampled_from(["gpt-5", "m"]), FIELDS["model"], st.none()),
    },
    optional={
        **{name: value for name, value in FIELDS.items() if name not in ("provider", "model")},
        "extra_field": scalar,
    },
)


def service_verdict(event: dict[str, Any]) -> list[str]:
    """Offending fields, as the service reports them ([] when valid)."""
    try:
        validate(parse_body(json.dumps(event).encode("ascii")))
    except ApiError as error:
        return sorted(detail["field"] for detail in error.details)
    return []


def python_sdk_verdict(event: dict[str, Any]) -> list[str]:
    errors: list[Exception] = []
    tracker = Tracker("ct_fuzz", base_url="http://127.0.0.1:9", on_error=errors.append, on_warning=lambda _: None)
    tracker.track(event)
    tracker.shutdown(timeout=0)
    if not errors:
        return []
    [error] = errors
    assert isinstance(error, EventValidationError)
    return sorted(error.fields)


NODE_SCRIPT = """
import {{ checkEvent, WIRE_NAMES }} from {module};
const toNode = new Map([...WIRE_NAMES].map(([node, wire]) => [wire, node]));
let input = "";
for await (const chunk of process.stdin) input += chunk;
const events = JSON.parse(input);
const out = events.map((event) => {{
  const node = Object.fromEntries(Object.entries(event).map(([k, v]) => [toNode.get(k) ?? k, v]));
  const error = checkEvent(node).error;
  return error ? [...new Set(error.details.map((d) => WIRE_NAMES.get(d.field) ?? d.field))].sort() : [];
}});
console.log(JSON.stringify(out));
"""


def node_verdicts(batch: list[dict[str, Any]]) -> list[list[str]]:
    validation = built_node_sdk() / "esm" / "validation.js"
    script = NODE_SCRIPT.format(module=json.dumps(validation.as_uri()))
    result = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=json.dumps(batch),  # ASCII escapes carry lone surrogates to JavaScript intact
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    verdicts: list[list[str]] = json.loads(result.stdout)
    return verdicts


def comparable(event: dict[str, Any]) -> bool:
    """JavaScript cannot tell 3.0 from 3 (the vectors mark that case Python-only), and
    measures metadata with its own number formatting: keep generated metadata far from the
    8192-byte limit, where the two serializations could disagree by a byte."""
    return len(json.dumps(event.get("metadata"))) < 4000


@settings(max_examples=60 if FULL else 6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not FULL)
@given(st.lists(events, min_size=40, max_size=40))
def test_service_python_sdk_and_node_sdk_agree(batch: list[dict[str, Any]]) -> None:
    batch = [event for event in batch if comparable(event)]
    service = [service_verdict(event) for event in batch]
    python = [python_sdk_verdict(event) for event in batch]
    node = node_verdicts(batch)
    for event, s, p, n in zip(batch, service, python, node, strict=True):
        assert s == p == n, json.dumps(event)
