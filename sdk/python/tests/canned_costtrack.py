"""A canned costtrack on 127.0.0.1 that answers reservations exactly as CONTRACT §10 says: one
enforced budget, holds per reservation, ``Idempotency-Key`` replays, ``429 BUDGET_EXCEEDED``
with ``details``, ``DELETE`` 204 then 404, expiry, and events (batches) that settle with the
``reservation_settled`` / ``reservation_unknown`` warnings. ``faults`` scripts 503s, delays and
hangs for the next requests."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

BUDGET_ID = "bud_customer_limit"
#: A call's attribution, as the tests reserve it.
CALL = {"provider": "openai", "model": "gpt-5", "customer_id": "cus_1"}


@dataclass
class Held:
    reservation_id: str
    amount: Decimal
    expires: float
    settled: bool = False
    released: bool = False


@dataclass
class Seen:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Fault:
    status: int = 503
    delay: float = 0.0
    hang: bool = False


@dataclass
class CannedCosttrack:
    limit: Decimal = Decimal("1.00")
    #: What a token estimate is priced at: prompt and output per token (worst case).
    prompt_price: Decimal = Decimal("0.000001")
    output_price: Decimal = Decimal("0.00001")
    seen: List[Seen] = field(default_factory=list)
    faults: List[Fault] = field(default_factory=list)
    spent: Decimal = Decimal(0)
    holds: Dict[str, Held] = field(default_factory=dict)
    by_key: Dict[str, Tuple[int, Dict[str, Any]]] = field(default_factory=dict)
    #: The customer's enforced credits (CONTRACT §12): a larger estimate is ``CREDITS_EXHAUSTED``.
    credits: Optional[Decimal] = None
    events: List[Dict[str, Any]] = field(default_factory=list)
    keyed: List[Tuple[str, Dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.released = threading.Event()
        self.changed = threading.Condition(self.lock)
        canned = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = -1
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                self.handle_any("POST")

            def do_DELETE(self) -> None:
                self.handle_any("DELETE")

            def handle_any(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                headers = {name.lower(): value for name, value in self.headers.items()}
                seen = Seen(method, self.path, headers, self.rfile.read(length))
                fault = canned.record(seen)
                if fault is not None and fault.hang:
                    canned.released.wait(30)
                    return
                if fault is not None and fault.delay:
                    canned.released.wait(fault.delay)
                status, body = (fault.status, {"error": {"code": "INTERNAL"}}) if fault and fault.status else (0, {})
                if not status:
                    status, body = canned.answer(seen)
                payload = b"" if status == 204 else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def record(self, seen: Seen) -> Optional[Fault]:
        with self.lock:
            self.seen.append(seen)
            self.changed.notify_all()
            return self.faults.pop(0) if self.faults else None

    def requests(self, method: str, path_start: str) -> List[Seen]:
        with self.lock:
            return [seen for seen in self.seen if seen.method == method and seen.path.startswith(path_start)]

    def wait_for(self, method: str, path_start: str, count: int = 1, timeout: float = 5.0) -> List[Seen]:
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                found = [seen for seen in self.seen if seen.method == method and seen.path.startswith(path_start)]
                if len(found) >= count or time.monotonic() >= deadline:
                    return found
                self.changed.wait(0.05)

    # -- the service's answers ---------------------------------------------------------------

    def answer(self, seen: Seen) -> Tuple[int, Dict[str, Any]]:
        with self.lock:
            if seen.method == "DELETE" and seen.path.startswith("/v1/reservations/"):
                return self.release(seen.path.rsplit("/", 1)[1])
            if seen.path == "/v1/reservations":
                key = seen.headers.get("idempotency-key") or ""
                if key in self.by_key:
                    return self.by_key[key]
                self.by_key[key] = answer = self.reserve(seen.json)
                return answer
            if seen.path == "/v1/events":
                return 200, {
                    "results": [self.event(item["event"], item["idempotency_key"]) for item in seen.json["batch"]]
                }
        return 404, {"error": {"code": "NOT_FOUND"}}

    def remaining(self) -> Decimal:
        now = time.monotonic()
        held = sum(
            (h.amount for h in self.holds.values() if not (h.settled or h.released) and h.expires > now), Decimal(0)
        )
        return self.limit - self.spent - held

    def budget(self) -> Dict[str, Any]:
        remaining = self.remaining()
        held = self.limit - self.spent - remaining
        return {
            "budget_id": BUDGET_ID,
            "name": "Per customer",
            "amount": str(self.limit),
            "spent": str(self.spent),
            "held": str(held),
            "remaining": str(remaining),
            "instance": "cus_1",
        }

    def reserve(self, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        estimate = body["estimate"]
        if "amount" in estimate:
            amount = Decimal(estimate["amount"])
        else:
            amount = self.prompt_price * estimate.get("prompt_tokens", 0)
            amount += self.output_price * estimate.get("max_output_tokens", 0)
        if self.credits is not None and amount > self.credits:
            details = [{"field": "customer_id", "remaining": str(self.credits), "message": "not enough credits"}]
            return 429, {"error": {"code": "CREDITS_EXHAUSTED", "message": "no credits", "details": details}}
        if amount > self.remaining():
            remaining = str(self.remaining())
            details = [{"budget_id": BUDGET_ID, "name": "Per customer", "instance": "cus_1", "remaining": remaining}]
            return 429, {"error": {"code": "BUDGET_EXCEEDED", "message": "over budget", "details": details}}
        hold = body.get("hold", True)
        reservation_id = f"rsv_{len(self.holds) + 1}"
        ttl = body.get("ttl_seconds", 600)
        if hold:
            self.holds[reservation_id] = Held(reservation_id, amount, time.monotonic() + ttl)
        answer = {
            "reservation_id": reservation_id,
            "allowed": True,
            "held": str(amount if hold else Decimal(0)),
            "currency": "USD",
            "expires_at": "2026-03-01T12:10:00Z",
            "budgets": [self.budget()],
        }
        return 200, answer

    def release(self, reservation_id: str) -> Tuple[int, Dict[str, Any]]:
        hold = self.holds.get(reservation_id)
        if hold is None or hold.settled or hold.released or hold.expires <= time.monotonic():
            return 404, {"error": {"code": "NOT_FOUND"}}
        hold.released = True
        return 204, {}

    def tracked(self) -> List[Dict[str, Any]]:
        """The events received, in the order they were tracked (their keys count up)."""
        with self.lock:
            return [event for _, event in sorted(self.keyed)]

    def event(self, event: Dict[str, Any], key: str) -> Dict[str, Any]:
        self.events.append(event)
        self.keyed.append((key, event))
        cost = Decimal(event.get("completion_tokens", 0)) * self.output_price
        warnings = []
        reservation_id = event.get("reservation_id")
        if reservation_id is not None:
            hold = self.holds.get(reservation_id)
            if hold is None or hold.released or hold.expires <= time.monotonic():
                warnings.append({"code": "reservation_unknown", "message": f"{reservation_id} is unknown or expired"})
            elif hold.settled:
                warnings.append({"code": "reservation_settled", "message": f"{reservation_id} was settled already"})
            else:
                hold.settled = True
        self.spent += cost
        return {"status": 200, "event_id": f"evt_{len(self.events)}", "cost": str(cost), "warnings": warnings}


def completion() -> Any:
    from canned_provider import chat_completion, chat_usage

    return chat_completion("gpt-5-2025-08-07", chat_usage(100, 200))
