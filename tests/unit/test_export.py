"""The export's pure rules: every field an event can have is a column, lines and bytes are the
same for the same events, a day's bounds and names, how pieces are cut."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from costtrack_service.domain.export.layout import (
    COLUMNS,
    day_bounds,
    encode_lines,
    export_line,
    object_key,
    parse_day,
    pieces,
    yesterday,
)
from costtrack_service.domain.ingest.event_validation import to_usage_event, validate
from tests.support.event_records import record

FULL_EVENT = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "chat",
    "customer_id": "c1",
    "customer_name": "Zoë",
    "environment": "staging",
    "prompt_tokens": 10,
    "completion_tokens": 5,
    "total_tokens": 20,
    "reasoning_tokens": 5,
    "cached_input_tokens": 1,
    "cache_write_tokens": 1,
    "latency_ms": 7,
    "status": "error",
    "metadata": {"a": [1, {"b": None}], "emoji": "😀"},
}


def test_every_field_of_the_listed_event_is_a_column() -> None:
    full = replace(record("ws_1"), event=to_usage_event(validate(FULL_EVENT)))
    view = full.to_dict()
    columns = [name for name, _ in COLUMNS]
    assert set(view) - {"metadata"} <= set(columns)
    line = export_line(full)
    assert list(line) == columns
    assert all(line[name] == view[name] for name in view if name != "metadata")
    assert json.loads(line["metadata_json"]) == FULL_EVENT["metadata"]


def test_lines_are_deterministic_gzip_json_lines() -> None:
    records = [record("ws_1", f"k{n}", event_id=f"evt_{n}") for n in range(3)]
    body = encode_lines(records)
    assert body == encode_lines(records)  # no timestamp in the gzip header
    text = gzip.decompress(body).decode("ascii")
    assert [json.loads(line)["event_id"] for line in text.splitlines()] == ["evt_0", "evt_1", "evt_2"]
    assert json.loads(text.splitlines()[0])["cost"] == "0.0000125"
    odd = replace(records[0], event=to_usage_event(validate(FULL_EVENT)))
    assert json.loads(gzip.decompress(encode_lines([odd])))["customer_name"] == "Zoë"


def test_days_names_and_pieces() -> None:
    assert day_bounds(date(2026, 12, 31)) == ("2026-12-31T00:00:00.000Z", "2027-01-01T00:00:00.000Z")
    assert yesterday(datetime(2026, 3, 1, 0, 5, tzinfo=UTC)) == date(2026, 2, 28)
    key = object_key("events/", "ws_1", date(2026, 3, 14), 7, 12)
    assert key == "events/workspace_id=ws_1/day=2026-03-14/part-07-0012.json.gz"
    for bad in ("2026-02-30", "2026-3-14", "١٢٣٤-05-06", None, 20260314):
        with pytest.raises(ValueError, match="YYYY-MM-DD"):
            parse_day(bad)
    records = [record("ws_1", f"k{n}") for n in range(5)]
    cut = list(pieces([(3, records[:5]), (9, []), (4, records[:1])], size=2))
    assert [(piece.partition, piece.number, len(piece.records)) for piece in cut] == [
        (3, 0, 2),
        (3, 1, 2),
        (3, 2, 1),
        (4, 0, 1),
    ]
