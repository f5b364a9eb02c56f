// Background delivery: a bounded queue sent as batches (docs/api-rules.md#batches), up to MAX_IN_FLIGHT
// requests at once, retries with backoff, and bounded flushing.
//
// Batching never waits to fill a batch: the queue is drained on the next turn of the event
// loop, so a lone event goes at once as a batch of one, and what queues up while requests are
// in flight goes in the next batch. A batch is retried as a whole, with the same keys: what a
// failed attempt committed comes back as replays.
//
// Lifetime rules, so the SDK never keeps a process alive on its own:
// - the per-request timeout and the retry backoff timers are unref'd;
// - while the service is failing (a batch waits for a retry, or the last answer was a network
//   error, timeout or 5xx), queued events don't start on their own: one "probe" batch is sent
//   from an unref'd timer once nothing else is under way, and a good answer resumes normal
//   sending. So a failing service is not hammered, and a backlog of timeouts cannot keep the
//   process alive: at most the attempts already under way do (each bounded by timeoutMs);
// - only the flush/shutdown deadline timer is ref'd: the caller is awaiting that bounded wait,
//   and an unref'd one could let the process end with the caller's promise never settled.

import { type Batch, EventQueue, readResults, singleBody } from "./batch.js";
import { backoffDelay, isRecord, type Outcome, post, serviceError } from "./transport.js";
import type { TrackerWarning } from "./types.js";

export const MAX_IN_FLIGHT = 4;
// setTimeout treats anything above 2^31-1 ms as 1 ms.
export const MAX_TIMER_MS = 2_147_483_647;
const PROBE_DELAY_MS = 1000;

export interface DeliveryOptions {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly maxQueueSize: number;
  /** Must not throw (the tracker wraps the user's callback). */
  readonly warn: (warning: TrackerWarning) => void;
}

interface Waiter {
  readonly lastSeq: number;
  remaining: number;
  readonly settle: (done: boolean) => void;
}

/** Why an attempt failed in a way worth retrying, as the final NETWORK_ERROR will tell it. */
interface Failure {
  readonly reason: string;
  readonly status?: number;
  readonly body?: unknown;
  readonly retryAfterMs?: number | undefined;
}

// What a callback sees as `response`: the single-event body, also for a result in a batch.
function shownBody(body: unknown, perEvent: boolean): unknown {
  return perEvent && isRecord(body) ? singleBody(body) : body;
}

export class Delivery {
  /** Per event, not per request. */
  readonly counters = { sent: 0, retried: 0, failed: 0 };

