// The Vercel AI SDK (`ai`) integration, entry point `costtrack/ai-sdk`: a language-model
// middleware for `wrapLanguageModel` that tracks every model call (each step of a tool loop, each
// `generateText`, `streamText`, `generateObject`, ...) as one event. The model's own usage (the
// provider's LanguageModelV2/V3/V4 shape) is turned into the AI SDK's result shape and read by
// fromVercelAI, so the provider conventions are undone in one place. Nothing of `ai` is imported.

import { ReadableStream, type ReadableStreamReadResult } from "node:stream/web";

import { Call, type Settings, type TrackerLike } from "./instrument-call.js";
import type { InstrumentOptions } from "./instrument.js";
import { read, record, text } from "./provider-read.js";
import type { CallStatus } from "./types.js";
import { fromVercelAI, vercelProvider } from "./vercel.js";

/** The part of an AI SDK language model the middleware reads. */
interface ModelLike {
  readonly provider: string;
  readonly modelId: string;
}

/**
 * A middleware for the AI SDK's `wrapLanguageModel` (AI SDK 5, 6 and 7). Typed loosely so that
 * it fits each version's `LanguageModelMiddleware` without importing any of them.
 */
export interface CosttrackMiddleware {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each AI SDK version has its own result type
  wrapGenerate(options: { doGenerate: () => PromiseLike<any>; model: ModelLike }): Promise<any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each AI SDK version has its own stream type
  wrapStream(options: { doStream: () => PromiseLike<any>; model: ModelLike }): Promise<any>;
}

/** What one model call said about itself: its usage, provider metadata and response. */
interface Outcome {
  model: ModelLike;
  usage: unknown;
  providerMetadata: unknown;
  response: unknown;
}

/**
 * The model's usage in the AI SDK's result shape: LanguageModelV3/V4's
 * `{ inputTokens: { total, noCache, cacheRead, cacheWrite }, outputTokens: { total, text, reasoning }, raw }`
 * becomes what `generateText` returns (AI SDK 6 and 7 do the same); LanguageModelV2's flat usage
 * (AI SDK 5) is already that shape.
 */
export function resultUsage(usage: unknown): unknown {
  const input = record(read(usage, "inputTokens"));
  const output = record(read(usage, "outputTokens"));
  if (input === undefined && output === undefined) return usage;
  return {
    inputTokens: input?.["total"],
    inputTokenDetails: { noCacheTokens: input?.["noCache"], cacheReadTokens: input?.["cacheRead"], cacheWriteTokens: input?.["cacheWrite"] },
    outputTokens: output?.["total"],
    outputTokenDetails: { textTokens: output?.["text"], reasoningTokens: output?.["reasoning"] },
    raw: read(usage, "raw"),
  };
}

/** One call's outcome as a step of an AI SDK result, for fromVercelAI. */
function asStep(outcome: Outcome): unknown {
  const response = record(outcome.response);
  return {
    usage: resultUsage(outcome.usage),
    providerMetadata: outcome.providerMetadata,
    response: { modelId: text(response, "modelId"), body: response?.["body"], headers: response?.["headers"] },
    model: { provider: outcome.model.provider, modelId: outcome.model.modelId },
  };
}

function start(settings: Settings, model: ModelLike): Call {
  let provider = "";
  let modelId: string | undefined;
  try {
    const named = vercelProvider(String(model.provider), typeof model.modelId === "string" ? model.modelId : undefined);
    provider = named.provider;
    modelId = named.model;
  } catch {
    // a model without a provider id: the defaults (or track()) must name it
  }
  return new Call(settings, provider, modelId, (outcome: Outcome, extra) => fromVercelAI(asStep(outcome) as never, extra));
}

/**
 * The model's stream, part for part, watched: `response-metadata` gives the model, `finish` the
 * usage; the call is tracked when the stream ends (`success`, or `error` after an error part),
 * fails (its status from the error) or is cancelled by its reader (`cancelled`).
 */
function watchStream(stream: ReadableStream<unknown>, call: Call, model: ModelLike, response: unknown): ReadableStream<unknown> {
  const reader = stream.getReader();
  const seen: Outcome = { model, usage: undefined, providerMetadata: undefined, response: { ...record(response) } };
  let failed = false;
  const end = (status: CallStatus): void => call.finish(status, seen.usage === undefined ? undefined : seen);
  const see = (part: unknown): void => {
    try {
      const type = read(part, "type");
      if (type === "finish") {
        seen.usage = read(part, "usage");
        seen.providerMetadata = read(part, "providerMetadata");
      } else if (type === "response-metadata") {
        const modelId = text(part, "modelId");
        if (modelId !== undefined) (seen.response as Record<string, unknown>)["modelId"] = modelId;
      } else if (type === "error") {
        failed = true;
      }
    } catch {
      // never in the way
    }
  };
  return new ReadableStream<unknown>(
    {
      async pull(controller) {
        let result: ReadableStreamReadResult<unknown>;
        try {
          result = await reader.read();
        } catch (error) {
          call.fail(error);
          throw error;
        }
        if (result.done === true) {
          end(failed ? "error" : "success");
          controller.close();
          return;
        }
        see(result.value);
        controller.enqueue(result.value);
      },
      cancel(reason) {
        end("cancelled");
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 }, // read from the model only when the AI SDK reads: its pace is unchanged
  );
}

/**
 * A Vercel AI SDK middleware that tracks every call of the model it wraps: one event per model
 * call (a tool loop's steps are one each), priced from the model's usage as `fromVercelAI` reads
 * it, with `latencyMs` (call to last part) and `status` (`success`, `error`, `timeout`,
 * `cancelled`). The other options are the defaults of every event, over those of an enclosing
 * `withAttributes()`. Results, errors and stream parts are the model's own.
 *
 * ```ts
 * import { wrapLanguageModel, generateText } from "ai";
 * import { costtrackMiddleware } from "costtrack/ai-sdk";
 * const model = wrapLanguageModel({ model: openai("gpt-5"), middleware: costtrackMiddleware({ tracker }) });
 * ```
 */
export function costtrackMiddleware(options: InstrumentOptions): CosttrackMiddleware {
  const tracker = (options as { tracker?: unknown } | null | undefined)?.tracker;
  if (typeof (tracker as { track?: unknown } | null | undefined)?.track !== "function") {
    throw new TypeError("costtrackMiddleware({ tracker }): tracker must be a costtrack Tracker");
  }
  const { tracker: _tracker, ...defaults } = options;
  const settings: Settings = { tracker: tracker as TrackerLike, defaults };
  return {
    async wrapGenerate({ doGenerate, model }) {
      const call = start(settings, model);
      let result: unknown;
      try {
        result = await doGenerate();
      } catch (error) {
        throw call.fail(error);
      }
      const outcome: Outcome = { model, usage: read(result, "usage"), providerMetadata: read(result, "providerMetadata"), response: read(result, "response") };
      call.finish("success", outcome.usage === undefined ? undefined : outcome);
      return result;
    },
    async wrapStream({ doStream, model }) {
      const call = start(settings, model);
      let result: unknown;
      try {
        result = await doStream();
      } catch (error) {
        throw call.fail(error);
      }
      const found = record(result);
      const stream = found?.["stream"];
      if (found === undefined || typeof read(stream, "getReader") !== "function") {
        call.finish("success");
        return result;
      }
      try {
        return { ...found, stream: watchStream(stream as ReadableStream<unknown>, call, model, found["response"]) };
      } catch {
        return result;
      }
    },
  };
}
