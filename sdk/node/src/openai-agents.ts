// The OpenAI Agents SDK integration, entry point `costtrack/openai-agents`: a tracing processor
// that tracks every model call of every agent run (each `response` and `generation` span) as one
// event with the run's identity. Registered once (`addTraceProcessor`), it sees every run,
// handoff and agent-as-tool without a hook at each `run()`, failed calls included (the span's
// error), and each span names its trace and parent. Nothing of `@openai/agents` is imported: the
// SDK calls a processor's methods as they are. The usage is the model's response as the span keeps
// it (`_response` of a Responses API span, the Chat Completion in a generation span's `output`,
// recorded when the run traces its data: the default `traceIncludeSensitiveData`), read by
// fromOpenAI, so an agent's call is priced as the direct helper prices it.

import { Call, spanClaims, statusOf, trackedResponses, type Settings, type TrackerLike } from "./instrument-call.js";
import type { InstrumentOptions } from "./instrument.js";
import { read, record, text } from "./provider-read.js";
import { fromOpenAI } from "./providers.js";

/** CONTRACT §11: the form of `trace_id`, `session_id` and `parent_id`. */
const RUN_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Traces and calls that never ended are forgotten beyond this many. */
const MAX_OPEN = 10_000;

/** The run identity fields of an event (CONTRACT §11). */
export interface RunIdentity {
  traceId?: string;
  sessionId?: string;
  parentId?: string;
  runName?: string;
}

/**
 * The run identity fields (CONTRACT §11: `traceId`, `sessionId`, `parentId`, `runName`) of a model
 * call from the Agents SDK's ids: `trace_<hex>` and `span_<hex>` without their prefix (as OTLP ids
 * are), the group id as the session, the workflow name as the run name; a value the contract does
 * not allow is left out, so an odd id never makes the whole event invalid.
 */
export function agentsIdentity(traceId: unknown, groupId: unknown, parentId: unknown, workflowName: unknown): RunIdentity {
  const bare = (value: unknown, prefix: string): unknown =>
    typeof value === "string" && value.startsWith(prefix) ? value.slice(prefix.length) : value;
  const found: RunIdentity = {};
  for (const [name, value] of [
    ["traceId", bare(traceId, "trace_")],
    ["sessionId", groupId],
    ["parentId", bare(parentId, "span_")],
  ] as const) {
    if (typeof value === "string" && RUN_ID.test(value)) found[name] = value;
  }
  if (typeof workflowName === "string" && workflowName.trim() !== "" && workflowName.trim().length <= 200) {
    found.runName = workflowName.trim();
  }
  return found;
}

/** What a model span kept of the call's response: the Responses API response, the Chat Completion, or its usage. */
function spanResponse(spanData: unknown): unknown {
  const response = read(spanData, "_response");
  if (record(read(response, "usage")) !== undefined) return response;
  const output = read(spanData, "output");
  const completion = Array.isArray(output) ? output.find((item) => record(read(item, "usage")) !== undefined) : undefined;
  if (completion !== undefined) return completion;
  const usage = record(read(spanData, "usage"));
  return usage === undefined ? undefined : { usage, model: text(spanData, "model") };
}

/**
 * An OpenAI Agents SDK tracing processor that tracks every model call as one event: its usage
 * (fromOpenAI's reading of the response the span kept), `latencyMs` (span start to end), `status`
 * (`success`, or from the span's error: `error`, `timeout`, `cancelled`, zero tokens) and the
 * run's identity (`agentsIdentity`: `traceId`, `sessionId`, `parentId`, `runName`). The other options are the defaults of every
 * event, under an enclosing `withAttributes()` (the one in force when the span starts).
 *
 * ```ts
 * import { addTraceProcessor } from "@openai/agents";
 * import { CosttrackTracingProcessor } from "costtrack/openai-agents";
 * addTraceProcessor(new CosttrackTracingProcessor({ tracker, feature: "support-agent" }));
 * ```
 *
 * With `instrument(client)` on the client the agents use as well, each call is tracked once: the
 * processor registers a claim for the call's span, the instrumented client (which finds the span
 * in the Agents SDK's own tracing context) tracks the call, answered or failed, with its own
 * reading, latency and status plus the run's identity, and the processor leaves that call out.
 */
export class CosttrackTracingProcessor {
  readonly #settings: Settings;
  readonly #traces = new Map<string, { name: unknown; groupId: unknown }>();
  readonly #calls = new Map<string, Call>();

  constructor(options: InstrumentOptions) {
    const tracker = (options as { tracker?: unknown } | null | undefined)?.tracker;
    if (typeof (tracker as { track?: unknown } | null | undefined)?.track !== "function") {
      throw new TypeError("new CosttrackTracingProcessor({ tracker }): tracker must be a costtrack Tracker");
    }
    const { tracker: _tracker, ...defaults } = options;
    this.#settings = { tracker: tracker as TrackerLike, defaults };
  }

  async onTraceStart(trace: unknown): Promise<void> {
    const id = text(trace, "traceId");
    if (id === undefined) return;
    forgetOldest(this.#traces);
    this.#traces.set(id, { name: read(trace, "name"), groupId: read(trace, "groupId") });
  }

  async onTraceEnd(trace: unknown): Promise<void> {
    const id = text(trace, "traceId");
    if (id !== undefined) this.#traces.delete(id);
  }

  async onSpanStart(span: unknown): Promise<void> {
    try {
      const data = read(span, "spanData");
      const type = text(data, "type");
      const id = text(span, "spanId");
      if ((type !== "response" && type !== "generation") || id === undefined) return;
      const traceId = text(span, "traceId");
      const trace = traceId === undefined ? undefined : this.#traces.get(traceId);
      const identity = agentsIdentity(traceId, trace?.groupId, read(span, "parentId"), trace?.name);
      // The processor's own options win over the run's identity, as the event's fields do.
      const settings: Settings = { ...this.#settings, defaults: { ...identity, ...this.#settings.defaults } };
      // An instrumented client under the span tracks the call itself, with this identity (instrument-call.ts).
      if (typeof span === "object" && span !== null) spanClaims.set(span, { identity: { ...identity }, tracked: false });
      forgetOldest(this.#calls);
      // A Responses API span names no model until the response arrives: a failed call is "unknown".
      this.#calls.set(id, new Call(settings, "openai", text(data, "model") ?? "unknown", fromOpenAI as never));
    } catch {
      // never in the way
    }
  }

  async onSpanEnd(span: unknown): Promise<void> {
    const id = text(span, "spanId");
    const call = id === undefined ? undefined : this.#calls.get(id);
    if (call === undefined || id === undefined) return;
    this.#calls.delete(id);
    try {
      const claim = typeof span === "object" && span !== null ? spanClaims.get(span) : undefined;
      if (claim?.tracked === true) return; // the instrumented client tracked it, failed or not
      const response = spanResponse(read(span, "spanData"));
      if (response !== null && typeof response === "object" && trackedResponses.has(response)) return;
      const error = read(span, "error");
      const status = error === undefined || error === null ? "success" : statusOf(error);
      call.finish(status, response);
    } catch {
      // never in the way
    }
  }

  async shutdown(): Promise<void> {
    // Nothing to release: the tracker delivers the events and is shut down by its owner.
  }

  async forceFlush(): Promise<void> {
    // Events are handed to the tracker as each call ends; its own flush() delivers them.
  }
}

function forgetOldest(map: Map<string, unknown>): void {
  if (map.size < MAX_OPEN) return;
  const oldest = map.keys().next().value;
  if (oldest !== undefined) map.delete(oldest);
}
