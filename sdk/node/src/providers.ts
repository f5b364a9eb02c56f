// Build TrackOptions from provider responses, so token counts are mapped once, correctly.
//
// The rule that matters (interface.md §1): never count the same tokens twice.
// - OpenAI, Anthropic and Bedrock count reasoning/thinking tokens inside their output count, so
//   `reasoningTokens` is left out for them.
// - Gemini reports thoughts separately from the candidates, so they go in `reasoningTokens`.
// - Cached input: OpenAI and Gemini include it in the prompt count; Anthropic and Bedrock report
//   cache reads and writes beside the input count. Each goes to the field of the same meaning and
//   the service applies the provider's convention (CONTRACT.md §6).
// - `totalTokens` is passed only when the provider reports it; otherwise the service computes it.
//
// The helpers never throw: an unexpected shape yields fewer fields, and track() reports anything
// missing (such as the model) through onError.

import type { TrackOptions } from "./types.js";

type Count = number | null | undefined;

/** The part of an OpenAI Chat Completions or Responses API result the helper reads. */
interface OpenAILikeResponse {
  model?: string | null | undefined;
  usage?:
    | {
        // Chat Completions
        prompt_tokens?: Count;
        completion_tokens?: Count;
        total_tokens?: Count;
        prompt_tokens_details?: { cached_tokens?: Count } | null | undefined;
        completion_tokens_details?: { reasoning_tokens?: Count } | null | undefined;
        // Responses API
        input_tokens?: Count;
        output_tokens?: Count;
        input_tokens_details?: { cached_tokens?: Count } | null | undefined;
        output_tokens_details?: { reasoning_tokens?: Count } | null | undefined;
      }
    | null
    | undefined;
}

/** The part of an Anthropic Messages API result the helper reads. */
interface AnthropicLikeMessage {
  model?: string | null | undefined;
  usage?:
    | {
        input_tokens?: Count;
        output_tokens?: Count;
        cache_read_input_tokens?: Count;
        cache_creation_input_tokens?: Count;
        cache_creation?: { ephemeral_5m_input_tokens?: Count; ephemeral_1h_input_tokens?: Count } | null;
      }
    | null
    | undefined;
}

/** The part of a Gemini generateContent result (Gemini API or Vertex AI) the helper reads. */
interface GeminiLikeResponse {
  modelVersion?: string | null | undefined;
  usageMetadata?:
    | {
        promptTokenCount?: Count;
        candidatesTokenCount?: Count;
        thoughtsTokenCount?: Count;
        cachedContentTokenCount?: Count;
        toolUsePromptTokenCount?: Count;
        totalTokenCount?: Count;
      }
    | null
    | undefined;
}

/** The part of a Bedrock Converse result (or a ConverseStream `metadata` event) the helper reads. */
interface BedrockConverseLikeResponse {
  usage?:
    | {
        inputTokens?: Count;
        outputTokens?: Count;
        totalTokens?: Count;
        cacheReadInputTokens?: Count;
        cacheWriteInputTokens?: Count;
      }
    | null
    | undefined;
  metrics?: { latencyMs?: Count } | null | undefined;
}

type Extra = Partial<TrackOptions>;
// What a helper read from the response; a field it could not find is undefined.
type Fields = { [K in keyof TrackOptions]?: TrackOptions[K] | undefined };

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
}

function read(source: unknown, ...path: string[]): unknown {
  let value: unknown = source;
  for (const key of path) {
    const object = record(value);
    if (object === undefined) return undefined;
    value = object[key];
  }
  return value;
}

function count(source: unknown, ...path: string[]): number | undefined {
  const value = read(source, ...path);
  return typeof value === "number" ? value : undefined;
}

function text(source: unknown, ...path: string[]): string | undefined {
  const value = read(source, ...path);
  return typeof value === "string" ? value : undefined;
}

function sum(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : a + b;
}

// Undefined entries are left out, so `extra` can override anything and add the rest
// (feature, customerId, latencyMs, metadata, ...), and an explicit `undefined` overrides nothing.
function build(base: Fields, extra: Extra | undefined): TrackOptions {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) if (value !== undefined) result[key] = value;
  if (extra !== undefined && extra !== null) {
    for (const [key, value] of Object.entries(extra)) if (value !== undefined) result[key] = value;
    // Metadata the helper read (cache_write_1h_tokens) and the caller's are merged; the caller's wins.
    const derived = record(base.metadata);
    const given = record(extra.metadata);
    if (derived && given) result.metadata = { ...derived, ...given };
  }
  return result as unknown as TrackOptions;
}

