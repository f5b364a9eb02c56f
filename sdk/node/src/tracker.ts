import { randomUUID } from "node:crypto";

import { batchItem } from "./batch.js";
import { Delivery, MAX_TIMER_MS } from "./delivery.js";
import { activeAttributes, unclaimReservation, withContext } from "./context.js";
import { ConfigurationError } from "./errors.js";
import { WARN } from "./instrument-call.js";
import { encodeEvent, type EncodedEvent } from "./fast-encode.js";
import { ReservationClient } from "./reservations.js";
import { defaultError, defaultWarning, RateLimitedReport, safeCall, type Callback } from "./reporting.js";
import { trackRun, type Run, type RunOptions } from "./runs.js";
import type { OnUnavailable, Reservation, ReserveOptions, TrackOptions, TrackerOptions, TrackerStats, TrackerWarning } from "./types.js";
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
  readonly reservations: ReservationClient;
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
  // Off (enabled: false): reserve() allows. Misconfigured: it follows onUnavailable.
  readonly #enabled: boolean;
  readonly #onUnavailable: OnUnavailable;
  #dropped = 0;
  #shutdown: Promise<boolean> | undefined;

  constructor(options: TrackerOptions = {}) {
    // Bound so `const { track } = tracker` works too.
    this.track = this.track.bind(this);
    this.flush = this.flush.bind(this);
    this.shutdown = this.shutdown.bind(this);
    this.stats = this.stats.bind(this);
    this.reserve = this.reserve.bind(this);
    this.release = this.release.bind(this);
    this.run = this.run.bind(this);
    this.#ref = new WeakRef(this);

    let onError: Callback<Error> = defaultError;
    let onWarning: Callback<TrackerWarning> = defaultWarning;
    let settings: Settings | undefined;
    let enabled = true;
    let onUnavailable: OnUnavailable = "allow";
    try {
      const opts: TrackerOptions = typeof options === "object" && options !== null ? options : {};
      enabled = opts.enabled !== false;
      if (enabled) {
        if (opts.onUnavailable === "deny") onUnavailable = "deny";
        else if (opts.onUnavailable !== undefined && opts.onUnavailable !== null && opts.onUnavailable !== "allow") {
          safeCall(onError, new ConfigurationError(`onUnavailable must be "allow" or "deny" (got ${JSON.stringify(String(opts.onUnavailable))}); using "allow"`));
        }
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
    this.#enabled = enabled;
    this.#onUnavailable = onUnavailable;
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
    const reservations = new ReservationClient({
      url: url.replace(/\/v1\/events$/, "/v1/reservations"),
      headers: { Authorization: `Bearer ${trim(apiKey)}`, "User-Agent": `costtrack-node/${VERSION}` },
      environment,
      timeoutMs,
      maxRetries,
      onUnavailable: opts.onUnavailable === "deny" ? "deny" : "allow",
      warn: (warning) => this.#warn(warning),
      reportIgnored: (names, key) => this.#reportIgnored(names, key),
    });
    return { delivery, environment, reservations };
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
        unclaimReservation(options);
        this.#dropped++;
        this.#afterShutdown.hit();
        return;
      }
      // Inside withAttributes(): its fields are the defaults of the event's.
      const context = activeAttributes();
      if (context !== undefined) options = withContext(options, context);
      // One key per event, created now and sent unchanged on every retry.
      const key = randomUUID();
      // The common plain, valid event in one pass, written as its batch item; anything else,
      // errors included, through the full check, which reports exactly what is wrong.
      let event: EncodedEvent | undefined = encodeEvent(options, settings.environment, key);
      if (event === undefined) {
        const checked = checkEvent(options, settings.environment);
        if (checked.error !== undefined) {
          unclaimReservation(options); // never sent: withReservation() releases it
          this.#reportIgnored(checked.unknownFields, undefined);
          safeCall(this.#onError, checked.error);
          return;
        }
        event = { body: batchItem(key, checked.body), unknownFields: checked.unknownFields };
      }
      if (event.unknownFields.length > 0) this.#reportIgnored(event.unknownFields, key);
      if (!settings.delivery.enqueue(key, event.body)) {
        unclaimReservation(options);
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

  /**
   * Asks the service whether a call may be made, before making it, and holds its estimated cost
   * against every enforced budget that applies (CONTRACT §10). The one call of the SDK that waits
   * for the network: at most `timeoutMs` (default: the tracker's), retries included, with one
   * `Idempotency-Key` for all of them. When the service cannot answer, `onUnavailable` decides
   * (`"allow"` by default) and a `reservation_unavailable` warning says so. Rejects only with an
   * `EventValidationError` for options that break the rules (a number as `estimate.amount`, an
   * unknown estimate name); an event with `reservationId` settles it, `release()` gives it back.
   */
  reserve(options: ReserveOptions): Promise<Reservation> {
    const settings = this.#settings;
    if (settings !== undefined) return settings.reservations.reserve(options);
    const allowed: Reservation = { allowed: true, reservationId: null, held: "0", currency: null, expiresAt: null, budgets: [] };
    if (this.#enabled) {
      // Misconfigured (onError said why): as if the service could not be reached.
      let policy = this.#onUnavailable;
      try {
        if (options.onUnavailable === "allow" || options.onUnavailable === "deny") policy = options.onUnavailable;
      } catch {
        // options whose getters throw: the tracker's policy
      }
      return Promise.resolve({ ...allowed, allowed: policy === "allow", unavailable: true, ...(policy === "deny" ? { refusedBy: [] } : {}) });
    }
    return Promise.resolve(allowed);
  }

  /**
   * Releases a reservation's hold early, when the call was not made (`DELETE
   * /v1/reservations/{id}`). Resolves `true` when released, `false` when it was settled, released
   * or expired already, or could not be reached in `timeoutMs` (then with a
   * `reservation_release_failed` warning; the hold returns when it expires). Never rejects.
   */
  release(reservationId: string, timeoutMs?: number): Promise<boolean> {
    const settings = this.#settings;
    if (settings === undefined) return Promise.resolve(false);
    return settings.reservations.release(reservationId, timeoutMs).catch(() => false);
  }

  /**
   * Runs `fn(run)` as one run (CONTRACT §11): a new trace id (32 lowercase hex digits) and
   * `runName` go to every event tracked inside, and when `fn` ends the run's marker event is
   * tracked with its status (`success`, or `error`/`cancelled`/`timeout` from what `fn` threw) and
   * latency. `run.step(name, fn)` sets the `parentId` of the calls inside it. Resolves to what
   * `fn` returns and rejects with what it throws.
   */
  run<Result>(runName: string, fn: (run: Run) => Result): Promise<Awaited<Result>>;
  run<Result>(runName: string, options: RunOptions, fn: (run: Run) => Result): Promise<Awaited<Result>>;
  run<Result>(runName: string, second: RunOptions | ((run: Run) => Result), third?: (run: Run) => Result): Promise<Awaited<Result>> {
    const fn = typeof second === "function" ? second : third;
    const options = typeof second === "function" ? undefined : second;
    if (typeof fn !== "function") return Promise.reject(new TypeError("tracker.run(name, [options,] fn): fn must be a function"));
    return trackRun(this, (error) => safeCall(this.#onError, error), runName, options, fn);
  }

  #warn(warning: TrackerWarning): void {
    safeCall(this.#onWarning, warning);
  }

  /** Where instrumented clients report what the owner should see (`usage_missing`). Never throws. */
  [WARN](warning: TrackerWarning): void {
    if (this.#settings !== undefined) this.#warn(warning);
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
