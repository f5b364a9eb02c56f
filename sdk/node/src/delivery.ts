// Background delivery: a bounded queue, up to MAX_IN_FLIGHT requests at once, retries with
// backoff, and bounded flushing. One event per request (the endpoint takes one event).
//
// Lifetime rules, so the SDK never keeps a process alive on its own:
// - the per-request timeout and the retry backoff timers are unref'd;
// - while the service is failing (an event waits for a retry, or the last answer was a network
//   error, timeout or 5xx), queued events don't start on their own: one "probe" event is sent
//   from an unref'd timer once nothing else is under way, and a good answer resumes normal
//   sending. So a failing service is not hammered, and a backlog of timeouts cannot keep the
//   process alive: at most the attempts already under way do (each bounded by timeoutMs);
// - only the flush/shutdown deadline timer is ref'd: the caller is awaiting that bounded wait,
//   and an unref'd one could let the process end with the caller's promise never settled.

import type { TrackerWarning } from "./types.js";

export const MAX_IN_FLIGHT = 4;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 8000;
const RETRY_AFTER_CAP_MS = 30_000;
// setTimeout treats anything above 2^31-1 ms as 1 ms.
export const MAX_TIMER_MS = 2_147_483_647;
const MAX_RESPONSE_TEXT = 2000;
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

interface Item {
  readonly key: string;
  readonly body: string;
  /** Order of arrival, so a flush waits exactly for the events queued before it. */
  readonly seq: number;
  attempts: number;
}

interface Waiter {
  readonly lastSeq: number;
  remaining: number;
  readonly settle: (done: boolean) => void;
}

type Outcome =
  | { readonly kind: "response"; readonly status: number; readonly body: unknown; readonly retryAfterMs: number | undefined }
  | { readonly kind: "failure"; readonly reason: string };

/** Delay before retry `n` (1-based): full jitter over an exponential cap, `Retry-After` as a capped floor. */
export function backoffDelay(n: number, retryAfterMs: number | undefined): number {
  const jitter = Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (n - 1));
  return retryAfterMs === undefined ? jitter : Math.max(jitter, Math.min(retryAfterMs, RETRY_AFTER_CAP_MS));
}