  readonly #options: DeliveryOptions;
  readonly #queue = new EventQueue();
  // Batches due for another attempt (retries, and batches requeued at a flush deadline), oldest
  // first. They go before the queue: their events are older.
  #ready: Batch[] = [];
  readonly #inFlight = new Map<Batch, AbortController>();
  readonly #waiting = new Map<Batch, ReturnType<typeof setTimeout>>();
  readonly #waiters = new Set<Waiter>();
  // Events held in #ready, #inFlight and #waiting, so `size` stays O(1) for track().
  #batched = 0;
  #seq = 0;
  #pumpScheduled = false;
  #stopped = false;
  #failing = false;
  #probeTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: DeliveryOptions) {
    this.#options = options;
  }

  /** Events accepted and not yet delivered or given up: queued, in flight or waiting to retry. */
  get size(): number {
    return this.#queue.length + this.#batched;
  }

  /** Queues an event's batch item (batchItem()). False when the queue is full or delivery has stopped: the caller drops the event. */
  enqueue(key: string, item: string): boolean {
    if (this.#stopped || this.size >= this.#options.maxQueueSize) return false;
    this.#queue.push({ key, item, seq: ++this.#seq });
    if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      // Next turn of the event loop, so track() returns before any request work starts, and
      // the events tracked in this turn go together. Ref'd on purpose: a short script's events
      // get their first attempt before it exits.
      setImmediate(this.#pump);
    }
    return true;
  }

  /**
   * Resolves true once every event queued before the call is delivered or finally failed,
   * false at the deadline. Never rejects. With `requeue`, requests still in flight at the
   * deadline are aborted and their batches wait again in their place, with the same keys (the
   * aborted attempt does not count): in AWS Lambda, which freezes the process once the handler
   * returns, no request is left hanging mid-flight.
   */
  flush(timeoutMs: number, requeue: boolean): Promise<boolean> {
    const remaining = this.size;
    if (remaining === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        lastSeq: this.#seq,
        remaining,
        settle: (done) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(done);
        },
      };
      // Ref'd: see the lifetime rules at the top of this file.
      const timer = setTimeout(() => {
        if (requeue) this.#requeueInFlight();
        waiter.settle(false);
      }, Math.min(timeoutMs, MAX_TIMER_MS));
      this.#waiters.add(waiter);
    });
  }

  /** Stops for good: aborts requests in flight, cancels retries, drops the queue. Returns how many events were undelivered. */
  stop(): number {
    if (this.#stopped) return 0;
    this.#stopped = true;
    const undelivered = this.size;
    for (const controller of this.#inFlight.values()) controller.abort();
    for (const timer of this.#waiting.values()) clearTimeout(timer);
    clearTimeout(this.#probeTimer);
    this.#inFlight.clear();
    this.#waiting.clear();
    this.#ready = [];
    this.#queue.clear();
    this.#batched = 0;
    for (const waiter of [...this.#waiters]) waiter.settle(false);
    return undelivered;
  }

  #requeueInFlight(): void {
    if (this.#stopped || this.#inFlight.size === 0) return;
    for (const [batch, controller] of this.#inFlight) {
      controller.abort();
      batch.attempts--;
      this.#makeReady(batch);
    }
    this.#inFlight.clear();
    this.#pump();
  }

  readonly #pump = (probe = false): void => {
    this.#pumpScheduled = false;
    while (this.#inFlight.size < MAX_IN_FLIGHT) {
      const due = this.#ready[0];
      if (due === undefined && this.#queue.length === 0) break;
      // Retries always go; first attempts wait while the service is failing, but for one probe.
      if ((due === undefined || due.attempts === 0) && (this.#failing || this.#waiting.size > 0)) {
        if (!probe) {
          this.#scheduleProbe();
          break;
        }
        probe = false;
      }
      let batch: Batch;
      if (due !== undefined) {
        this.#ready.shift();
        batch = due;
      } else {
        batch = this.#queue.takeBatch();
        this.#batched += batch.events.length;
      }
      void this.#send(batch);
    }
  };

  async #send(batch: Batch): Promise<void> {
    const controller = new AbortController();
    this.#inFlight.set(batch, controller);
    batch.attempts++;
    const { url, headers, timeoutMs } = this.#options;
    const outcome = await post(url, headers, batch.body, timeoutMs, controller);
    // Aborted by stop() (already counted as undelivered) or requeued at a flush deadline (the
    // batch waits again, possibly already in a new attempt): nothing more to do here.
    if (this.#inFlight.get(batch) !== controller) return;
    this.#inFlight.delete(batch);
    try {
      this.#handle(batch, outcome);
    } catch {
      // #handle only calls wrapped callbacks; this guard keeps a bug from becoming an
      // unhandled rejection in the user's process.
    }
    this.#pump();
  }

  #handle(batch: Batch, outcome: Outcome): void {
    if (outcome.kind === "failure") {
      this.#retryOrGiveUp(batch, { reason: outcome.reason });
      return;
    }
    const { status, body } = outcome;
    if (status >= 500) {
      this.#retryOrGiveUp(batch, { reason: `HTTP ${status}`, status, body, retryAfterMs: outcome.retryAfterMs });
      return;
    }
    if (status >= 200 && status < 300) {
      const results = readResults(body, batch.events.length);
      if (results === undefined) {
        this.#retryOrGiveUp(batch, { reason: `HTTP ${status} without one result per event`, status, body });
        return;
      }
      this.#failing = false;
      const { events } = batch;
      for (let i = 0; i < events.length; i++) {
        const event = events[i];
        const result = results[i];
        if (event !== undefined && result !== undefined) this.#report(event.key, result.status, result.body, true);
      }
    } else {
      // A request-level answer (401, 400/413, 403, a redirect, ...) is every event's answer.
      this.#failing = false;
      for (const event of batch.events) this.#report(event.key, status, body, false);
    }
    this.#settle(batch);
  }

  /**
   * One event's final answer (below 500), reported exactly as for a single-event request.
   * `perEvent`: `body` is the event's result in a batch answer, not the whole answer.
   */
  #report(key: string, status: number, body: unknown, perEvent: boolean): void {
    if (status >= 200 && status < 300) {
      this.counters.sent++;
      const warnings = isRecord(body) && Array.isArray(body["warnings"]) ? (body["warnings"] as unknown[]) : [];
      if (warnings.length === 0) return;
      const shown = shownBody(body, perEvent);
      for (const w of warnings) {
        if (!isRecord(w) || typeof w["code"] !== "string") continue;
        const message = typeof w["message"] === "string" ? w["message"] : w["code"];
        this.#options.warn({ code: w["code"], message, idempotencyKey: key, status, response: shown });
      }
      return;
    }
    // 4xx (and anything else below 500): the answer would be the same next time.
    this.counters.failed++;
    const { code, message } = serviceError(body, status);
    this.#options.warn({ code, message, idempotencyKey: key, status, response: shownBody(body, perEvent) });
  }

  // Network error, timeout, 5xx or an unreadable 2xx: retry the whole batch while attempts
  // remain, else give every event up with one NETWORK_ERROR each.
  #retryOrGiveUp(batch: Batch, failure: Failure): void {
    this.#failing = true;
    const count = batch.events.length;
    if (batch.attempts <= this.#options.maxRetries) {
      this.counters.retried += count;
      const timer = setTimeout(() => {
        this.#waiting.delete(batch);
        this.#makeReady(batch);
        this.#pump();
      }, backoffDelay(batch.attempts, failure.retryAfterMs));
      timer.unref();
      this.#waiting.set(batch, timer);
      return;
    }

    this.counters.failed += count;
    const attempts = `${batch.attempts} attempt${batch.attempts === 1 ? "" : "s"}`;
    const message = `the event could not be delivered after ${attempts}: ${failure.reason}`;
    for (const event of batch.events) {
      const warning: TrackerWarning = { code: "NETWORK_ERROR", message, idempotencyKey: event.key };
      if (failure.status !== undefined) {
        warning.status = failure.status;
        warning.response = failure.body;
      }
      this.#options.warn(warning);
    }
    this.#settle(batch);
  }

  // Only when nothing under way will call #pump again.
  #scheduleProbe(): void {
    if (this.#probeTimer !== undefined || this.#inFlight.size > 0 || this.#waiting.size > 0 || this.#stopped) return;
    this.#probeTimer = setTimeout(() => {
      this.#probeTimer = undefined;
      this.#pump(true);
    }, PROBE_DELAY_MS);
    this.#probeTimer.unref();
  }

  // In order of the batches' oldest events, so the oldest is always sent first.
  #makeReady(batch: Batch): void {
    const first = batch.events[0]?.seq ?? 0;
    let i = this.#ready.length;
    while (i > 0 && (this.#ready[i - 1]?.events[0]?.seq ?? 0) > first) i--;
    this.#ready.splice(i, 0, batch);
  }

  #settle(batch: Batch): void {
    this.#batched -= batch.events.length;
    for (const waiter of this.#waiters) {
      let count = 0;
      for (const event of batch.events) if (event.seq <= waiter.lastSeq) count++;
      if (count > 0 && (waiter.remaining -= count) <= 0) waiter.settle(true);
    }
  }
}
