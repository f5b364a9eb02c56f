"""Reservations: check before the call, hold, release (CONTRACT §10). No HTTP, no DynamoDB.

``reserve`` prices the estimate (an amount, or token counts at the worst case: the prompt at
the input rate with no cache discount, ``max_output_tokens`` at the output rate), finds the
enforced budget instances that apply (:func:`ledgers_for`) and holds the amount in one shard of each
(:class:`Ledger`), in one write; it refuses only after a survey of the refusing ledger showed
that not enough is left. ``release`` returns a hold early. Settling happens with the event
(:class:`Settle`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.budgets.watch import BudgetReader
from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.errors import ApiError, invalid, unavailable
from costtrack_service.domain.pricing.cost import CURRENCY, counts_of, format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.pricing.pricer import Call, Pricer
from costtrack_service.domain.reservations.ledger import (
    LEDGER_SHARDS,
    ZERO,
    Gather,
    Hold,
    HoldRejected,
    Known,
    Ledger,
    LedgerSurvey,
    Seed,
    Take,
    after_survey,
    ceil_money,
    held_by,
    placement,
    plan_take,
    shard_of,
)
from costtrack_service.domain.reservations.request import Ask, read_ask
from costtrack_service.domain.reservations.reservation_ids import MAX_PARTS, Part, ReservationId, new_entry, parse
from costtrack_service.domain.reservations.scope import ledgers_for
from costtrack_service.domain.reservations.seed import plan_seed, window_spend
from costtrack_service.domain.store_errors import StoreUnavailable, SurveyConflict
from costtrack_service.domain.usage import RollupReader
from costtrack_service.domain.workspaces.keys import KeyRecord
from costtrack_service.domain.workspaces.shards import ShardCycle
from costtrack_service.services.credits import CreditCheck, credits_exhausted

#: Enforced budgets are re-read at most this often: a new limit holds within a second.
BUDGETS_TTL_SECONDS = 1.0
#: A lease (money newly taken from the central item) follows a survey at most this old, so that
#: what events without a reservation spent (debts in the shards, :class:`Debit`) counts towards
#: the limit within a second, like a changed limit.
LEASE_SURVEY_SECONDS = 1.0
MAX_ATTEMPTS = 12


class LedgerStore(Protocol):
    """Enforced budgets' ledgers and the holds of reservations in them."""

    def hold(self, workspace_id: str, entry: str, expires: int, takes: Sequence[Take]) -> HoldRejected | None:
        """Hold each take's amount in its shard (and lease), all or nothing."""
        ...

    def survey_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey:
        """The central item and every shard in one snapshot (raises ``SurveyConflict``)."""
        ...

    def gather(self, workspace_id: str, gather: Gather, now: int) -> bool:
        """Return expired holds and move money into the target shard; False when it changed."""
        ...

    def find_holds(self, workspace_id: str, reservation: ReservationId) -> dict[Part, Hold | None]:
        """Each part's hold (consistent reads); a part whose shard never existed is left out."""
        ...

    def release(self, workspace_id: str, reservation: ReservationId, holds: dict[Part, Hold], now: int) -> bool: ...

    def seed_ledger(self, workspace_id: str, seed: Seed) -> bool:
        """The ledger's creating write (:func:`plan_seed`); False when it was seeded or spent meanwhile."""
        ...


class ReservationStore(Protocol):
    """The parts reservations use: the ledgers, the budgets that enforce them and the rollups
    a ledger is seeded from."""

    @property
    def reservations(self) -> LedgerStore: ...

    @property
    def budgets(self) -> BudgetReader: ...

    @property
    def rollups(self) -> RollupReader: ...


def budget_exceeded(refused: list[tuple[Ledger, Decimal]]) -> ApiError:
    details = [
        {
            "field": "estimate",
            "budget_id": ledger.budget_id,
            **({"instance": ledger.instance} if ledger.instance is not None else {}),
            "remaining": format_decimal(max(remaining, ZERO)),
            "message": f"budget {ledger.name or ledger.budget_id} has {format_decimal(max(remaining, ZERO))} USD left",
        }
        for ledger, remaining in refused
    ]
    names = ", ".join(ledger.budget_id + (f" ({ledger.instance})" if ledger.instance else "") for ledger, _ in refused)
    return ApiError("BUDGET_EXCEEDED", f"Not enough left in enforced budget {names} for this call.", details=details)


