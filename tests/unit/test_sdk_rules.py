"""The SDKs' shared limits and rules are written once, in ``spec/sdk-rules.json``: both SDKs'
generated blocks are what ``scripts/generate_sdk_rules.py`` makes of it, and the limits that live
elsewhere in the SDKs and in the service (batch size, idempotency key, reservation ttl) hold the
same values. Node's sources are read as text: no Node runtime is needed to check them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from costtrack import _keys, _reservation, _rules, _wire
from costtrack_service.domain.ingest import batch, event_validation
from costtrack_service.domain.reservations import request as reservation_request
from scripts import generate_sdk_rules as generator

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "sdk" / "node" / "src"
RULES = generator.load()


def value(key: str) -> Any:
    return RULES[key]["value"]


def node_constant(file: str, name: str) -> int:
    """``export const NAME = 1_048_576;`` in a Node source, as a number."""
    found = re.search(rf"^export const {name} = ([0-9_]+);", (NODE / file).read_text(encoding="utf-8"), re.M)
    assert found, f"{file}: no {name}"
    return int(found.group(1).replace("_", ""))


@pytest.mark.parametrize("relative", sorted(generator.TARGETS))
def test_each_sdk_file_is_generated_from_the_spec(relative: str) -> None:
    text = (ROOT / relative).read_text(encoding="utf-8")
    assert generator.generated(text, relative, RULES) == text, "run scripts/generate_sdk_rules.py"


def test_a_hand_edit_of_a_generated_block_is_caught() -> None:
    relative = "sdk/node/src/reservation-key.ts"
    text = (ROOT / relative).read_text(encoding="utf-8").replace("GROUP_HOLDS = 25;", "GROUP_HOLDS = 30;")
    assert generator.generated(text, relative, RULES) != text
    changed = {**RULES, "metadata_max_bytes": {**RULES["metadata_max_bytes"], "value": 4096}}
    relative = "sdk/python/src/costtrack/_rules.py"
    text = (ROOT / relative).read_text(encoding="utf-8")
    assert "METADATA_MAX_BYTES = 4096" in generator.generated(text, relative, changed)


def test_the_python_sdk_applies_the_spec() -> None:
    assert value("metadata_max_bytes") == _rules.METADATA_MAX_BYTES
    assert value("metadata_max_depth") == _rules.METADATA_MAX_DEPTH
    assert value("pricing_context_max_chars") == _rules.PRICING_CONTEXT_MAX_CHARS
    assert _rules.MAX_SAFE_INTEGER == value("max_safe_integer") == 2**53 - 1
    assert list(_rules.STATUSES) == value("statuses")
    assert {
        f: (v["max"], v["required"], v["trimmed"]) for f, v in value("string_limits").items()
    } == _rules.STRING_LIMITS
    assert value("identifier_pattern") == _rules.IDENTIFIER_PATTERN
    assert (value("reservation_group_holds"), value("reservation_group_seconds")) == (
        _keys.GROUP_HOLDS,
        _keys.GROUP_SECONDS,
    )
    assert (value("batch_max_events"), value("batch_max_bytes")) == (_wire.MAX_BATCH_EVENTS, _wire.MAX_BATCH_BYTES)
    assert (1, value("reservation_ttl_max_seconds")) == _reservation.TTL_RANGE


def test_the_node_sdk_applies_the_spec() -> None:
    assert node_constant("batch.ts", "MAX_BATCH_EVENTS") == value("batch_max_events")
    assert node_constant("batch.ts", "MAX_BATCH_BYTES") == value("batch_max_bytes")
    assert node_constant("reservation-body.ts", "TTL_MAX_SECONDS") == value("reservation_ttl_max_seconds")
    # The field table takes each string's limit from the generated STRING_MAX, and states
    # required and trimmed as the spec does.
    rules = (NODE / "rules.ts").read_text(encoding="utf-8")
    rows = re.findall(
        r'kind: "string", wire: "(\w+)", max: STRING_MAX\.(\w+), required: (true|false), trimmed: (true|false)', rules
    )
    assert {wire: (limit, required == "true", trimmed == "true") for wire, limit, required, trimmed in rows} == {
        field: (field, rule["required"], rule["trimmed"]) for field, rule in value("string_limits").items()
    }


def test_the_service_applies_the_spec() -> None:
    """The service checks every event again with the SDK's own rules (``costtrack.validation``),
    and the request-level limits with its own constants."""
    assert (value("batch_max_events"), value("batch_max_bytes")) == (batch.MAX_BATCH_ITEMS, batch.MAX_BATCH_BYTES)
    assert value("idempotency_key_max_chars") == event_validation.MAX_IDEMPOTENCY_KEY_LENGTH
    assert value("reservation_ttl_max_seconds") == reservation_request.MAX_TTL_SECONDS
