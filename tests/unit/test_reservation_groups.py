"""Holds placed by an Idempotency-Key's group (``grp:<group>:<rest>``, ``ledger.placement``): the
reservations of one group share a shard, a retry finds its hold, and the exactness of the
ungrouped path holds when every reservation names one group (on the in-memory store:
``test_reservation_ledger.py``'s race runs with both kinds of key)."""

from __future__ import annotations

from decimal import Decimal as D

from costtrack_service.domain.reservations.ids import parse
from costtrack_service.domain.reservations.ledger import placement
from tests.unit.test_reservation_ledger import Shop


def test_the_group_is_the_placement_and_anything_else_is_the_whole_key() -> None:
    assert placement("grp:web-7.1764150000:5f1c") == "grp:web-7.1764150000"
    assert placement("grp:web-7.1764150000:5f1c:x") == "grp:web-7.1764150000"
    for key in ("grp::5f1c", "grp:web-7", "grp:web-7:", "5f1c", "group:a:b", "grp:" + "g" * 65 + ":x"):
        assert placement(key) == key


def test_one_groups_reservations_share_a_shard_and_a_retry_finds_its_hold() -> None:
    shop = Shop()
    budget = shop.budget("10")
    answers = [shop.reserve("0.01", key=f"grp:web-7.1764150000:{n}") for n in range(20)]
    shards = {parse(str(answer["reservation_id"])).parts[0].shard for answer in answers if answer}  # type: ignore[union-attr]
    assert len(shards) == 1
    others = [shop.reserve("0.01", key=f"grp:web-8.1764150000:{n}") for n in range(20)]
    assert len({parse(str(a["reservation_id"])).parts[0].shard for a in others if a}) == 1  # type: ignore[union-attr]
    again = shop.reserve("0.01", key="grp:web-7.1764150000:3")
    assert again is not None and answers[3] is not None
    assert again["replayed"] and again["reservation_id"] == answers[3]["reservation_id"]
    assert shop.totals(budget)[1] == D("0.4")  # the retry held nothing more
