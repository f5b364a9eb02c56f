// One instrumented model call: when it started, what it asked for, and the one event it becomes
// when it ends (a result, an error, a stream's end). Shared by every client integration.

import { performance } from "node:perf_hooks";

import { activeAttributes, claimReservation, unclaimReservation, withContext, type Attributes } from "./context.js";
import { applyConvention, type Route } from "./conventions.js";
import { reservationIdOf, type HelperOptions } from "./provider-read.js";
import type { CallStatus, TrackOptions, TrackerWarning } from "./types.js";

/**
 * How an instrumented call reaches the tracker's `onWarning` (a `Tracker` has it; a bare
 * `{ track }` object gets the event's metadata marker only). One key per process, whichever
 * build of costtrack is loaded.
 */
export const WARN: unique symbol = Symbol.for("costtrack.warn") as never;

/** What an instrumented call reports to: a tracker (anything with `track()`). */
export interface TrackerLike {
  track(options: TrackOptions): void;
  [WARN]?: (warning: TrackerWarning) => void;
}

/**
 * The warning code, and the event's `metadata` marker, of a call that ended well without the
 * provider reporting its usage: the tokens are unknown, not zero.
 */
export const USAGE_MISSING = "usage_missing";

/** Why a call has no usage (the value of `metadata.usage_missing`): a stream that sent none. */
export const NO_STREAM_USAGE = "stream_without_usage";

/**
 * The responses an instrumented client has tracked (weakly held, never changed): a framework hook
 * that sees the same response object (the OpenAI Agents processor) leaves that call out. One set
 * per process, whichever build (ESM, CommonJS) of costtrack is loaded.
 */
export const trackedResponses: WeakSet<object> = ((globalThis as Record<symbol, unknown>)[
  Symbol.for("costtrack.trackedResponses")
] ??= new WeakSet<object>()) as WeakSet<object>;

/**
 * A model call of the OpenAI Agents SDK that its tracing processor tracks when the call's span
 * ends, unless an instrumented client tracks it first: registered by the processor for the span
 * (one map per process), it gives the client's event the run's `identity` and records that the
 * call was `tracked` (answered or failed), so the processor leaves it out and nothing is counted twice.
 */
export interface SpanClaim {
  identity: Readonly<Record<string, string>>;
  tracked: boolean;
}

export const spanClaims: WeakMap<object, SpanClaim> = ((globalThis as Record<symbol, unknown>)[
  Symbol.for("costtrack.spanClaims")
] ??= new WeakMap<object, SpanClaim>()) as WeakMap<object, SpanClaim>;

/** Where `@openai/agents-core` keeps its tracing context (shared by every copy of it that is loaded). */
const AGENTS_CONTEXT = Symbol.for("openai.agents.core.asyncLocalStorage");

/** The OpenAI Agents SDK's span in force where a call is made (a model call's span), if any. */
function agentsSpan(): object | undefined {
  try {
    const storage = (globalThis as Record<symbol, unknown>)[AGENTS_CONTEXT] as { getStore?: () => unknown } | undefined;
    if (typeof storage?.getStore !== "function") return undefined;
    const store = storage.getStore() as { active?: unknown; span?: unknown } | undefined;
    const span = store?.active === true ? store.span : undefined;
    return typeof span === "object" && span !== null ? span : undefined;
  } catch {
    return undefined;
  }
}

/** The settings instrument() was given: the tracker and the defaults of every event. */
export interface Settings {
  tracker: TrackerLike;
  defaults: HelperOptions;
  /** instrument()'s `streamUsage` (default `"auto"`). */
  streamUsage?: boolean | "auto";
  /** A server refused `stream_options` under `"auto"`: this client stops adding them. */
  streamUsageRefused?: boolean;
}

/** Builds the event from the provider's response (or its stream's usage) through a helper. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each helper reads its own provider's shape
export type ReadUsage = (data: any, extra: HelperOptions) => TrackOptions;

/**
 * The status an error stands for: the caller's abort is `cancelled`, a timeout `timeout`,
 * anything else `error`. Read from the names the client libraries give their errors
 * (`APIUserAbortError`, `AbortError`, `APIConnectionTimeoutError`, `TimeoutError`, ...).
 */
export function statusOf(error: unknown): CallStatus {
  try {
    const name = String((error as { name?: unknown } | null)?.name ?? "");
    const code = String((error as { code?: unknown } | null)?.code ?? "");
    const ctor = String((error as { constructor?: { name?: unknown } } | null)?.constructor?.name ?? "");
    if (/abort/i.test(name) || /abort/i.test(ctor) || code === "ABORT_ERR") return "cancelled";
    if (/timeout/i.test(name) || /timeout/i.test(ctor) || code === "ETIMEDOUT" || code === "UND_ERR_HEADERS_TIMEOUT") return "timeout";
    const message = String((error as { message?: unknown } | null)?.message ?? "");
    if (/timed? ?out/i.test(message)) return "timeout";
    if (/aborted/i.test(message)) return "cancelled";
  } catch {
    // an error whose getters throw is an error
  }
  return "error";
}

