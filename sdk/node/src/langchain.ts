// The LangChain JS integration, entry point `costtrack/langchain`: a callback handler that tracks
// every chat model (and LLM) run as one event. LangChain's standard `usage_metadata` counts all
// input (cache reads and writes included) and all output (reasoning included), as the AI SDK 6+
// usage does, so it is read through fromVercelAI's rules: the provider conventions are undone in
// one place. Nothing of `@langchain/core` is imported: LangChain takes a handler's methods as
// they are (an object without a `name` is wrapped with `BaseCallbackHandler.fromMethods`).
// LangChain's run ids name the run: a model run inside a chain, tool or retriever run
// gets the outermost run's id as `traceId` and its parent run's id as `parentId`, unless
// withAttributes() or tracker.run() set them; a model run on its own gets neither.

import { Call, type Settings, type TrackerLike } from "./instrument-call.js";
import type { InstrumentOptions } from "./instrument.js";
import { exact, read, record, text } from "./provider-read.js";
import type { HelperOptions } from "./provider-read.js";
import { IDENTIFIER } from "./rules.js";
import type { TrackOptions } from "./types.js";
import { fromVercelAI } from "./vercel.js";

// LangChain's provider names (`ls_provider`, `response_metadata.model_provider`) → costtrack's.
const PROVIDERS: ReadonlyMap<string, string> = new Map([
  ["google_genai", "google"],
  ["google-genai", "google"],
  ["google_vertexai", "google"],
  ["google-vertexai", "google"],
  ["googlegenerativeai", "google"],
  ["vertexai", "google"],
  ["amazon_bedrock", "bedrock"],
  ["bedrock_converse", "bedrock"],
  ["bedrockconverse", "bedrock"],
  ["azure_openai", "azure"],
  ["azureopenai", "azure"],
  ["mistralai", "mistral"],
  ["togetherai", "together"],
  ["xai", "xai"],
]);

/** costtrack's provider id for a LangChain provider name (`openai`, `anthropic`, `google_genai`, ...). */
export function langChainProvider(name: string): string {
  const key = name.trim().toLowerCase();
  return PROVIDERS.get(key) ?? key;
}

/** The message of each generation of a LangChain `LLMResult`. */
function messages(output: unknown): unknown[] {
  const found: unknown[] = [];
  const generations = read(output, "generations");
  if (!Array.isArray(generations)) return found;
  for (const group of generations) {
    if (!Array.isArray(group)) continue;
    for (const generation of group) {
      const message = read(generation, "message");
      if (message !== undefined) found.push(message);
    }
  }
  return found;
}

/**
 * From a LangChain `LLMResult` (what `handleLLMEnd` receives) or an `AIMessage`: the event of that
 * model run. The usage is the messages' `usage_metadata` (`input_tokens`, `output_tokens`,
 * `input_token_details.cache_read`/`cache_creation`, `output_token_details.reasoning`), else
 * `llmOutput.tokenUsage`; the model is `response_metadata.model_name` (or `model`). Pass
 * `{ provider }` when LangChain does not name it.
 */
export function fromLangChain(output: unknown, extra?: HelperOptions): TrackOptions {
  return langChainEvent(output, extra, undefined);
}

