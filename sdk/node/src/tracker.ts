import { randomUUID } from "node:crypto";

import { Delivery, MAX_TIMER_MS } from "./delivery.js";
import { activeAttributes, withContext } from "./context.js";
import { ConfigurationError } from "./errors.js";
import { encodeEvent, type EncodedEvent } from "./fast-encode.js";
import type { TrackOptions, TrackerOptions, TrackerStats, TrackerWarning } from "./types.js";
import { checkEvent, codePointLength, suggestField, trim } from "./validation.js";
import { VERSION } from "./version.js";

const DEFAULT_BASE_URL = "http://127.0.0.1:3000";
const DEFAULT_ENVIRONMENT = "production";
const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_MAX_QUEUE_SIZE = 10_000;
const DEFAULT_FLUSH_TIMEOUT_MS = 10_000;
const ENVIRONMENT_MAX = 64;
// Field names are remembered to report each once; a caller generating names dynamically must not
// grow that memory without bound, so past this many names new ones go unreported.
const MAX_REPORTED_FIELDS = 1000;
const REPORT_INTERVAL_MS = 1000;

type Callback<T> = (value: T) => void;

// Calls a user callback; whatever it does (throw, return a rejected promise) stays here.
function safeCall<T>(callback: Callback<T>, value: T): void {
  try {
    const result: unknown = callback(value);
    if (typeof result === "object" && result !== null && typeof (result as PromiseLike<unknown>).then === "function") {
      (result as PromiseLike<unknown>).then(undefined, () => undefined);
    }
  } catch {
    // A throwing callback must not break track() or delivery.
  }
}

function defaultWarning(warning: TrackerWarning): void {
  console.warn(`costtrack: ${warning.code}: ${warning.message}`);
}

function defaultError(error: Error): void {
  console.error(`costtrack: ${error.message}`);
}

/**
 * Reports a burst of drops as at most one warning per interval, carrying how many were dropped.
 * The last partial interval is reported by an unref'd timer.
 */
class RateLimitedReport {
  #count = 0;
  #last = Number.NEGATIVE_INFINITY;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #emit: (count: number) => void;

  constructor(emit: (count: number) => void) {
    this.#emit = emit;
  }

  hit(): void {
    this.#count++;
    if (this.#timer !== undefined) return;
    const now = Date.now();
    const wait = this.#last + REPORT_INTERVAL_MS - now;
    if (wait <= 0) {
      this.#fire(now);
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#fire(Date.now());
    }, wait);
    this.#timer.unref();
  }

  #fire(now: number): void {
    const count = this.#count;
    this.#count = 0;
    this.#last = now;
    if (count > 0) this.#emit(count);
  }
}

// Trackers that withFlush() flushes when it is given none. Weak, so a tracker the application
// dropped can still be collected.
const liveTrackers = new Set<WeakRef<Tracker>>();

/** The trackers created and not shut down (internal: used by withFlush). */
export function activeTrackers(): Tracker[] {
  const trackers: Tracker[] = [];
  for (const ref of liveTrackers) {
    const tracker = ref.deref();
    if (tracker === undefined) liveTrackers.delete(ref);
    else trackers.push(tracker);
  }
  return trackers;
}

interface Settings {
  readonly delivery: Delivery;
  readonly environment: string;
}

// Not a number: the default. Negative: no wait. Huge: what setTimeout can hold.
function normalizeTimeout(timeoutMs: unknown): number {
  if (typeof timeoutMs !== "number" || Number.isNaN(timeoutMs)) return DEFAULT_FLUSH_TIMEOUT_MS;
  return Math.min(Math.max(timeoutMs, 0), MAX_TIMER_MS);
}

/**
 * Sends one usage event per model call to costtrack, in the background.
 *
 * `track()` never throws and never blocks. Problems go to callbacks: validation and configuration
 * errors to `onError`, delivery failures and service warnings to `onWarning`.
 */
export class Tracker {
  // Undefined when disabled or misconfigured: every method is then a no-op.
  readonly #settings: Settings | undefined;
  readonly #onError: Callback<Error>;
  readonly #onWarning: Callback<TrackerWarning>;
  readonly #reportedFields = new Set<string>();
  readonly #queueFull: RateLimitedReport;
  readonly #afterShutdown: RateLimitedReport;
  readonly #ref: WeakRef<Tracker>;
  #dropped = 0;
  #shutdown: Promise<boolean> | undefined;