/** `Retry-After` as delay-seconds or an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text.length > MAX_RESPONSE_TEXT ? text.slice(0, MAX_RESPONSE_TEXT) : text;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describeFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // fetch() wraps socket errors: TypeError("fetch failed") with the real one as `cause`.
  const cause: unknown = (err as { cause?: unknown }).cause;
  if (isRecord(cause)) {
    const detail = typeof cause["code"] === "string" ? cause["code"] : cause["message"];
    if (typeof detail === "string" && detail !== "") return `${err.message} (${detail})`;
  }
  return err.message;
}

function serviceError(body: unknown, status: number): { code: string; message: string } {
  const error = isRecord(body) ? body["error"] : undefined;
  const code = isRecord(error) && typeof error["code"] === "string" && error["code"] !== "" ? error["code"] : `HTTP_${status}`;
  const message =
    isRecord(error) && typeof error["message"] === "string" && error["message"] !== ""
      ? error["message"]
      : `the service rejected the event (HTTP ${status})`;
  return { code, message };
}

export class Delivery {
  readonly counters = { sent: 0, retried: 0, failed: 0 };

  readonly #options: DeliveryOptions;
  // A FIFO with a moving head: Array#shift is O(n) on a long backlog.
  #pending: (Item | undefined)[] = [];
  #head = 0;
  readonly #inFlight = new Map<Item, AbortController>();
  readonly #waiting = new Map<Item, ReturnType<typeof setTimeout>>();
  readonly #waiters = new Set<Waiter>();
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
    return this.#pending.length - this.#head + this.#inFlight.size + this.#waiting.size;
  }

  /** False when the queue is full or delivery has stopped: the caller drops the event. */
  enqueue(key: string, body: string): boolean {
    if (this.#stopped || this.size >= this.#options.maxQueueSize) return false;
    this.#pending.push({ key, body, seq: ++this.#seq, attempts: 0 });
    if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      // Next turn of the event loop, so track() returns before any request work starts. Ref'd
      // on purpose: a short script's events get their first attempt before it exits.
      setImmediate(this.#pump);
    }
    return true;
  }

  /**
   * Resolves true once every event queued before the call is delivered or finally failed,
   * false at the deadline. Never rejects. With `requeue`, requests still in flight at the
   * deadline are aborted and their events wait again in their place, with the same keys (the
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
    this.#pending = [];
    this.#head = 0;
    for (const waiter of [...this.#waiters]) waiter.settle(false);
    return undelivered;
  }

  #requeueInFlight(): void {
    if (this.#stopped || this.#inFlight.size === 0) return;
    // Youngest first, so the oldest ends up at the very front.
    const items = [...this.#inFlight.keys()].sort((a, b) => b.seq - a.seq);
    for (const item of items) {
      this.#inFlight.get(item)?.abort();
      this.#inFlight.delete(item);
      item.attempts--;
      this.#pushFront(item);
    }
    this.#pump();
  }

  readonly #pump = (probe = false): void => {
    this.#pumpScheduled = false;
    while (this.#inFlight.size < MAX_IN_FLIGHT && this.#head < this.#pending.length) {
      const item = this.#pending[this.#head];
      if (item === undefined) break;
      // Retries sit at the front and always go; first attempts wait while the service is failing.
      if (item.attempts === 0 && (this.#failing || this.#waiting.size > 0)) {
        if (!probe) {
          this.#scheduleProbe();
          break;
        }
        probe = false;
      }
      this.#pending[this.#head++] = undefined;
      void this.#send(item);
    }
    if (this.#head === this.#pending.length) {
      this.#pending = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#head);
      this.#head = 0;
    }
  };

  async #send(item: Item): Promise<void> {
    const controller = new AbortController();
    this.#inFlight.set(item, controller);
    item.attempts++;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#options.timeoutMs);
    timer.unref();

    let outcome: Outcome;
    try {
      // Node's fetch keeps connections alive by default (undici pools them per origin), and
      // lets idle pooled sockets not hold the process open.
      const response = await fetch(this.#options.url, {
        method: "POST",
        headers: { ...this.#options.headers, "Idempotency-Key": item.key },
        body: item.body,
        signal: controller.signal,
        // A redirect would turn the POST into a GET elsewhere; report it instead.
        redirect: "manual",
      });
      // Read the body under the same timeout: it carries the warnings, and reading it
      // releases the connection back to the pool.
      const text = await response.text();
      outcome = {
        kind: "response",
        status: response.status,
        body: parseBody(text),
        retryAfterMs: parseRetryAfter(response.headers.get("retry-after")),
      };
    } catch (err) {
      outcome = { kind: "failure", reason: timedOut ? `no response within ${this.#options.timeoutMs} ms` : describeFailure(err) };
    } finally {
      clearTimeout(timer);
    }
    // Aborted by stop() (already counted as undelivered) or requeued at a flush deadline (the
    // event waits again, possibly already in a new attempt): nothing more to do here.
    if (this.#inFlight.get(item) !== controller) return;
    this.#inFlight.delete(item);
    try {
      this.#handle(item, outcome);
    } catch {
      // #handle only calls wrapped callbacks; this guard keeps a bug from becoming an
      // unhandled rejection in the user's process.
    }
    this.#pump();
  }

  #handle(item: Item, outcome: Outcome): void {
    if (outcome.kind === "response" && outcome.status < 500) {
      this.#failing = false;
      const { status, body } = outcome;
      if (status >= 200 && status < 300) {
        this.counters.sent++;
        const warnings = isRecord(body) && Array.isArray(body["warnings"]) ? (body["warnings"] as unknown[]) : [];
        for (const w of warnings) {
          if (!isRecord(w) || typeof w["code"] !== "string") continue;
          const message = typeof w["message"] === "string" ? w["message"] : w["code"];
          this.#options.warn({ code: w["code"], message, idempotencyKey: item.key, status, response: body });
        }
      } else {
        // 4xx (and anything else below 500): the answer would be the same next time.
        this.counters.failed++;
        const { code, message } = serviceError(body, status);
        this.#options.warn({ code, message, idempotencyKey: item.key, status, response: body });
      }
      this.#settle(item);
      return;
    }

    // Network error, timeout or 5xx: retry while attempts remain.
    this.#failing = true;
    if (item.attempts <= this.#options.maxRetries) {
      this.counters.retried++;
      const retryAfter = outcome.kind === "response" ? outcome.retryAfterMs : undefined;
      const timer = setTimeout(() => {
        this.#waiting.delete(item);
        this.#pushFront(item);
        this.#pump();
      }, backoffDelay(item.attempts, retryAfter));
      timer.unref();
      this.#waiting.set(item, timer);
      return;
    }

    this.counters.failed++;
    const attempts = `${item.attempts} attempt${item.attempts === 1 ? "" : "s"}`;
    if (outcome.kind === "response") {
      this.#options.warn({
        code: "NETWORK_ERROR",
        message: `the event could not be delivered after ${attempts}: HTTP ${outcome.status}`,
        idempotencyKey: item.key,
        status: outcome.status,
        response: outcome.body,
      });
    } else {
      this.#options.warn({
        code: "NETWORK_ERROR",
        message: `the event could not be delivered after ${attempts}: ${outcome.reason}`,
        idempotencyKey: item.key,
      });
    }
    this.#settle(item);
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

  #pushFront(item: Item): void {
    if (this.#head > 0) this.#pending[--this.#head] = item;
    else this.#pending.unshift(item);
  }

  #settle(item: Item): void {
    for (const waiter of this.#waiters) {
      if (item.seq <= waiter.lastSeq && --waiter.remaining === 0) waiter.settle(true);
    }
  }
}
