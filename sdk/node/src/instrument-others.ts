// Google's `@google/genai` (Gemini API and Vertex AI) and the AWS SDK v3 Bedrock Runtime client.

import { routeOf, type Route } from "./conventions.js";
import { Call, requestedModel, send, watchIterator, type Settings, type StreamWatch } from "./instrument-call.js";
import { fromBedrockConverse, fromGemini } from "./providers.js";
import { read, record } from "./provider-read.js";
import type { HelperOptions } from "./provider-read.js";

type Method = (this: unknown, ...args: unknown[]) => unknown;

// -- Google ------------------------------------------------------------------------------------

/** `models.generateContent`: a promise of the response. */
export function generateContent(settings: Settings, provider: Route, original: Method): Method {
  return function generate(this: unknown, ...args: unknown[]): unknown {
    const call = new Call(settings, provider, requestedModel(args[0]), fromGemini);
    const result = send(call, original, this, args, read(args[0], "config", "abortSignal"));
    if (typeof record(result)?.["then"] !== "function") return result;
    return (result as PromiseLike<unknown>).then(
      (response) => {
        call.finish("success", response);
        return response;
      },
      (error: unknown) => {
        throw call.fail(error);
      },
    );
  };
}

/**
 * `models.embedContent`: Vertex AI counts the input (`usageMetadata`, or each embedding's
 * `statistics.tokenCount`); the Gemini API reports none, so its call is tracked as
 * `usage_missing` (`not_reported`).
 */
export function embedContent(settings: Settings, provider: Route, original: Method): Method {
  return function embed(this: unknown, ...args: unknown[]): unknown {
    const call = new Call(settings, provider, requestedModel(args[0]), fromGemini);
    const result = send(call, original, this, args, read(args[0], "config", "abortSignal"));
    if (typeof record(result)?.["then"] !== "function") return result;
    return (result as PromiseLike<unknown>).then(
      (response) => {
        if (record(read(response, "usageMetadata")) !== undefined) {
          call.finish("success", response);
          return response;
        }
        const embeddings = read(response, "embeddings");
        const counts = Array.isArray(embeddings) ? embeddings.map((e) => read(e, "statistics", "tokenCount")) : [];
        if (counts.length > 0 && counts.every((n) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0)) {
          const promptTokenCount = (counts as number[]).reduce((a, b) => a + b, 0);
          call.finish("success", { usageMetadata: { promptTokenCount, candidatesTokenCount: 0 } });
        } else {
          call.finish("success", undefined, "not_reported");
        }
        return response;
      },
      (error: unknown) => {
        throw call.fail(error);
      },
    );
  };
}

function geminiWatch(call: Call): StreamWatch {
  let usage: unknown;
  let model: unknown;
  // A candidate's `finishReason` with the usage: the answer is complete (and billed).
  let complete = false;
  return {
    item(chunk) {
      model = read(chunk, "modelVersion") ?? model;
      if (record(read(chunk, "usageMetadata")) !== undefined) usage = chunk;
      const candidates = read(chunk, "candidates");
      if (Array.isArray(candidates) && candidates.some((c) => typeof read(c, "finishReason") === "string")) complete = true;
      return true;
    },
    end: () => call.finish("success", usage ?? { modelVersion: model }, usage === undefined),
    stop: (status) => call.finish(complete && usage !== undefined && status === "cancelled" ? "success" : status, usage ?? { modelVersion: model }),
  };
}

/** `models.generateContentStream`: a promise of an async generator, watched in place. */
export function generateContentStream(settings: Settings, provider: Route, original: Method): Method {
  return function generateStream(this: unknown, ...args: unknown[]): unknown {
    const call = new Call(settings, provider, requestedModel(args[0]), fromGemini);
    const result = send(call, original, this, args, read(args[0], "config", "abortSignal"));
    if (typeof record(result)?.["then"] !== "function") return result;
    return (result as PromiseLike<unknown>).then(
      (stream) => {
        if (typeof record(stream)?.["next"] !== "function") {
          call.finish("success");
          return stream;
        }
        return watchIterator(stream as object, geminiWatch(call));
      },
      (error: unknown) => {
        throw call.fail(error);
      },
    );
  };
}

// -- Bedrock Runtime (AWS SDK v3) --------------------------------------------------------------

export const BEDROCK_MIDDLEWARE = "costtrackInstrumentation";

const readConverse = (data: unknown, extra: HelperOptions): ReturnType<typeof fromBedrockConverse> =>
  fromBedrockConverse(data as Parameters<typeof fromBedrockConverse>[0], extra as HelperOptions & { model: string });