  constructor(options: TrackerOptions = {}) {
    // Bound so `const { track } = tracker` works too.
    this.track = this.track.bind(this);
    this.flush = this.flush.bind(this);
    this.shutdown = this.shutdown.bind(this);
    this.stats = this.stats.bind(this);
    this.#ref = new WeakRef(this);

    let onError: Callback<Error> = defaultError;
    let onWarning: Callback<TrackerWarning> = defaultWarning;
    let settings: Settings | undefined;
    try {
      const opts: TrackerOptions = typeof options === "object" && options !== null ? options : {};
      if (opts.enabled !== false) {
        if (typeof opts.onError === "function") onError = opts.onError;
        if (typeof opts.onWarning === "function") onWarning = opts.onWarning;
        settings = this.#configure(opts, (message) => safeCall(onError, new ConfigurationError(message)));
      }
    } catch (err) {
      // Options whose getters throw: report and stay a no-op rather than throw from a constructor.
      const reason = err instanceof Error ? err.message : String(err);
      safeCall(onError, new ConfigurationError(`costtrack options could not be read (${reason}); tracking is off`));
      settings = undefined;
    }
    this.#onError = onError;
    this.#onWarning = onWarning;
    this.#settings = settings;
    this.#queueFull = new RateLimitedReport((count) =>
      this.#warn({
        code: "queue_full",
        message: `the event queue is full; dropped ${count} event${count === 1 ? "" : "s"} (maxQueueSize)`,
        count,
      }),
    );
    this.#afterShutdown = new RateLimitedReport((count) =>
      this.#warn({
        code: "after_shutdown",
        message: `track() called after shutdown(); dropped ${count} event${count === 1 ? "" : "s"}`,
        count,
      }),
    );
    if (settings !== undefined) liveTrackers.add(this.#ref);
  }

  #configure(opts: TrackerOptions, fail: (message: string) => void): Settings | undefined {
    const apiKey = opts.apiKey;
    if (typeof apiKey !== "string" || trim(apiKey) === "") {
      fail("apiKey is required (the ingestion key, usually read from an environment variable); tracking is off");
      return undefined;
    }
    if (typeof fetch !== "function") {
      fail("global fetch is not available (Node 18 or later is required); tracking is off");
      return undefined;
    }

    const envBaseUrl = process.env["COSTTRACK_BASE_URL"];
    const rawBaseUrl = opts.baseUrl ?? (envBaseUrl !== undefined && envBaseUrl !== "" ? envBaseUrl : DEFAULT_BASE_URL);
    let url: string;
    try {
      if (typeof rawBaseUrl !== "string") throw new TypeError("not a string");
      const base = trim(rawBaseUrl).replace(/\/+$/, "");
      const parsed = new URL(base + "/v1/events");
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new TypeError("not http(s)");
      url = parsed.toString();
    } catch {
      fail(`baseUrl must be an http(s) URL (got ${JSON.stringify(String(rawBaseUrl))}); tracking is off`);
      return undefined;
    }

    let environment = DEFAULT_ENVIRONMENT;
    if (opts.environment !== undefined && opts.environment !== null) {
      const text = typeof opts.environment === "string" ? trim(opts.environment) : undefined;
      if (text === undefined || codePointLength(text) > ENVIRONMENT_MAX) {
        fail(`environment must be a string of at most ${ENVIRONMENT_MAX} characters; using "${DEFAULT_ENVIRONMENT}"`);
      } else if (text !== "") {
        environment = text;
      }
    }

    // A bad environment or numeric option is reported and its default used, since losing every
    // event over it would be worse.
    const number = (name: string, value: unknown, fallback: number, min: number, integer: boolean): number => {
      if (value === undefined || value === null) return fallback;
      if (typeof value === "number" && value >= min && (integer ? Number.isSafeInteger(value) : Number.isFinite(value))) {
        return Math.min(value, MAX_TIMER_MS);
      }
      fail(`${name} must be ${integer ? "an integer" : "a number"} >= ${min} (got ${String(value)}); using ${fallback}`);
      return fallback;
    };
    const timeoutMs = number("timeoutMs", opts.timeoutMs, DEFAULT_TIMEOUT_MS, 1, false);
    const maxRetries = number("maxRetries", opts.maxRetries, DEFAULT_MAX_RETRIES, 0, true);
    const maxQueueSize = number("maxQueueSize", opts.maxQueueSize, DEFAULT_MAX_QUEUE_SIZE, 1, true);

    const delivery = new Delivery({
      url,
      headers: {
        Authorization: `Bearer ${trim(apiKey)}`,
        "Content-Type": "application/json",
        "User-Agent": `costtrack-node/${VERSION}`,
      },
      timeoutMs,
      maxRetries,
      maxQueueSize,
      warn: (warning) => this.#warn(warning),
    });
    return { delivery, environment };
  }

  /**
   * Record one model call. Inside `withAttributes()`, its fields are the defaults of the event's
   * (the event's own win). Returns at once: validates, assigns the idempotency key and queues
   * the event; delivery happens in the background. Never throws.
   */
  track(options: TrackOptions): void {
    const settings = this.#settings;
    if (settings === undefined) return;
    try {
      if (this.#shutdown !== undefined) {
        this.#dropped++;
        this.#afterShutdown.hit();
        return;
      }
      // Inside withAttributes(): its fields are the defaults of the event's.
      const context = activeAttributes();
      if (context !== undefined) options = withContext(options, context);
      // The common plain, valid event in one pass; anything else, errors included, through the
      // full check, which reports exactly what is wrong.
      let event: EncodedEvent | undefined = encodeEvent(options, settings.environment);
      if (event === undefined) {
        const checked = checkEvent(options, settings.environment);
        if (checked.error !== undefined) {
          this.#reportIgnored(checked.unknownFields, undefined);
          safeCall(this.#onError, checked.error);
          return;
        }
        event = checked;
      }
      // One key per event, created now and sent unchanged on every retry.
      const key = randomUUID();
      if (event.unknownFields.length > 0) this.#reportIgnored(event.unknownFields, key);
      if (!settings.delivery.enqueue(key, event.body)) {
        this.#dropped++;
        this.#queueFull.hit();
      }
    } catch (err) {
      // Nothing above is expected to throw; if it does, it is a bug to report, not to raise.
      safeCall(this.#onError, err instanceof Error ? err : new Error(String(err)));
    }
  }

  /**
   * Wait until every event queued before this call is delivered or has finally failed.
   * Resolves `true` then, or `false` when `timeoutMs` (default 10000) passes first; never
   * rejects. At the deadline, requests in flight are aborted and their events wait again, with
   * the same idempotency keys, to be sent in the background.
   */
  flush(timeoutMs?: number): Promise<boolean> {
    const settings = this.#settings;
    if (settings === undefined) return Promise.resolve(true);
    try {
      return settings.delivery.flush(normalizeTimeout(timeoutMs), true);
    } catch {
      return Promise.resolve(false);
    }
  }

  /**
   * Stop accepting events, deliver what is queued, and stop. Resolves like `flush()`; at the
   * deadline (default 10000 ms) requests in flight are aborted, the rest is dropped, and one
   * `after_shutdown` warning tells how many events were lost. Never rejects; calling it again
   * returns the same promise.
   */
  shutdown(timeoutMs?: number): Promise<boolean> {
    const settings = this.#settings;
    if (settings === undefined) return Promise.resolve(true);
    if (this.#shutdown !== undefined) return this.#shutdown;
    liveTrackers.delete(this.#ref);
    const { delivery } = settings;
    const finish = (done: boolean): boolean => {
      const undelivered = delivery.stop();
      if (undelivered > 0) {
        this.#dropped += undelivered;
        this.#warn({
          code: "after_shutdown",
          message: `shutdown deadline passed; dropped ${undelivered} undelivered event${undelivered === 1 ? "" : "s"}`,
          count: undelivered,
        });
      }
      return done;
    };
    try {
      // No requeue at the deadline: stop() aborts everything right after.
      this.#shutdown = delivery.flush(normalizeTimeout(timeoutMs), false).then(finish, () => finish(false));
    } catch {
      this.#shutdown = Promise.resolve(finish(false));
    }
    return this.#shutdown;
  }

  /** Counters since creation; all zero when the tracker is disabled. */
  stats(): TrackerStats {
    const counters = this.#settings?.delivery.counters;
    return {
      queued: this.#settings?.delivery.size ?? 0,
      sent: counters?.sent ?? 0,
      retried: counters?.retried ?? 0,
      dropped: this.#dropped,
      failed: counters?.failed ?? 0,
    };
  }

  #warn(warning: TrackerWarning): void {
    safeCall(this.#onWarning, warning);
  }

  #reportIgnored(names: readonly string[], idempotencyKey: string | undefined): void {
    for (const name of names) {
      if (this.#reportedFields.has(name) || this.#reportedFields.size >= MAX_REPORTED_FIELDS) continue;
      this.#reportedFields.add(name);
      const shown = JSON.stringify(name.length > 100 ? name.slice(0, 100) + "…" : name);
      const suggestion = suggestField(name);
      const message =
        suggestion === undefined
          ? `${shown} is not a costtrack event field and was ignored`
          : `${shown} is not a costtrack event field and was ignored; did you mean ${JSON.stringify(suggestion)}? (Node takes camelCase names)`;
      const warning: TrackerWarning = { code: "ignored_field", message };
      if (idempotencyKey !== undefined) warning.idempotencyKey = idempotencyKey;
      this.#warn(warning);
    }
  }
}
