"""Hypothesis values for the owners' API fuzz tests: edgy query text, forged cursors, encoded
values, and the settings (deep under ``COSTTRACK_CHAOS=full``)."""

from __future__ import annotations

import base64
import json
import os
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
SETTINGS = settings(
    max_examples=400 if FULL else 40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=not FULL,
)


def cursor(position: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


edgy_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            "0001-01-01",
            "9999-12-31",
            "2000-01-01",
            "2026-02-30",
            "2026-W47-1",
            "20261122",
            "２０２６-１１-２２",
            "²",
            "٣",
            "0",
            "1",
            "200",
            "201",
            "-1",
            "1e2",
            "day",
            "model",
            "customer",
            "\U0001f600" * 300,
            "x" * 3000,
        ]
    ),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.dates().map(lambda day: day.isoformat()),
)


forged_cursor = st.one_of(
    st.builds(
        lambda received, key: cursor({"received_event": received, "event_key": key}),
        st.one_of(st.text(max_size=70), st.just("")),
        st.one_of(st.text(max_size=20).map(lambda t: "k#" + t), st.just(""), st.text(max_size=5)),
    ),
    st.recursive(st.none() | st.integers() | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)).map(
        cursor
    ),
    st.text(max_size=40),
)


# A query value as it travels: percent-encoded UTF-8, or raw bytes that may not be UTF-8 at all.
encoded_value = st.one_of(
    edgy_text.map(lambda text: quote(text.encode("utf-8", "surrogatepass"), safe="")),
    forged_cursor.map(lambda text: quote(text.encode("utf-8", "surrogatepass"), safe="")),
    st.binary(max_size=12).map(lambda raw: quote(raw, safe="")),
)


def query_answered_or_named(api_url: str, route: str, secret: str, pairs: list[tuple[str, str]]) -> None:
    """A GET of ``route`` with the encoded query ``pairs`` is a 200, or a 400 naming one of them."""
    query = "&".join(f"{name}={value}" for name, value in pairs)
    with httpx.Client(base_url=api_url, timeout=60) as client:
        response = client.get(f"{route}?{query}", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code in (200, 400), (query, response.status_code, response.text[:300])
    if response.status_code == 400:
        field = response.json()["error"]["details"][0]["field"]
        assert field in {name for name, _ in pairs}, (query, field)
