// Spend control before the call (CONTRACT §10): `tracker.reserve()`, the one SDK call that waits
// for the network, bounded by its timeout; `tracker.release()`; and withReservation(), which
// reserves, runs the call and lets the first event tracked inside settle the hold.

import { performance } from "node:perf_hooks";

import { activeAttributes, closeReservation, reservationContext, type ReservationSlot } from "./context.js";
import { BudgetExceededError } from "./errors.js";
import { prepareReservation, readAnswer, readRefusal, unavailable } from "./reservation-body.js";
import { newReservationKey } from "./reservation-key.js";
import { IDENTIFIER } from "./rules.js";
import { backoffDelay, send, serviceError, type Outcome } from "./transport.js";
import type { OnUnavailable, Reservation, ReserveOptions, TrackerWarning } from "./types.js";

export interface ReservationSettings {
  /** `{baseUrl}/v1/reservations`. */
  readonly url: string;
  /** Authorization and User-Agent. */
  readonly headers: Readonly<Record<string, string>>;
  readonly environment: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly onUnavailable: OnUnavailable;
  readonly warn: (warning: TrackerWarning) => void;
  readonly reportIgnored: (names: readonly string[], idempotencyKey: string) => void;
}

type Attempt = { readonly done: true; readonly value: Outcome } | { readonly done: false; readonly last: Outcome | undefined };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function describe(outcome: Outcome | undefined, timeoutMs: number): string {
  if (outcome === undefined) return `no answer within ${timeoutMs} ms`;
  if (outcome.kind === "failure") return outcome.reason;
  const { code, message } = serviceError(outcome.body, outcome.status);
  return `${code} (HTTP ${outcome.status}): ${message}`;
}

/** The service side of reservations for one tracker. */
export class ReservationClient {
  readonly #settings: ReservationSettings;

  constructor(settings: ReservationSettings) {
    this.#settings = settings;
  }

  /**
   * Sends one request, retrying connection errors, timeouts and 5xx with the same headers while
   * `timeoutMs` lasts. Done: an answer not to retry. Not done: time or retries ran out.
   */
  async #request(method: string, url: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number): Promise<Attempt> {
    const deadline = performance.now() + timeoutMs;
    let last: Outcome | undefined;
    for (let attempt = 0; ; attempt++) {
      const left = deadline - performance.now();
      if (left <= 0) return { done: false, last };
      last = await send(method, url, headers, body, Math.max(1, Math.floor(left)), new AbortController());
      if (last.kind === "response" && last.status < 500) return { done: true, value: last };
      if (attempt >= this.#settings.maxRetries) return { done: false, last };
      const delay = backoffDelay(attempt + 1, last.kind === "response" ? last.retryAfterMs : undefined);
      if (performance.now() + delay >= deadline) return { done: false, last };
      await sleep(delay);
    }
  }

  /** See `Tracker.reserve()`. Rejects only for options that break the rules (EventValidationError). */
  async reserve(options: ReserveOptions): Promise<Reservation> {
    const settings = this.#settings;
    const prepared = prepareReservation(options, settings.environment, activeAttributes());
    if (prepared.error !== undefined) throw prepared.error;
    // One key per reservation, the same on every retry: a retry gets the same reservation back.
    const key = newReservationKey();
    if (prepared.unknownFields.length > 0) settings.reportIgnored(prepared.unknownFields, key);
    const timeoutMs = prepared.timeoutMs ?? settings.timeoutMs;
    const policy = prepared.onUnavailable ?? settings.onUnavailable;
    const headers = { ...settings.headers, "Content-Type": "application/json", "Idempotency-Key": key };
    const attempt = await this.#request("POST", settings.url, headers, prepared.body, timeoutMs);
    const outcome: Outcome | undefined = attempt.done ? attempt.value : attempt.last;
    if (attempt.done && attempt.value.kind === "response") {
      const { status, body } = attempt.value;
      const answer = status === 200 ? readAnswer(body) : status === 429 ? readRefusal(body) : undefined;
      if (answer !== undefined) return answer;
    }
    const warning: TrackerWarning = {
      code: "reservation_unavailable",
      message: `the reservation could not be checked (${describe(outcome, timeoutMs)}); onUnavailable is "${policy}": the call is ${policy === "allow" ? "allowed" : "denied"}`,
      idempotencyKey: key,
    };
    if (outcome?.kind === "response") {
      warning.status = outcome.status;
      warning.response = outcome.body;
    }
    settings.warn(warning);
    return unavailable(policy);
  }

  /** See `Tracker.release()`. */
  async release(reservationId: string, timeoutMs?: number): Promise<boolean> {
    const settings = this.#settings;
    if (typeof reservationId !== "string" || !IDENTIFIER.test(reservationId)) {
      settings.warn({ code: "reservation_release_failed", message: `not a reservation id: ${JSON.stringify(String(reservationId))}` });
      return false;
    }
    const wait = typeof timeoutMs === "number" && timeoutMs > 0 ? timeoutMs : settings.timeoutMs;
    const attempt = await this.#request("DELETE", `${settings.url}/${reservationId}`, { ...settings.headers }, undefined, wait);
    if (attempt.done && attempt.value.kind === "response") {
      if (attempt.value.status === 204 || attempt.value.status === 200) return true;
      if (attempt.value.status === 404) return false; // settled, released or expired already
    }
    const outcome = attempt.done ? attempt.value : attempt.last;
    const warning: TrackerWarning = {
      code: "reservation_release_failed",
      message: `reservation ${reservationId} could not be released (${describe(outcome, wait)}); its hold returns when it expires`,
    };
    if (outcome?.kind === "response") {
      warning.status = outcome.status;
      warning.response = outcome.body;
    }
    settings.warn(warning);
    return false;
  }
}

/** What withReservation() needs of a tracker. */
export interface Reserver {
  reserve(options: ReserveOptions): Promise<Reservation>;
  release(reservationId: string, timeoutMs?: number): Promise<boolean>;
}

/**
 * Reserves, then runs `fn(reservation)` when the call is allowed; throws `BudgetExceededError`
 * (without running `fn`) when it is refused, or when the service could not answer and
 * `onUnavailable` is `"deny"`. The first event tracked inside (by `track()`, a provider helper or
 * an instrumented client) carries the `reservationId` and settles the hold; when `fn` ends or
 * throws before any event did, the hold is released (`DELETE /v1/reservations/{id}`). Returns
 * what `fn` returns.
 *
 * ```ts
 * const answer = await withReservation(tracker, { provider: "openai", model: "gpt-5", customerId: "cus_42",
 *   estimate: { promptTokens: 1200, maxOutputTokens: 800 } }, () => client.chat.completions.create(ask));
 * ```
 */
export async function withReservation<Result>(
  tracker: Reserver,
  options: ReserveOptions,
  fn: (reservation: Reservation) => Result | PromiseLike<Result>,
): Promise<Awaited<Result>> {
  const reservation = await tracker.reserve(options);
  if (!reservation.allowed) throw new BudgetExceededError(reservation);
  const id = reservation.reservationId;
  if (id === null || options.hold === false) return await fn(reservation);
  const slot: ReservationSlot = { id, claimed: false };
  try {
    return await reservationContext(slot, () => fn(reservation));
  } finally {
    closeReservation(slot);
    // No event took the reservation: the call was not made (or failed untracked). Give it back.
    if (!slot.claimed) await tracker.release(id, options.timeoutMs ?? undefined);
  }
}
