"""Write units of global secondary indexes by AWS's rule (``local.item_size.index_write_units``),
which ``bench/service.py`` adds to the table's units."""

from __future__ import annotations

from costtrack_tools.local.item_size import Index, Table, index_write_units, item_size

BY_TIME = Index("by_time", ("visible_partition", "received_event"), "ALL")
EVENTS = Table("events", "arn", ("partition", "event_key"), (BY_TIME,))


def event(metadata_bytes: int = 10, visible: bool = True) -> dict[str, dict[str, str]]:
    item = {
        "partition": {"S": "ws#01"},
        "event_key": {"S": "k1"},
        "received_event": {"S": "2026-11-26T00:00:00Z#e1"},
        "metadata": {"S": "x" * metadata_bytes},
    }
    if visible:
        item["visible_partition"] = {"S": "ws#01"}
    return item


def test_a_put_into_the_index_costs_one_standard_write_per_started_kb() -> None:
    small = event()
    assert index_write_units("Put", {"Item": small}, small, EVENTS) == {"by_time": 1}
    large = event(metadata_bytes=2500)  # 2.5 KB: three units, not doubled by a transaction
    assert 2048 < item_size(large) <= 3072
    assert index_write_units("Put", {"Item": large}, large, EVENTS) == {"by_time": 3}


def test_an_item_without_the_index_key_costs_the_index_nothing() -> None:
    hidden = event(visible=False)
    assert index_write_units("Put", {"Item": hidden}, hidden, EVENTS) == {}


def test_a_keys_only_index_is_charged_for_its_keys_alone() -> None:
    keys_only = Table("events", "arn", EVENTS.keys, (Index("by_time", BY_TIME.keys, "KEYS_ONLY"),))
    large = event(metadata_bytes=5000)
    assert index_write_units("Put", {"Item": large}, large, keys_only) == {"by_time": 1}
    # an update of an attribute the index does not hold does not touch it
    update = {
        "Key": {"partition": large["partition"], "event_key": large["event_key"]},
        "UpdateExpression": "SET #m = :m",
        "ExpressionAttributeNames": {"#m": "metadata"},
        "ExpressionAttributeValues": {":m": {"S": "y"}},
    }
    assert index_write_units("Update", update, large, keys_only) == {}
    assert index_write_units("Update", update, large, EVENTS) == {"by_time": 5}


def test_deletes_and_condition_checks_charge_no_index_write_here() -> None:
    item = event()
    assert index_write_units("ConditionCheck", {"Key": {}}, item, EVENTS) == {}
    assert index_write_units("Put", {"Item": item}, None, EVENTS) == {}