function converseWatch(call: Call): StreamWatch {
  let metadata: unknown;
  let stopped = false;
  return {
    item(event) {
      const found = read(event, "metadata");
      if (record(found) !== undefined) metadata = found;
      if (record(read(event, "messageStop")) !== undefined) stopped = true;
      return true;
    },
    pending: () => stopped && metadata === undefined,
    end: () => call.finish("success", metadata, metadata === undefined),
    // The metadata event comes after messageStop: once seen, the call is complete.
    stop: (status) => call.finish(metadata !== undefined && status === "cancelled" ? "success" : status, metadata),
  };
}

/** InvokeModel's counts, from its response headers (`x-amzn-bedrock-*-token-count`). */
function invokeUsage(headers: unknown): unknown {
  const number = (name: string): number | undefined => {
    const value = read(headers, `x-amzn-bedrock-${name}`);
    const parsed = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : undefined;
    return parsed !== undefined && Number.isSafeInteger(parsed) ? parsed : undefined;
  };
  const inputTokens = number("input-token-count");
  const outputTokens = number("output-token-count");
  if (inputTokens === undefined && outputTokens === undefined) return undefined;
  return {
    usage: {
      inputTokens,
      outputTokens,
      cacheReadInputTokens: number("cache-read-input-token-count"),
      cacheWriteInputTokens: number("cache-write-input-token-count"),
    },
  };
}

/** InvokeModelWithResponseStream: the last chunk's `amazon-bedrock-invocationMetrics` has the counts. */
function invokeStreamWatch(call: Call): StreamWatch {
  let usage: unknown;
  const decoder = new TextDecoder();
  return {
    item(event) {
      const bytes = read(event, "chunk", "bytes");
      if (!(bytes instanceof Uint8Array)) return true;
      const text = decoder.decode(bytes);
      if (!text.includes("amazon-bedrock-invocationMetrics")) return true;
      const metrics = read(JSON.parse(text), "amazon-bedrock-invocationMetrics");
      if (record(metrics) !== undefined) {
        usage = {
          usage: {
            inputTokens: read(metrics, "inputTokenCount"),
            outputTokens: read(metrics, "outputTokenCount"),
            cacheReadInputTokens: read(metrics, "cacheReadInputTokenCount"),
            cacheWriteInputTokens: read(metrics, "cacheWriteInputTokenCount"),
          },
        };
      }
      return true;
    },
    end: () => call.finish("success", usage, usage === undefined),
    stop: (status) => call.finish(usage !== undefined && status === "cancelled" ? "success" : status, usage),
  };
}

/** An event stream of the output (an iterator or an iterable), watched in place. */
function watchOutputStream(stream: unknown, watch: () => StreamWatch, call: Call): void {
  const target = record(stream);
  if (target === undefined) return call.finish("success");
  if (typeof target["next"] === "function") {
    watchIterator(target, watch());
    return;
  }
  const iterate = target[Symbol.asyncIterator as unknown as string];
  if (typeof iterate !== "function") return call.finish("success");
  (target as Record<symbol, unknown>)[Symbol.asyncIterator] = function watchedEvents(this: unknown): unknown {
    const iterator = (iterate as Method).call(this);
    return typeof record(iterator)?.["next"] === "function" ? watchIterator(iterator as object, watch()) : iterator;
  };
}

const BEDROCK_COMMANDS = new Set(["ConverseCommand", "ConverseStreamCommand", "InvokeModelCommand", "InvokeModelWithResponseStreamCommand"]);

interface MiddlewareArgs {
  input?: unknown;
}
interface MiddlewareContext {
  commandName?: string;
}
type Next = (args: MiddlewareArgs) => Promise<{ output?: unknown; response?: unknown }>;

/** The initialize-step middleware that tracks Converse, ConverseStream, InvokeModel and its stream. */
export function bedrockMiddleware(settings: () => Settings | undefined) {
  return (next: Next, context: MiddlewareContext) =>
    async (args: MiddlewareArgs): Promise<{ output?: unknown; response?: unknown }> => {
      const command = context?.commandName;
      const current = settings();
      if (current === undefined || command === undefined || !BEDROCK_COMMANDS.has(command)) return next(args);
      const call = new Call(current, routeOf("BedrockRuntimeClient", command, "bedrock"), requestedModel(args?.input, "modelId"), readConverse);
      let result: { output?: unknown; response?: unknown };
      try {
        result = await next(args);
      } catch (error) {
        throw call.fail(error);
      }
      try {
        if (command === "ConverseCommand") call.finish("success", result?.output);
        else if (command === "ConverseStreamCommand") watchOutputStream(read(result, "output", "stream"), () => converseWatch(call), call);
        else if (command === "InvokeModelCommand") {
          const usage = invokeUsage(read(result, "response", "headers"));
          call.finish("success", usage, usage === undefined);
        } else watchOutputStream(read(result, "output", "body"), () => invokeStreamWatch(call), call);
      } catch {
        // never in the way
      }
      return result;
    };
}