/** fromLangChain, the provider `fallback` when neither `extra` nor the message names one. */
function langChainEvent(output: unknown, extra: HelperOptions | undefined, fallback: string | undefined): TrackOptions {
  const list = read(output, "usage_metadata") !== undefined ? [output] : messages(output);
  const message = list.find((m) => record(read(m, "usage_metadata")) !== undefined) ?? list[0];
  const usage = read(message, "usage_metadata");
  const responseMetadata = read(message, "response_metadata");
  const model = text(responseMetadata, "model_name") ?? text(responseMetadata, "model") ?? text(responseMetadata, "modelId");
  const named = text(responseMetadata, "model_provider");
  const given = typeof extra?.provider === "string" && extra.provider.trim() !== "" ? extra.provider : undefined;
  const provider = given ?? (named === undefined ? fallback : langChainProvider(named));
  const extraOptions: HelperOptions = { ...extra, ...(provider === undefined ? {} : { provider }) };
  let step: unknown;
  if (record(usage) !== undefined) {
    const input = exact(usage, "input_tokens");
    const output_ = exact(usage, "output_tokens");
    const cacheRead = exact(usage, "input_token_details", "cache_read");
    const cacheWrite = exact(usage, "input_token_details", "cache_creation");
    const reasoning = exact(usage, "output_token_details", "reasoning");
    step = {
      usage: {
        inputTokens: input,
        // Marks LangChain's all-in convention (AI SDK 6+'s) for fromVercelAI.
        inputTokenDetails: {
          noCacheTokens: input === undefined ? undefined : Math.max(0, input - (cacheRead ?? 0) - (cacheWrite ?? 0)),
          cacheReadTokens: cacheRead,
          cacheWriteTokens: cacheWrite,
        },
        outputTokens: output_,
        outputTokenDetails: { textTokens: output_ === undefined ? undefined : Math.max(0, output_ - (reasoning ?? 0)), reasoningTokens: reasoning },
        raw: record(read(responseMetadata, "usage")) ?? record(read(responseMetadata, "usageMetadata")),
      },
      response: { modelId: model },
    };
  } else {
    // An LLM (not a chat model) or a model without usage_metadata: the llmOutput's counts, as given.
    const tokenUsage = read(output, "llmOutput", "tokenUsage");
    step = {
      usage: { inputTokens: exact(tokenUsage, "promptTokens"), outputTokens: exact(tokenUsage, "completionTokens") },
      response: { modelId: model ?? text(output, "llmOutput", "model_name") },
    };
  }
  return fromVercelAI(step as never, extraOptions);
}

/** The model a run asked for: LangSmith's `ls_model_name`, else the invocation's `model`. */
function requested(extraParams: unknown, metadata: unknown): string | undefined {
  return (
    text(metadata, "ls_model_name") ??
    text(extraParams, "invocation_params", "model") ??
    text(extraParams, "invocation_params", "model_name") ??
    text(extraParams, "invocation_params", "modelName")
  );
}

/** A run's `traceId` and `parentId`, each only if it is an id the contract allows (§11). */
function runIdentity(traceId: string, parentId: string): Record<string, string> {
  const identity: Record<string, string> = {};
  if (IDENTIFIER.test(traceId)) identity["traceId"] = traceId;
  if (IDENTIFIER.test(parentId)) identity["parentId"] = parentId;
  return identity;
}

/** Runs that never ended (a stream its reader left early) are forgotten beyond this many. */
const MAX_RUNS = 10_000;

/**
 * A LangChain JS callback handler that tracks every chat model and LLM run as one event: its usage
 * as `fromLangChain` reads it, `latencyMs` (run start to end) and `status` (`success`, or from
 * the error: `error`, `timeout`, `cancelled`). The other options are the defaults of every event,
 * over those of an enclosing `withAttributes()` (the one in force when the run starts).
 *
 * Pass it where LangChain takes callbacks: `model.invoke(input, { callbacks: [handler] })`, a
 * model's constructor (`callbacks: [handler]`), or a chain's config (every model run inside).
 * It is awaited by LangChain (`awaitHandlers`), so the event is tracked before the call returns.
 *
 * ```ts
 * import { CosttrackCallbackHandler } from "costtrack/langchain";
 * const handler = new CosttrackCallbackHandler({ tracker, feature: "chat" });
 * await model.invoke("Say hello", { callbacks: [handler] });
 * ```
 */
export class CosttrackCallbackHandler {
  /** LangChain runs this handler inline: the event is tracked before the run's promise settles. */
  readonly awaitHandlers = true;
  readonly handleLLMStart: (llm: unknown, prompts: unknown, runId: string, parentRunId?: string, extraParams?: unknown, tags?: unknown, metadata?: unknown) => void;
  readonly handleChatModelStart: (llm: unknown, messages: unknown, runId: string, parentRunId?: string, extraParams?: unknown, tags?: unknown, metadata?: unknown) => void;
  readonly handleLLMEnd: (output: unknown, runId: string) => void;
  readonly handleLLMError: (error: unknown, runId: string) => void;
  readonly handleChainStart: (chain: unknown, inputs: unknown, runId: string, parentRunId?: string) => void;
  readonly handleToolStart: (tool: unknown, input: unknown, runId: string, parentRunId?: string) => void;
  readonly handleRetrieverStart: (retriever: unknown, query: unknown, runId: string, parentRunId?: string) => void;
  readonly handleChainEnd: (output: unknown, runId: string) => void;
  readonly handleChainError: (error: unknown, runId: string) => void;
  readonly handleToolEnd: (output: unknown, runId: string) => void;
  readonly handleToolError: (error: unknown, runId: string) => void;
  readonly handleRetrieverEnd: (documents: unknown, runId: string) => void;
  readonly handleRetrieverError: (error: unknown, runId: string) => void;

