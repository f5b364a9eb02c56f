// How the tracker reports: user callbacks called so that nothing they do escapes, and bursts of
// drops reported as one warning per interval. Behind tracker.ts.

import type { TrackerWarning } from "./types.js";

const REPORT_INTERVAL_MS = 1000;

export type Callback<T> = (value: T) => void;

// Calls a user callback; whatever it does (throw, return a rejected promise) stays here.
export function safeCall<T>(callback: Callback<T>, value: T): void {
  try {
    const result: unknown = callback(value);
    if (typeof result === "object" && result !== null && typeof (result as PromiseLike<unknown>).then === "function") {
      (result as PromiseLike<unknown>).then(undefined, () => undefined);
    }
  } catch {
    // A throwing callback must not break track() or delivery.
  }
}

export function defaultWarning(warning: TrackerWarning): void {
  console.warn(`costtrack: ${warning.code}: ${warning.message}`);
}

export function defaultError(error: Error): void {
  console.error(`costtrack: ${error.message}`);
}

/**
 * Reports a burst of drops as at most one warning per interval, carrying how many were dropped.
 * The last partial interval is reported by an unref'd timer.
 */
export class RateLimitedReport {
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
