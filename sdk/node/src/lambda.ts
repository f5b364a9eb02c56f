import { activeTrackers, type Tracker } from "./tracker.js";

export interface WithFlushOptions {
  /** Trackers to flush. Default: every tracker created and not shut down. */
  tracker?: Tracker | readonly Tracker[] | undefined;
  /** Upper bound for the flush, in milliseconds. Default 5000, and never past the Lambda's own deadline. */
  timeoutMs?: number | undefined;
}

// Same figures as the Python SDK's flush_after.
const DEFAULT_TIMEOUT_MS = 5000;
// Leave the runtime this much time after the flush, so flushing never makes the invocation time out.
const LAMBDA_MARGIN_MS = 500;

function remainingTime(context: unknown): number | undefined {
  try {
    const get = (context as { getRemainingTimeInMillis?: unknown } | null | undefined)?.getRemainingTimeInMillis;
    if (typeof get !== "function") return undefined;
    const remaining: unknown = get.call(context);
    return typeof remaining === "number" && Number.isFinite(remaining) ? remaining : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Wraps an async AWS Lambda handler (or any async function) so that, after it settles, queued
 * events are flushed before the result is returned: Lambda freezes the process as soon as the
 * handler returns, which would otherwise strand events in the queue. The flush is bounded by
 * `timeoutMs` and by the invocation's remaining time; the handler's result or error is passed
 * through unchanged.
 *
 * ```ts
 * const tracker = new Tracker({ apiKey: process.env.COSTTRACK_API_KEY });
 * export const handler = withFlush(async (event) => { ...; tracker.track({...}); return result; });
 * ```
 */
export function withFlush<Args extends unknown[], Result>(
  handler: (...args: Args) => Result,
  options: WithFlushOptions = {},
): (...args: Args) => Promise<Awaited<Result>> {
  return async function flushingHandler(this: unknown, ...args: Args): Promise<Awaited<Result>> {
    try {
      return await handler.apply(this, args);
    } finally {
      const given = options.tracker;
      const trackers = given === undefined ? activeTrackers() : Array.isArray(given) ? given : [given as Tracker];
      let timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      // Lambda passes (event, context); context tells how long the invocation may still run.
      const remaining = remainingTime(args[1]);
      if (remaining !== undefined) timeoutMs = Math.max(0, Math.min(timeoutMs, remaining - LAMBDA_MARGIN_MS));
      // flush() never rejects.
      await Promise.all(trackers.map((tracker) => tracker.flush(timeoutMs)));
    }
  };
}