/** A `TypeError` of the client's own checks (the fetch API's network failures carry a `cause`). */
function isArgumentError(error: unknown): boolean {
  try {
    return error instanceof TypeError && Object.getPrototypeOf(error) === TypeError.prototype && (error as { cause?: unknown }).cause === undefined;
  } catch {
    return false;
  }
}

/** One call in flight. `finish` tracks it once; later calls of `finish` do nothing. */
export class Call {
  readonly #settings: Settings;
  readonly #context: Attributes | undefined;
  readonly #start = performance.now();
  readonly #provider: string;
  readonly #route: Route | undefined;
  readonly #model: string | undefined;
  readonly #read: ReadUsage;
  readonly #span: object | undefined;
  readonly #identity: Readonly<Record<string, string>> | undefined;
  readonly #reservationId: string | undefined;
  #signal: unknown;
  #done = false;

  /** `identity`: the run a framework says the call belongs to (`traceId`, `parentId`); the event's own and the context's win. */
  /** `provider`: the provider id, or the client's route (its provider and usage convention). */
  constructor(settings: Settings, provider: string | Route, model: unknown, read: ReadUsage, identity?: Readonly<Record<string, string>>) {
    this.#settings = settings;
    this.#identity = identity;
    this.#context = activeAttributes();
    // Taken now: a stream read after withReservation()'s block still settles the block's hold.
    this.#reservationId = claimReservation(this.#context);
    this.#provider = typeof provider === "string" ? provider : provider.provider;
    this.#route = typeof provider === "string" ? undefined : provider;
    this.#model = typeof model === "string" && model !== "" ? model : undefined;
    this.#read = read;
    this.#span = agentsSpan();
  }

  get done(): boolean {
    return this.#done;
  }

  /**
   * The caller's abort signal for this call (`{ signal }`, Gemini's `config.abortSignal`): a call
   * it aborted with a timeout (`AbortSignal.timeout()`) is `timeout`, not `cancelled`. Returns the call.
   */
  listen(signal: unknown): this {
    this.#signal = signal;
    return this;
  }