class ReservationService:
    """Reserves and releases for one warm function: it keeps what it last saw of each ledger."""

    def __init__(
        self,
        store: ReservationStore,
        pricer: Pricer,
        overrides: Callable[[str], Any],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        backoff_seconds: float = 0.01,
        credits: CreditCheck | None = None,
    ) -> None:
        self.store = store
        #: A customer's enforced credits (:class:`CreditCheck`); None: budgets only.
        self.credits = credits
        self.pricer = pricer
        self._overrides = overrides
        self._clock = clock
        self._sleep = sleep
        self._backoff = backoff_seconds
        self._budgets: TTLCache[str, list[Budget]] = TTLCache(clock=monotonic)
        self._monotonic = monotonic
        self._known: dict[tuple[str, str, str], Known] = {}  # (workspace, ledger ref, month)
        self._next_shard = ShardCycle(LEDGER_SHARDS)

    # -- reserve ----------------------------------------------------------------------------

    def reserve(self, key: KeyRecord, body: object, idempotency_key: str | None) -> dict[str, Any]:
        """The answer of an allowed reservation, or raises ``BUDGET_EXCEEDED`` or
        ``CREDITS_EXHAUSTED`` (429)."""
        ask = read_ask(body)
        now = self._clock()
        ledgers = ledgers_for(self._enforced(key.workspace_id), ask.attribution, now)
        credit = self.credits.ledger(key.workspace_id, ask.attribution.customer_id, now) if self.credits else None
        if credit is not None:
            ledgers.append(credit)
        if len(ledgers) > MAX_PARTS:
            raise invalid("customer_id", f"more than {MAX_PARTS} enforced budgets apply to this call")
        amount, holds = self._holds(key.workspace_id, ask, ledgers, now)
        ws, at = key.workspace_id, int(now.timestamp())
        expires = at + ask.ttl_seconds
        entry = new_entry(ws, idempotency_key)
        if not ask.hold:
            return self._dry_run(ws, ask, ledgers, amount, holds, at)
        shards = {
            ledger.ref: shard_of(f"{placement(idempotency_key)}\x00{ledger.ref}") if idempotency_key else None
            for ledger in ledgers
        }
        surveyed: set[str] = set()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            planned = self._plan(ws, ledgers, holds, at, shards, surveyed, entry if idempotency_key else None)
            if isinstance(planned, tuple) and isinstance(planned[1], Hold):
                ref, found = planned
                return self._replay(ws, ask, entry, ledgers, shards, ref, found, amount, holds, now)
            takes, refused = planned
            if refused:
                raise _refusal(refused)
            if takes is None:
                continue  # a gather moved money, or a survey met a write: plan again
            rejected = self.store.reservations.hold(ws, entry, expires, takes) if takes else None
            if rejected is None:
                for take in takes:
                    self._spent(ws, take)
                return self._answer(ws, ask, entry, expires, ledgers, _shards(takes), amount, holds, now)
            if rejected.replay:
                ref, first = next(iter(rejected.replay.items()))
                return self._replay(ws, ask, entry, ledgers, _shards(takes), ref, first, amount, holds, now)
            self._learn(ws, ledgers, rejected)
            if rejected.unseeded:
                surveyed.update("stale:" + ref for ref in rejected.unseeded)
            if rejected.short:
                surveyed.difference_update({ref for ref, _ in rejected.short})
                for ledger in ledgers:
                    if ledger.ref in {ref for ref, _ in rejected.short}:
                        surveyed.add("stale:" + ledger.ref)
            if rejected.conflict:
                self._sleep(random.uniform(0, self._backoff * 2 ** min(attempt, 6)))
        raise unavailable()

    def _holds(self, ws: str, ask: Ask, ledgers: Sequence[Ledger], at: datetime) -> tuple[Decimal, dict[str, Decimal]]:
        """The call's worst-case cost and what each ledger holds of it: a budget the cost, a
        customer's credits its charge (docs/guides/billing.md#credits)."""
        amount = self.estimate(ws, ask, at)
        holds = {ledger.ref: amount for ledger in ledgers if not ledger.credit}
        for ledger in ledgers:
            if ledger.credit and self.credits is not None:
                holds[ledger.ref] = self.credits.charge(ws, ask, amount, at)
        return amount, holds

    def estimate(self, workspace_id: str, ask: Ask, now: datetime) -> Decimal:
        """The hold: the amount asked, or the token counts priced at the worst case."""
        if ask.amount is not None:
            return ask.amount
        event = ask.attribution
        counts = counts_of(ask.prompt_tokens, ask.max_output_tokens, None, None, None, ask.pricing_metadata)
        call = Call(event.provider, event.model, counts, ask.pricing_metadata)
        priced = self.pricer.price(call, now, self._overrides(workspace_id))
        if not priced.priced:
            raise invalid(
                "model", f"no price for {event.provider}/{event.model}: give estimate.amount for this call instead"
            )
        return ceil_money(priced.cost)

    def _replay(
        self,
        ws: str,
        ask: Ask,
        entry: str,
        ledgers: list[Ledger],
        shards: Mapping[str, int | None],
        ref: str,
        hold: Hold,
        amount: Decimal,
        holds: Mapping[str, Decimal],
        now: datetime,
    ) -> dict[str, Any]:
        """The reservation a retry finds (CONTRACT §4: the stored one, whatever changed since),
        or ``IDEMPOTENCY_KEY_REUSED`` when the key held another amount. A token estimate is
        priced again at the instant the original was made (its expiry less its TTL), so that a
        price changed since is no other request."""
        if hold.amount != holds.get(ref) and ask.amount is None:
            made = datetime.fromtimestamp(hold.expires - ask.ttl_seconds, UTC)
            amount, holds = self._holds(ws, ask, ledgers, made)
        if hold.amount != holds.get(ref):
            raise reservation_key_reused()
        by_ref = {ref: shard for ref, shard in shards.items() if shard is not None}
        return self._answer(ws, ask, entry, hold.expires, ledgers, by_ref, amount, holds, now, replayed=True)

    def _plan(
        self,
        ws: str,
        ledgers: list[Ledger],
        holds: Mapping[str, Decimal],
        at: int,
        shards: dict[str, int | None],
        surveyed: set[str],
        entry: str | None,
    ) -> tuple[list[Take] | None, list[tuple[Ledger, Decimal]]] | tuple[str, Hold]:
        """The takes that hold ``amount``, or the budgets that refuse it; or, for a retry
        (``entry`` given: its key's), the hold its original left, which a survey shows in the
        key's shard: a retry is answered from it before any budget is counted (CONTRACT §2),
        at no cost but the survey a refusal reads anyway."""
        takes: list[Take] = []
        refused: list[tuple[Ledger, Decimal]] = []
        for ledger in ledgers:
            amount = holds[ledger.ref]
            known = self._known_of(ws, ledger)
            fixed = shards[ledger.ref]
            shard = self._next_shard() if fixed is None else fixed
            take = None if "stale:" + ledger.ref in surveyed else plan_take(ledger, known, amount, shard)
            if take is not None and take.lease > 0 and not self._fresh(known):
                take = None  # a lease counts what events spent without a reservation: survey first
            if take is not None and (fixed is None or take.shard == fixed):
                takes.append(take)
                continue
            try:
                survey = self.store.reservations.survey_ledger(ws, ledger)
            except SurveyConflict:
                self._sleep(random.uniform(0, self._backoff * 4))
                return None, []
            found = held_by(survey.shards.get(fixed), entry) if fixed is not None and entry else None
            if found is not None:
                return ledger.ref, found
            if not survey.seeded:
                self._seed(ws, ledger, survey, shard)
                return None, []  # seeded (here or elsewhere), or a shard spent meanwhile: again
            known.surveyed = self._monotonic()
            decided = after_survey(ledger, known, survey, amount, at, shard, fixed=fixed is not None)
            if decided is None:
                refused.append((ledger, known.totals[2] if known.totals else ZERO))
            elif isinstance(decided, Gather):
                self.store.reservations.gather(ws, decided, at)
                surveyed.add("stale:" + ledger.ref)
                return None, []
            else:
                takes.append(decided)
        return (None, refused) if refused else (takes, [])

    def _dry_run(
        self, ws: str, ask: Ask, ledgers: list[Ledger], amount: Decimal, holds: Mapping[str, Decimal], at: int
    ) -> dict[str, Any]:
        refused = []
        budgets = []
        credits = None
        for ledger in ledgers:
            survey = self._survey_retrying(ws, ledger)
            spent, held, remaining = survey.totals(ledger.amount, at)
            if ledger.credit:
                credits = _credit_line(holds[ledger.ref], remaining, held=False)
            else:
                budgets.append(_budget_line(ledger, spent, held, remaining))
            if remaining < holds[ledger.ref]:
                refused.append((ledger, remaining))
        if refused:
            raise _refusal(refused)
        return {
            "reservation_id": None,
            "allowed": True,
            "held": "0",
            "estimate": format_decimal(amount),
            "currency": CURRENCY,
            "expires_at": None,
            "budgets": budgets,
            **({"credits": credits} if credits else {}),
            "warnings": [warning.to_dict() for warning in ask.warnings],
        }

    def _survey_retrying(self, ws: str, ledger: Ledger) -> LedgerSurvey:
        """A seeded ledger's survey (seeding it first when it is not)."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                survey = self.store.reservations.survey_ledger(ws, ledger)
            except SurveyConflict:
                self._sleep(random.uniform(0, self._backoff * 2 ** min(attempt, 6)))
                continue
            if survey.seeded:
                return survey
            self._seed(ws, ledger, survey, self._next_shard())
        raise StoreUnavailable("the ledger keeps changing")

    def _seed(self, ws: str, ledger: Ledger, survey: LedgerSurvey, shard: int) -> bool:
        """Count the window's spend before the ledger into it: the rollups read *after* the
        survey, the write conditioned on the surveyed shards (:func:`plan_seed`)."""
        if ledger.credit:  # nothing was spent from credits before their first grant made the ledger
            return self.store.reservations.seed_ledger(ws, plan_seed(ledger, survey, ZERO, shard, LEDGER_SHARDS))
        budget = next((b for b in self._enforced(ws) if b.budget_id == ledger.budget_id), None)
        if budget is None:
            raise StoreUnavailable("the budget changed")
        spent = window_spend(self.store.rollups, budget, ledger.instance, self._clock())
        return self.store.reservations.seed_ledger(ws, plan_seed(ledger, survey, spent, shard, LEDGER_SHARDS))

    def _answer(
        self,
        ws: str,
        ask: Ask,
        entry: str,
        expires: int,
        ledgers: list[Ledger],
        by_ref: Mapping[str, int],
        amount: Decimal,
        holds: Mapping[str, Decimal],
        now: datetime,
        *,
        replayed: bool = False,
    ) -> dict[str, Any]:
        month = next((ledger.month for ledger in ledgers if not ledger.credit), now.date().isoformat()[:7])
        reservation = ReservationId(
            entry,
            expires,
            month,
            tuple(Part(ledger.ref, by_ref[ledger.ref], ledger.credit) for ledger in ledgers),
        )
        budgets = []
        credits = None
        for ledger in ledgers:
            known = self._known.get(_known_key(ws, ledger))
            held = holds[ledger.ref]
            spent, held_now, remaining = known.totals if known and known.totals else (ZERO, held, ledger.amount - held)
            if ledger.credit:
                credits = _credit_line(held, remaining)
            else:
                budgets.append(_budget_line(ledger, spent, held_now, remaining))
        return {
            "reservation_id": str(reservation),
            "allowed": True,
            "replayed": replayed,
            "held": format_decimal(amount),
            "currency": CURRENCY,
            "expires_at": format_timestamp(datetime.fromtimestamp(expires, UTC)),
            "budgets": budgets,
            **({"credits": credits} if credits else {}),
            "warnings": [warning.to_dict() for warning in ask.warnings],
        }

    # -- release ------------------------------------------------------------------------------

    def release(self, key: KeyRecord, reservation_id: str) -> bool:
        """``DELETE /v1/reservations/{id}``: True when a hold was returned (204), else 404."""
        reservation = parse(reservation_id)
        at = int(self._clock().timestamp())
        if reservation is None or not reservation.parts or reservation.expires <= at:
            return False
        found = self.store.reservations.find_holds(key.workspace_id, reservation)
        holds = {part: hold for part, hold in found.items() if hold is not None and hold.expires > at}
        if not holds:
            return False
        return self.store.reservations.release(key.workspace_id, reservation, holds, at)

    # -- what this function knows -------------------------------------------------------------

    def _enforced(self, workspace_id: str) -> list[Budget]:
        cached = self._budgets.get(workspace_id)
        if cached is not None:
            return cached.value
        budgets = self.store.budgets.list_budgets(workspace_id)
        self._budgets.put(workspace_id, budgets, BUDGETS_TTL_SECONDS)
        return budgets

    def _fresh(self, known: Known) -> bool:
        return known.surveyed is not None and self._monotonic() - known.surveyed <= LEASE_SURVEY_SECONDS

    def _known_of(self, ws: str, ledger: Ledger) -> Known:
        key = _known_key(ws, ledger)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = Known()
            if len(self._known) > 10_000:  # many customers: forget the oldest half
                for old in list(self._known)[:5_000]:
                    del self._known[old]
        return known

    def _spent(self, ws: str, take: Take) -> None:
        known = self._known_of(ws, take.ledger)
        known.available[take.shard] = known.signed(take.shard) + take.lease - take.hold
        if take.lease:
            base = take.ledger.amount if known.unleased is None else known.unleased
            known.unleased = base - take.lease
        if known.totals:
            spent, held, remaining = known.totals
            known.totals = (spent, held + take.hold, remaining - take.hold)

    def _learn(self, ws: str, ledgers: list[Ledger], rejected: HoldRejected) -> None:
        for ledger in ledgers:
            known = self._known_of(ws, ledger)
            for (ref, shard), available in rejected.short.items():
                if ref == ledger.ref:
                    known.available[shard] = available
            if ledger.ref in rejected.leased:
                known.unleased = ledger.amount - rejected.leased[ledger.ref]


def reservation_key_reused() -> ApiError:
    return ApiError(
        "IDEMPOTENCY_KEY_REUSED",
        "This Idempotency-Key was already used for a reservation of another estimate; use a new key per reservation.",
    )


def _refusal(refused: list[tuple[Ledger, Decimal]]) -> ApiError:
    """Budgets refuse first (``BUDGET_EXCEEDED``); credits alone: ``CREDITS_EXHAUSTED``."""
    budgets = [(ledger, remaining) for ledger, remaining in refused if not ledger.credit]
    if budgets:
        return budget_exceeded(budgets)
    return credits_exhausted(refused[0][1])


def _credit_line(charge: Decimal, remaining: Decimal, *, held: bool = True) -> dict[str, Any]:
    """The answer's ``credits``: the charge held and what the customer's credits have left."""
    return {
        "charge": format_decimal(charge),
        "held": format_decimal(charge if held else ZERO),
        "remaining": format_decimal(remaining),
    }


def _shards(takes: Sequence[Take]) -> dict[str, int]:
    return {take.ledger.ref: take.shard for take in takes}


def _known_key(ws: str, ledger: Ledger) -> tuple[str, str, str]:
    return (ws, ledger.ref, ledger.month)


def _budget_line(ledger: Ledger, spent: Decimal, held: Decimal, remaining: Decimal) -> dict[str, Any]:
    line: dict[str, Any] = {
        "budget_id": ledger.budget_id,
        "name": ledger.name,
        "amount": format_decimal(ledger.amount),
        "spent": format_decimal(spent),
        "held": format_decimal(max(held, ZERO)),
        "remaining": format_decimal(max(remaining, ZERO)),
    }
    if ledger.instance is not None:
        line["instance"] = ledger.instance
    return line
