"""The usage event's fields are defined once per language, and everything that spells them out
agrees: the validator's table (``costtrack.validation``), the SDK's ``TrackEvent``, the
service's ``UsageEvent``, its stored item, the export's columns and the Node SDK's table."""

from __future__ import annotations

import json
import subprocess
import typing
from dataclasses import fields as dataclass_fields

from costtrack import TrackEvent
from costtrack.validation import EVENT_FIELDS, IDENTIFIER_FIELDS, INTEGER_FIELDS, STRING_LIMITS, validate_event
from costtrack_service.domain.export.layout import COLUMNS
from costtrack_service.domain.ingest.event_validation import USAGE_EVENT_FIELDS, UsageEvent, to_usage_event
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.store.items import event_from_item, event_to_item, from_item, to_item
from tests.conftest import built_node_sdk
from tests.support.event_records import record

#: The contract's event (docs/api-rules.md#event-fields), every field set to a value of its own.
FULL_EVENT = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "chat",
    "customer_id": "c-1",
    "customer_name": "Acme",
    "environment": "staging",
    "prompt_tokens": 1000,
    "completion_tokens": 200,
    "total_tokens": 1300,
    "reasoning_tokens": 100,
    "cached_input_tokens": 300,
    "cache_write_tokens": 50,
    "latency_ms": 420,
    "status": "error",
    "metadata": {"trace": "t-1", "nested": {"x": 1.5}},
    "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
    "session_id": "conv:42",
    "parent_id": "00f067aa0ba902b7",
    "run_name": "answer-ticket",
    "reservation_id": "rsv_01JD3Z8Q",
}


def test_the_validator_table_is_the_contract() -> None:
    assert set(FULL_EVENT) == EVENT_FIELDS
    assert validate_event(FULL_EVENT).fields == FULL_EVENT


def test_track_event_has_the_validator_fields_with_their_types() -> None:
    assert TrackEvent.__required_keys__ | TrackEvent.__optional_keys__ == EVENT_FIELDS
    required = {name for name, (_, is_required, _) in STRING_LIMITS.items() if is_required}
    assert TrackEvent.__required_keys__ == required
    hints = typing.get_type_hints(TrackEvent)
    for name in INTEGER_FIELDS:
        assert hints[name] == int | None, name
    for name in (*STRING_LIMITS, *IDENTIFIER_FIELDS):
        assert hints[name] == (str if name in required else str | None), name


def test_usage_event_has_the_validator_fields() -> None:
    assert set(USAGE_EVENT_FIELDS) == EVENT_FIELDS
    assert tuple(field.name for field in dataclass_fields(UsageEvent)) == USAGE_EVENT_FIELDS
    event = to_usage_event(validate_event(FULL_EVENT))
    assert event.fields() == FULL_EVENT


def _record(event: UsageEvent) -> EventRecord:
    return record("ws-1", event=event, fingerprint=event.fingerprint())


def test_the_stored_item_holds_every_field_and_reads_back_the_same_event() -> None:
    event = to_usage_event(validate_event(FULL_EVENT))
    item = event_to_item(_record(event))
    for name in EVENT_FIELDS - {"metadata"}:
        assert item[name] == FULL_EVENT[name], name
    assert json.loads(item["metadata"]) == FULL_EVENT["metadata"]
    # Through DynamoDB's attribute values and back, as the store reads it (counts as Decimal).
    read = event_from_item(from_item(to_item(item)))
    assert read.event == event
    for name in INTEGER_FIELDS:
        assert type(getattr(read.event, name)) is int, name


def test_the_stored_item_leaves_absent_fields_absent() -> None:
    event = to_usage_event(validate_event({"provider": "openai", "model": "gpt-5"}))
    item = to_item(event_to_item(_record(event)))
    assert set(item) & EVENT_FIELDS == {"provider", "model", "feature", "environment", "status", "total_tokens"}
    assert event_from_item(from_item(item)).event == event


def test_the_export_has_a_column_per_field() -> None:
    columns = dict(COLUMNS)
    for name in EVENT_FIELDS - {"metadata"}:
        assert columns[name] == ("bigint" if name in INTEGER_FIELDS else "string"), name
    assert "metadata_json" in columns


def test_the_node_sdk_table_has_the_same_fields() -> None:
    validation = built_node_sdk() / "esm" / "validation.js"
    script = f"import {{ WIRE_NAMES }} from {json.dumps(validation.as_uri())};" + (
        "console.log(JSON.stringify([...WIRE_NAMES.values()]));"
    )
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    assert set(json.loads(out.stdout)) == EVENT_FIELDS