  /**
   * The client threw before making any request (bad arguments: its methods send asynchronously):
   * no call was made, so nothing is tracked, and the reservation taken for it is free again.
   * Returns the error to rethrow unchanged.
   */
  abandon(error: unknown): unknown {
    if (this.#done) return error;
    this.#done = true;
    if (this.#reservationId !== undefined) unclaimReservation({ reservationId: this.#reservationId });
    return error;
  }

  #timedOut(): boolean {
    try {
      const signal = this.#signal as { aborted?: unknown; reason?: { name?: unknown } } | undefined;
      return signal?.aborted === true && signal.reason?.name === "TimeoutError";
    } catch {
      return false;
    }
  }

  /**
   * Tracks the call: `usage` is the response (or what the stream said), undefined when none came.
   * `missing`: the call ended without the provider's usage (true, or why), so the event is
   * marked and the tracker warned rather than passing as a 0-token call.
   */
  finish(status: CallStatus, usage?: unknown, missing: boolean | string = false): void {
    if (this.#done) return;
    this.#done = true;
    try {
      if (status === "cancelled" && this.#signal !== undefined && this.#timedOut()) status = "timeout";
      const latencyMs = Math.max(0, Math.round(performance.now() - this.#start));
      const extra: HelperOptions = { provider: this.#provider, ...this.#settings.defaults, latencyMs, status };
      const event: Record<string, unknown> = usage === undefined ? { ...extra } : { ...this.#read(usage, extra) };
      if (event["model"] === undefined && this.#model !== undefined) event["model"] = this.#model;
      if (event["promptTokens"] === undefined) event["promptTokens"] = 0;
      if (event["completionTokens"] === undefined) event["completionTokens"] = 0;
      delete event["processing"];
      if (this.#route !== undefined && usage !== undefined) applyConvention(event, this.#route);
      if ("reservation" in event) {
        event["reservationId"] ??= reservationIdOf(event["reservation"]);
        delete event["reservation"];
      }
      if (this.#reservationId !== undefined) {
        event["reservationId"] ??= this.#reservationId;
        // The event names another reservation: the block's is free again (for its release).
        if (event["reservationId"] !== this.#reservationId) unclaimReservation({ reservationId: this.#reservationId });
      }
      if (usage !== null && typeof usage === "object") trackedResponses.add(usage);
      let tracked = withContext(event as unknown as TrackOptions, this.#context);
      const claim = this.#span === undefined ? undefined : spanClaims.get(this.#span);
      if (claim !== undefined) {
        // An Agents SDK model call: this event is the one tracked, with the run's identity under its own fields.
        claim.tracked = true;
        tracked = { ...claim.identity, ...tracked };
      }
      if (this.#identity !== undefined) {
        const fields = tracked as unknown as Record<string, unknown>;
        for (const [name, value] of Object.entries(this.#identity)) {
          if (fields[name] === undefined || fields[name] === null) fields[name] = value;
        }
      }
      const reason = typeof missing === "string" ? missing : NO_STREAM_USAGE;
      if (missing !== false) tracked = { ...tracked, metadata: { ...(tracked.metadata ?? {}), [USAGE_MISSING]: reason } };
      const tracker = this.#settings.tracker;
      tracker.track(tracked);
      if (missing !== false && typeof tracker[WARN] === "function") {
        tracker[WARN]({
          code: USAGE_MISSING,
          message: `a ${String(tracked.model ?? "model")} call was tracked without its usage (${reason}): zero tokens`,
        });
      }
    } catch {
      // costtrack never gets in the way of the call
    }
  }

  /**
   * Tracks a failed call with its status, then returns the error to rethrow unchanged. A plain
   * `TypeError` (not a network failure: no `cause`) is the client refusing its arguments before
   * sending anything: no call, nothing tracked.
   */
  fail(error: unknown): unknown {
    if (isArgumentError(error)) return this.abandon(error);
    this.finish(statusOf(error));
    return error;
  }
}

/**
 * Calls the client's method for `call`, listening to the caller's abort `signal`. Its methods
 * send asynchronously, so what it throws here was thrown before any request: no call.
 */
export function send(call: Call, original: (this: unknown, ...args: unknown[]) => unknown, self: unknown, args: unknown[], signal: unknown): unknown {
  call.listen(signal);
  try {
    return original.apply(self, args);
  } catch (error) {
    throw call.abandon(error);
  }
}

/** What watching a stream needs: each item, how it ended. */
export interface StreamWatch {
  /** Sees each item; returns false for an item that must not reach the caller. Never throws. */
  item(value: unknown): boolean;
  /** The stream ended on its own (`done`). */
  end(): void;
  /** The caller stopped early (`return()`), or the iteration threw. */
  stop(status: CallStatus): void;
  /**
   * The answer is complete but its usage is still to come (a Chat Completions stream after
   * `finish_reason`): a caller that stops here has the rest read in the background.
   */
  pending?(): boolean;
}

/** How long, and for how many items, the rest of a finished stream is read for its usage. */
const DRAIN_MS = 5_000;
const DRAIN_ITEMS = 100;

/**
 * Watches an async iterator in place: its own `next`, `return` and `throw` are replaced by ones
 * that pass every result through unchanged (except items `watch.item` holds back) and report the
 * end. The object stays the same, so `for await`, `Symbol.asyncIterator` and identity all hold.
 */
export function watchIterator<T extends object>(iterator: T, watch: StreamWatch): T {
  const it = iterator as unknown as AsyncIterator<unknown>;
  const next = it.next;
  const back = it.return;
  const raise = it.throw;
  let ended = false;
  const settle = (fn: () => void): void => {
    if (ended) return;
    ended = true;
    try {
      fn();
    } catch {
      // never in the way
    }
  };
  /** Reads what is left of the stream, bounded, until its end or until it is no longer pending. */
  const drain = async (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), DRAIN_MS);
      timer.unref?.();
    });
    try {
      for (let i = 0; i < DRAIN_ITEMS && watch.pending?.() === true; i++) {
        const result = await Promise.race([next.apply(it, []), late]);
        if (result === "late") return;
        if (result.done === true) {
          settle(() => watch.end());
          return;
        }
        watch.item(result.value);
      }
    } catch {
      // what could not be read stays unknown
    } finally {
      clearTimeout(timer);
    }
  };
  const self = it as unknown as Record<string, unknown>;
  self["next"] = async function watchedNext(this: unknown, ...args: [] | [unknown]): Promise<IteratorResult<unknown>> {
    for (;;) {
      let result: IteratorResult<unknown>;
      try {
        result = await next.apply(it, args);
      } catch (error) {
        settle(() => watch.stop(statusOf(error)));
        throw error;
      }
      if (result.done === true) {
        settle(() => watch.end());
        return result;
      }
      let keep = true;
      try {
        keep = watch.item(result.value);
      } catch {
        keep = true;
      }
      if (keep) return result;
    }
  };
  if (typeof back === "function") {
    self["return"] = async function watchedReturn(this: unknown, value?: unknown): Promise<IteratorResult<unknown>> {
      let pending = false;
      try {
        pending = !ended && watch.pending?.() === true;
      } catch {
        pending = false;
      }
      if (!pending) {
        settle(() => watch.stop("cancelled"));
        return back.call(it, value);
      }
      // The provider billed the call and its usage is the next item: read it for the caller.
      void drain().finally(() => {
        settle(() => watch.stop("cancelled"));
        back.call(it, value).then(undefined, () => undefined);
      });
      return { done: true, value };
    };
  }
  if (typeof raise === "function") {
    self["throw"] = async function watchedThrow(this: unknown, error?: unknown): Promise<IteratorResult<unknown>> {
      settle(() => watch.stop(statusOf(error)));
      return raise.call(it, error);
    };
  }
  return iterator;
}

/** A model id as the client was asked for it (`models/gemini-2.5-flash` → `gemini-2.5-flash`). */
export function requestedModel(params: unknown, name = "model"): string | undefined {
  try {
    const value = (params as Record<string, unknown> | null | undefined)?.[name];
    if (typeof value !== "string") return undefined;
    return value.startsWith("models/") ? value.slice("models/".length) : value;
  } catch {
    return undefined;
  }
}
