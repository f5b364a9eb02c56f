"""Every shared validation case (spec/validation-vectors.json) that applies to Python, through
the SDK: an invalid event reaches on_error naming its fields and is never sent; a valid one is
sent, cleaned, exactly once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from conftest import Collected, Sink

from costtrack import EventValidationError, Tracker

VECTORS_PATH = Path(__file__).resolve().parents[3] / "spec" / "validation-vectors.json"
CASES: List[Dict[str, Any]] = [
    case for case in json.loads(VECTORS_PATH.read_text("utf-8"))["cases"] if "python" in case.get("only", ["python"])
]


def test_the_shared_vectors_are_all_here() -> None:
    assert len(CASES) >= 60
    assert len({case["name"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [c for c in CASES if not c["valid"]], ids=lambda case: case["name"])
def test_invalid_event_goes_to_on_error(
    case: Dict[str, Any], make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    tracker = make_tracker()
    tracker.track(case["event"])

    assert len(collected.errors) == 1
    error = collected.errors[0]
    assert isinstance(error, EventValidationError)
    assert sorted(set(error.fields)) == sorted(set(case["fields"]))
    for name in case["fields"]:
        assert name in str(error) or name == "body"
    assert tracker.flush(timeout=5)
    assert sink.received == []
    assert tracker.stats()["invalid"] == 1


@pytest.mark.parametrize("case", [c for c in CASES if c["valid"]], ids=lambda case: case["name"])
def test_valid_event_is_sent_cleaned(
    case: Dict[str, Any], make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    tracker = make_tracker(environment="vectors")
    tracker.track(case["event"])

    assert tracker.flush(timeout=5)
    assert collected.errors == []
    assert len(sink.received) == 1
    sent = sink.received[0].json
    for name, value in case.get("expect", {}).items():
        assert sent[name] == value
    for name, value in case["event"].items():
        if value is None or name in case.get("unknown", []):
            assert name not in sent or name == "environment"
    assert sent["environment"] == (case["event"].get("environment") or "vectors").strip()
    ignored = sorted(w.message.split("'")[1] for w in collected.warnings if w.code == "ignored_field")
    assert ignored == sorted(case.get("unknown", []))
    assert [w.code for w in collected.warnings if w.code != "ignored_field"] == []
