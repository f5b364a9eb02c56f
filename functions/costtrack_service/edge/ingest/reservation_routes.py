"""``POST /v1/reservations`` and ``DELETE /v1/reservations/{id}`` (CONTRACT §10): thin.

Order of checks, as on events (docs/api-rules.md#reservations): key (401) → body (400/413) →
plan (403) → ``Idempotency-Key`` → the enforced budgets (429 ``BUDGET_EXCEEDED``). The
reservation domain (and pydantic with it) loads on the first reservation request, so the event
path's cold start never pays for it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from costtrack_service.domain.ingest.commit import plan_inactive
from costtrack_service.domain.ingest.event_validation import parse_idempotency_key
from costtrack_service.domain.workspaces.plans import PlanStatus
from costtrack_service.edge.http_event import Answer, HttpRequest, answer, json_answer, presented_secret
from costtrack_service.edge.ingest.ingest_request import IDEMPOTENCY_KEY_HEADER, parse_body
from costtrack_service.services.event_ingest import IngestService

if TYPE_CHECKING:
    from costtrack_service.services.reservations import ReservationService

PATH = "/v1/reservations"


class ReservationRoutes:
    """The two routes, with one :class:`ReservationService` per warm function (made on first use)."""

    def __init__(self, service: IngestService) -> None:
        self.service = service
        self._reservations: ReservationService | None = None
        self._lock = threading.Lock()

    def reservations(self) -> ReservationService:
        with self._lock:
            if self._reservations is None:
                from costtrack_service.services.credits import CreditCheck, CreditService
                from costtrack_service.services.reservations import ReservationService

                ingest = self.service
                table = ingest.store.credits
                credits = (
                    CreditCheck(
                        CreditService(table),  # type: ignore[arg-type]  # the DynamoDB store's credit table
                        ingest.store.billing,  # type: ignore[arg-type]  # its customers: the billing part
                        ingest.cards,
                        ingest.pricer,
                        ingest.reads.price_overrides,
                        ingest.registry,
                    )
                    if hasattr(table, "grants")  # a store that keeps grants (not an ingestion-only double)
                    else None
                )
                self._reservations = ReservationService(
                    ingest.store,  # type: ignore[arg-type]  # the ingestion store has the ledgers too
                    ingest.pricer,
                    ingest.reads.price_overrides,
                    credits=credits,
                )
            return self._reservations

    def post(self, request: HttpRequest) -> Answer:
        key = self.service.authenticate(presented_secret(request.headers))
        body = parse_body(request.body)
        workspace = self.service.workspace(key)
        if workspace.status != PlanStatus.ACTIVE:
            raise plan_inactive()
        idempotency_key = parse_idempotency_key(request.headers.get(IDEMPOTENCY_KEY_HEADER))
        result = self.reservations().reserve(key, body, idempotency_key)
        headers = {"Idempotent-Replayed": "true"} if result.get("replayed") else {}
        return json_answer(200, result, headers)

    def delete(self, request: HttpRequest) -> Answer:
        key = self.service.authenticate(presented_secret(request.headers))
        reservation_id = request.path[len(PATH) + 1 :]
        if self.reservations().release(key, reservation_id):
            return answer(204, "application/json", "")
        from costtrack_service.domain.errors import ApiError

        raise ApiError("NOT_FOUND", "No live reservation with this id (settled, released, expired or unknown).")
