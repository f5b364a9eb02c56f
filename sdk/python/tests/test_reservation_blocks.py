"""``with tracker.reservation(...)`` and ``async with`` (CONTRACT §10): the first event tracked in
the block (``track()``, a provider helper's, an instrumented client's, from any thread with the
context copied) settles the reservation; a block without one releases it; a refusal raises."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from typing import Any, Callable, List

import pytest
from canned_costtrack import BUDGET_ID, CALL, CannedCosttrack, Fault, completion
from conftest import API_KEY, Collected, free_port_refusing_connections

import costtrack
from costtrack import BudgetExceeded, Reservation, ReservationUnavailable, Tracker


def test_the_first_event_in_the_block_settles_it(service: CannedCosttrack, tracker_for: Callable[..., Tracker]) -> None:
    tracker = tracker_for()
    with tracker.reservation(**CALL, amount="0.10") as reservation:
        assert reservation.reservation_id == "rsv_1"
        tracker.track({**CALL, "prompt_tokens": 10, "completion_tokens": 5})
        tracker.track({**CALL, "prompt_tokens": 1, "completion_tokens": 1})
    tracker.track({**CALL, "prompt_tokens": 1, "completion_tokens": 1})
    assert tracker.flush(5)
    assert [event.get("reservation_id") for event in service.tracked()] == ["rsv_1", None, None]
    assert service.requests("DELETE", "/") == []


def test_a_block_without_an_event_releases_the_hold(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker]
) -> None:
    tracker = tracker_for()
    with tracker.reservation(**CALL, amount="0.70"):
        pass
    # The release goes in the background: the second block needs its money back (on a loaded
    # host it could still be in flight when the next reservation asks).
    assert tracker.flush(5)
    with pytest.raises(RuntimeError), tracker.reservation(**CALL, amount="0.70"):
        raise RuntimeError("the model call failed before any event")
    assert tracker.flush(5)  # flush waits for the releases too
    assert [seen.path for seen in service.requests("DELETE", "/")] == [
        "/v1/reservations/rsv_1",
        "/v1/reservations/rsv_2",
    ]
    assert service.remaining() == Decimal("1.00")


def test_a_refused_block_raises_budget_exceeded(service: CannedCosttrack, tracker_for: Callable[..., Tracker]) -> None:
    tracker = tracker_for()
    entered = False
    with pytest.raises(BudgetExceeded) as raised, tracker.reservation(**CALL, amount="5"):
        entered = True
    assert not entered
    assert raised.value.reservation.refused_by[0].budget_id == BUDGET_ID
    assert "refused by Per customer (cus_1): 1.00 USD remaining" in str(raised.value)
    assert type(raised.value) is BudgetExceeded


def test_deny_on_unavailable_raises_reservation_unavailable(collected: Collected) -> None:
    url = f"http://127.0.0.1:{free_port_refusing_connections()}"
    tracker = Tracker(api_key=API_KEY, base_url=url, on_warning=collected.on_warning, max_retries=0)
    try:
        with tracker.reservation(**CALL, amount="1") as allowed:  # on_unavailable="allow": the block runs
            assert allowed.unavailable and allowed.reservation_id is None
        with pytest.raises(ReservationUnavailable), tracker.reservation(**CALL, amount="1", on_unavailable="deny"):
            pass
    finally:
        tracker.shutdown(1)


def test_the_async_block_and_areserve(service: CannedCosttrack, tracker_for: Callable[..., Tracker]) -> None:
    tracker = tracker_for()
    ticks: List[float] = []

    async def ticker() -> None:
        for _ in range(20):
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def main() -> Reservation:
        service.faults[:] = [Fault(status=0, delay=0.3)]
        ticking = asyncio.ensure_future(ticker())
        reservation = await tracker.areserve(**CALL, amount="0.1")
        await ticking
        async with tracker.reservation(**CALL, amount="0.1") as inside:
            await asyncio.sleep(0)
            tracker.track({**CALL, "prompt_tokens": 1, "completion_tokens": 1})
        assert inside.reservation_id == "rsv_2"
        with pytest.raises(BudgetExceeded):
            async with tracker.reservation(**CALL, amount="5"):
                pass
        return reservation

    reservation = asyncio.run(main())
    assert reservation.reservation_id == "rsv_1"
    assert len(ticks) == 20 and ticks[-1] - ticks[0] < 0.5  # the loop ran while the answer was slow
    assert tracker.flush(5)
    assert [event.get("reservation_id") for event in service.tracked()] == ["rsv_2"]


def test_threads_with_the_copied_context_share_one_reservation(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker]
) -> None:
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    tracker = tracker_for()
    with tracker.reservation(**CALL, amount="0.1"), ThreadPoolExecutor(8) as pool:
        event = {**CALL, "prompt_tokens": 1, "completion_tokens": 1}
        for future in [pool.submit(contextvars.copy_context().run, tracker.track, event) for _ in range(32)]:
            future.result()
    assert tracker.flush(5)
    assert [event.get("reservation_id") for event in service.tracked()].count("rsv_1") == 1


def test_an_instrumented_client_settles_the_block(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], canned: Any
) -> None:
    openai = pytest.importorskip("openai")
    from canned_provider import Canned

    canned.route("POST", "/v1/chat/completions", Canned(body=completion()))
    tracker = tracker_for()
    client = costtrack.instrument(
        openai.OpenAI(base_url=canned.url + "/v1", api_key="test", max_retries=0), tracker=tracker
    )
    with tracker.reservation(**CALL, prompt_tokens=10, max_output_tokens=100) as reservation:
        client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "Hi"}])
    assert tracker.flush(5)
    assert [event.get("reservation_id") for event in service.tracked()] == [reservation.reservation_id]
    assert service.requests("DELETE", "/") == []
