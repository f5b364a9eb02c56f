// Cost per run (CONTRACT §11): `tracker.run(name, fn)` gives the calls inside one trace id and a
// run name through the context, and ends the run with its marker event, which carries the run's
// own status and latency: `{ provider: "costtrack", model: "run", traceId, sessionId?, runName,
// status, latencyMs }`, no token counts (the service never prices it nor counts it as a call).
// `run.step(name, fn)` sets the `parentId` of the calls inside.

import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";

import { runContext, withAttributes, withoutReservation } from "./context.js";
import { EventValidationError, type FieldError } from "./errors.js";
import { checkIdentifier, checkString } from "./field-checks.js";
import { statusOf } from "./instrument-call.js";
import { RULES } from "./rules.js";
import type { CallStatus, TrackOptions } from "./types.js";

/** The provider and model of the run marker event, agreed with the service. */
export const RUN_MARKER = Object.freeze({ provider: "costtrack", model: "run" });

/** `tracker.run()`'s options. */
export interface RunOptions {
  /** The conversation or user session the run belongs to; default: the context's. */
  sessionId?: string | null | undefined;
  /** The run's id, when it comes from elsewhere (a request id); default: 32 random lowercase hex digits. */
  traceId?: string | null | undefined;
}

/** A step of a run, as `run.step()` gives it to its function. */
export interface RunStep {
  readonly name: string;
  /** The `parentId` of the calls made inside the step: its name in identifier characters. */
  readonly parentId: string;
  readonly traceId: string;
}

/** A trace id as W3C Trace Context writes one: 32 lowercase hex digits. */
export function newTraceId(): string {
  return randomBytes(16).toString("hex");
}

/** A step name as an identifier (1 to 128 of `[A-Za-z0-9._:-]`): `"search docs"` → `"search-docs"`. */
export function stepId(name: unknown): string {
  const text = typeof name === "string" ? name.trim() : "";
  const id = text.replace(/[^A-Za-z0-9._:-]+/g, "-").slice(0, 128);
  return id === "" || id === "-" ? "step" : id;
}

/** A run in progress: its identity, and its steps. */
export class Run {
  readonly traceId: string;
  readonly runName: string | undefined;
  readonly sessionId: string | undefined;

  constructor(traceId: string, runName: string | undefined, sessionId: string | undefined) {
    this.traceId = traceId;
    this.runName = runName;
    this.sessionId = sessionId;
    this.step = this.step.bind(this);
  }

  /**
   * Runs `fn` as a step of this run: the calls inside carry the run's trace id and name and the
   * step's `parentId`. Steps nest (the innermost wins). Returns what `fn` returns.
   */
  step<Result>(name: string, fn: (step: RunStep) => Result): Result {
    const step: RunStep = { name: String(name), parentId: stepId(name), traceId: this.traceId };
    return withAttributes({ traceId: this.traceId, runName: this.runName, sessionId: this.sessionId, parentId: step.parentId }, () => fn(step));
  }
}

/** What a run needs of a tracker. */
interface Tracking {
  track(options: TrackOptions): void;
}

/**
 * Runs `fn(run)` as a run named `runName` and tracks its marker when it ends, with the status
 * its exception stands for (`error`, `cancelled`, `timeout`) or `success`. An invalid name or
 * session id is reported to `onError` and left out; the run still runs. Rethrows what `fn` throws.
 */
export async function trackRun<Result>(
  tracker: Tracking,
  onError: (error: Error) => void,
  runName: string,
  options: RunOptions | undefined,
  fn: (run: Run) => Result,
): Promise<Awaited<Result>> {
  const errors: FieldError[] = [];
  const rule = RULES.get("runName");
  const name = rule?.kind === "string" ? checkString("runName", rule, runName, errors) : undefined;
  const given = options ?? {};
  const sessionId = given.sessionId === undefined || given.sessionId === null ? undefined : checkIdentifier("sessionId", given.sessionId, errors);
  const ownTrace = given.traceId === undefined || given.traceId === null ? undefined : checkIdentifier("traceId", given.traceId, errors);
  if (errors.length > 0) onError(new EventValidationError(errors));
  const traceId = ownTrace ?? newTraceId();
  const fields = { traceId, runName: name, sessionId };
  const start = performance.now();
  let status: CallStatus = "success";
  return runContext(fields, async (): Promise<Awaited<Result>> => {
    const run = new Run(traceId, name, sessionId);
    try {
      return await fn(run);
    } catch (error) {
      status = statusOf(error);
      throw error;
    } finally {
      const marker: TrackOptions = { ...RUN_MARKER, traceId, status, latencyMs: Math.max(0, Math.round(performance.now() - start)) };
      if (name !== undefined) marker.runName = name;
      if (sessionId !== undefined) marker.sessionId = sessionId;
      // The marker is the run's, never the call a reservation is for.
      withoutReservation(() => tracker.track(marker));
    }
  });
}