function safely(provider: string, base: () => Fields, extra: Extra | undefined): TrackOptions {
  let fields: Fields;
  try {
    fields = { provider, ...base() };
  } catch {
    // A response object whose getters throw: keep what is certain.
    fields = { provider };
  }
  try {
    return build(fields, extra);
  } catch {
    return build(fields, undefined);
  }
}

/**
 * From an OpenAI Chat Completions result (also the last chunk of a stream with
 * `stream_options: { include_usage: true }`) or a Responses API result. Provider `openai`;
 * pass `{ provider: "azure" }` for Azure OpenAI. Reasoning tokens are already part of the output
 * count, so they are not passed again.
 */
export function fromOpenAI(response: OpenAILikeResponse, extra?: Extra): TrackOptions {
  return safely("openai", () => {
    const usage = read(response, "usage");
    const responsesApi = count(usage, "input_tokens") !== undefined || count(usage, "output_tokens") !== undefined;
    return responsesApi
      ? {
          model: text(response, "model"),
          promptTokens: count(usage, "input_tokens"),
          completionTokens: count(usage, "output_tokens"),
          totalTokens: count(usage, "total_tokens"),
          cachedInputTokens: count(usage, "input_tokens_details", "cached_tokens"),
        }
      : {
          model: text(response, "model"),
          promptTokens: count(usage, "prompt_tokens"),
          completionTokens: count(usage, "completion_tokens"),
          totalTokens: count(usage, "total_tokens"),
          cachedInputTokens: count(usage, "prompt_tokens_details", "cached_tokens"),
        };
  }, extra);
}

/**
 * From an Anthropic Messages API result (for a stream: `await stream.finalMessage()`).
 * `input_tokens` excludes cache reads and writes, which go to `cachedInputTokens` and
 * `cacheWriteTokens`; thinking tokens are inside `output_tokens`, so no `reasoningTokens`.
 * Writes to the one-hour cache, which cost more than five-minute ones, go in
 * `metadata.cache_write_1h_tokens` (the service prices them at their own rate).
 */
export function fromAnthropic(message: AnthropicLikeMessage, extra?: Extra): TrackOptions {
  return safely(
    "anthropic",
    () => {
      const oneHour = count(message, "usage", "cache_creation", "ephemeral_1h_input_tokens");
      return {
        model: text(message, "model"),
        promptTokens: count(message, "usage", "input_tokens"),
        completionTokens: count(message, "usage", "output_tokens"),
        cachedInputTokens: count(message, "usage", "cache_read_input_tokens"),
        cacheWriteTokens: count(message, "usage", "cache_creation_input_tokens"),
        metadata: oneHour ? { cache_write_1h_tokens: oneHour } : undefined,
      };
    },
    extra,
  );
}

/**
 * From a Gemini `generateContent` result (Gemini API or Vertex AI; for a stream, the last chunk).
 * Provider `google`, model from `modelVersion` (override with `{ model }`). Thoughts are billed
 * as output but reported apart from the candidates, so they go in `reasoningTokens`; tool-use
 * prompt tokens are input and are added to `promptTokens`, as Gemini's total counts them.
 */
export function fromGemini(response: GeminiLikeResponse, extra?: Extra): TrackOptions {
  return safely("google", () => {
    const usage = read(response, "usageMetadata");
    return {
      model: text(response, "modelVersion"),
      promptTokens: sum(count(usage, "promptTokenCount"), count(usage, "toolUsePromptTokenCount")),
      completionTokens: count(usage, "candidatesTokenCount"),
      reasoningTokens: count(usage, "thoughtsTokenCount"),
      cachedInputTokens: count(usage, "cachedContentTokenCount"),
      totalTokens: count(usage, "totalTokenCount"),
    };
  }, extra);
}

/**
 * From a Bedrock Runtime Converse result (or the `metadata` event of ConverseStream). The
 * response does not name the model, so pass the `modelId` you called as `model`. Provider
 * `bedrock`; the latency Bedrock measured becomes `latencyMs` unless you pass one.
 */
export function fromBedrockConverse(
  response: BedrockConverseLikeResponse,
  extra: Extra & { model: string },
): TrackOptions {
  return safely(
    "bedrock",
    () => ({
      promptTokens: count(response, "usage", "inputTokens"),
      completionTokens: count(response, "usage", "outputTokens"),
      totalTokens: count(response, "usage", "totalTokens"),
      cachedInputTokens: count(response, "usage", "cacheReadInputTokens"),
      cacheWriteTokens: count(response, "usage", "cacheWriteInputTokens"),
      latencyMs: count(response, "metrics", "latencyMs"),
    }),
    extra,
  );
}