  constructor(options: InstrumentOptions) {
    const tracker = (options as { tracker?: unknown } | null | undefined)?.tracker;
    if (typeof (tracker as { track?: unknown } | null | undefined)?.track !== "function") {
      throw new TypeError("new CosttrackCallbackHandler({ tracker }): tracker must be a costtrack Tracker");
    }
    const { tracker: _tracker, ...defaults } = options;
    const settings: Settings = { tracker: tracker as TrackerLike, defaults };
    const runs = new Map<string, Call>();
    const roots = new Map<string, string>(); // each run in progress -> the outermost run it is in
    // The run's root: its parent's root (a parent this handler never saw is the root).
    const enter = (runId: string, parentRunId: unknown): string => {
      const parent = typeof parentRunId === "string" && parentRunId !== "" ? parentRunId : undefined;
      const root = parent === undefined ? runId : (roots.get(parent) ?? parent);
      if (roots.size >= MAX_RUNS) {
        const oldest = roots.keys().next().value;
        if (oldest !== undefined) roots.delete(oldest);
      }
      roots.set(runId, root);
      return root;
    };
    // A run ended: forgotten; when it is a root, so is every run under it still remembered.
    const leave = (runId: string): void => {
      const root = roots.get(runId);
      roots.delete(runId);
      if (root !== runId) return;
      for (const [run, itsRoot] of roots) if (itsRoot === runId) roots.delete(run);
    };
    // LangChain's callback manager passes a chain's parent run id fourth, as for the other runs
    // (not where BaseCallbackHandler's declaration puts it).
    this.handleChainStart = (_chain, _inputs, runId, parentRunId) => void enter(runId, parentRunId);
    this.handleToolStart = (_tool, _input, runId, parentRunId) => void enter(runId, parentRunId);
    this.handleRetrieverStart = (_retriever, _query, runId, parentRunId) => void enter(runId, parentRunId);
    this.handleChainEnd = this.handleChainError = this.handleToolEnd = this.handleToolError = (_output, runId) => leave(runId);
    this.handleRetrieverEnd = this.handleRetrieverError = (_output, runId) => leave(runId);
    // Own properties (not prototype methods): LangChain copies a handler's own methods.
    const begin = (runId: string, parentRunId: unknown, extraParams: unknown, metadata: unknown): void => {
      try {
        if (runs.size >= MAX_RUNS) {
          const oldest = runs.keys().next().value;
          if (oldest !== undefined) runs.delete(oldest);
        }
        const root = enter(runId, parentRunId);
        // A model run on its own is a call, not a run: no traceId of its own id.
        const identity = root === runId ? undefined : runIdentity(root, parentRunId as string);
        const named = text(metadata, "ls_provider");
        const provider = named === undefined ? undefined : langChainProvider(named);
        // The provider: the handler's options, else the message's model_provider, else ls_provider.
        const read = (output: unknown, extra: HelperOptions): TrackOptions => langChainEvent(output, extra, provider);
        runs.set(runId, new Call(settings, provider ?? "", requested(extraParams, metadata), read, identity));
      } catch {
        // never in the way
      }
    };
    this.handleLLMStart = (_llm, _prompts, runId, parent, extraParams, _tags, metadata) => begin(runId, parent, extraParams, metadata);
    this.handleChatModelStart = (_llm, _messages, runId, parent, extraParams, _tags, metadata) => begin(runId, parent, extraParams, metadata);
    this.handleLLMEnd = (output, runId) => {
      const call = runs.get(runId);
      runs.delete(runId);
      leave(runId);
      call?.finish("success", output);
    };
    this.handleLLMError = (error, runId) => {
      const call = runs.get(runId);
      runs.delete(runId);
      leave(runId);
      call?.fail(error);
    };
  }
}
