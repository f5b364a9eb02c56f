// Build TrackOptions from provider responses, so token counts are mapped once, correctly.
//
// The rule that matters (docs/api-rules.md#cost): never count the same tokens twice.
// - OpenAI, Anthropic and Bedrock count reasoning/thinking tokens inside their output count, so
//   `reasoningTokens` is left out for them.
// - Gemini reports thoughts separately from the candidates, so they go in `reasoningTokens`.
// - Cached input: OpenAI and Gemini include it in the prompt count; Anthropic and Bedrock report
//   cache reads and writes beside the input count. Each goes to the field of the same meaning and
//   the service applies the provider's convention (docs/api-rules.md#cost).
// - `totalTokens` is passed only when the provider reports it; otherwise the service computes it.
//
// What the price depends on beyond the five token counts travels in `metadata` under the
// reserved names of docs/api-rules.md#cost (genai-prices' own names): the pricing context
// (`service_tier`, `processing`, `speed`) and extra counts (`cache_write_1h_tokens`,
// `input_audio_tokens`, `web_searches`, ...). They are merged with the caller's `metadata`, whose
// keys win. A count of 0 is left out (it prices as an absent one), and so is a count that the
// response itself contradicts (larger than the count it is part of): a helper never builds an
// event that the service would refuse.
//
// The helpers never throw: an unexpected shape yields fewer fields, and track() reports anything
// missing (such as the model) through onError.

import type { TrackOptions } from "./types.js";
import { namedProvider, safely, type Count, type HelperOptions, type Text } from "./provider-read.js";
import { anthropicFields, bedrockFields, geminiFields, openAIFields } from "./provider-usage.js";

export type { HelperOptions } from "./provider-read.js";
export { fromVercelAI, vercelProvider } from "./vercel.js";

/** The part of an OpenAI Chat Completions or Responses API result the helper reads. */
interface OpenAILikeResponse {
  model?: Text;
  service_tier?: Text;
  usage?:
    | {
        // Chat Completions
        prompt_tokens?: Count;
        completion_tokens?: Count;
        total_tokens?: Count;
        prompt_tokens_details?:
          | { cached_tokens?: Count; cache_write_tokens?: Count; audio_tokens?: Count }
          | null
          | undefined;
        completion_tokens_details?: { reasoning_tokens?: Count; audio_tokens?: Count } | null | undefined;
        // DeepSeek
        prompt_cache_hit_tokens?: Count;
        prompt_cache_miss_tokens?: Count;
        // Responses API
        input_tokens?: Count;
        output_tokens?: Count;
        input_tokens_details?: { cached_tokens?: Count; cache_write_tokens?: Count; audio_tokens?: Count } | null | undefined;
        output_tokens_details?: { reasoning_tokens?: Count; audio_tokens?: Count } | null | undefined;
      }
    | null
    | undefined;
}

/** The part of an Anthropic Messages API result the helper reads. */
interface AnthropicLikeMessage {
  model?: Text;
  usage?:
    | {
        input_tokens?: Count;
        output_tokens?: Count;
        cache_read_input_tokens?: Count;
        cache_creation_input_tokens?: Count;
        cache_creation?: { ephemeral_5m_input_tokens?: Count; ephemeral_1h_input_tokens?: Count } | null;
        server_tool_use?: { web_search_requests?: Count } | null;
        service_tier?: Text;
        speed?: Text;
      }
    | null
    | undefined;
}

interface ModalityTokenCount {
  modality?: Text;
  tokenCount?: Count;
}

/** The part of a Gemini generateContent result (Gemini API or Vertex AI) the helper reads. */
interface GeminiLikeResponse {
  modelVersion?: Text;
  serviceTier?: Text;
  sdkHttpResponse?: { headers?: Record<string, string> | null | undefined } | null | undefined;
  usageMetadata?:
    | {
        promptTokenCount?: Count;
        candidatesTokenCount?: Count;
        thoughtsTokenCount?: Count;
        cachedContentTokenCount?: Count;
        toolUsePromptTokenCount?: Count;
        totalTokenCount?: Count;
        promptTokensDetails?: readonly ModalityTokenCount[] | null | undefined;
        toolUsePromptTokensDetails?: readonly ModalityTokenCount[] | null | undefined;
        cacheTokensDetails?: readonly ModalityTokenCount[] | null | undefined;
        candidatesTokensDetails?: readonly ModalityTokenCount[] | null | undefined;
        serviceTier?: Text;
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
        cacheDetails?: readonly { ttl?: Text; inputTokens?: Count }[] | null | undefined;
      }
    | null
    | undefined;
  metrics?: { latencyMs?: Count } | null | undefined;
  serviceTier?: { type?: Text } | null | undefined;
}

/**
 * From an OpenAI Chat Completions result (also the last chunk of a stream with
 * `stream_options: { include_usage: true }`) or a Responses API result. Provider `openai`; pass
 * `{ provider: "azure" }` for Azure OpenAI (or `"deepseek"`, `"groq"`, `"xai"`, ... for other
 * OpenAI-compatible APIs). Reasoning tokens are already part of the output count, so they are
 * not passed again.
 *
 * In `metadata`: `service_tier` (the tier that served the request), `input_audio_tokens` and
 * `output_audio_tokens` (`*_tokens_details.audio_tokens`), and `processing: "batch"` when you
 * pass `{ processing: "batch" }` for a result of the Batch API; `reported_cost` from OpenRouter's
 * `usage.cost` (a decimal string, for comparison with costtrack's price, never used as it). DeepSeek's
 * `prompt_cache_hit_tokens` is the cached input when `prompt_tokens_details` is absent.
 */
export function fromOpenAI(response: OpenAILikeResponse, extra?: HelperOptions): TrackOptions {
  const provider = namedProvider(extra, "openai");
  return safely("openai", () => openAIFields(response, provider), extra);
}

/**
 * From an Anthropic Messages API result (for a stream: `await stream.finalMessage()`; for a
 * batch: each result's `result.message`). `input_tokens` excludes cache reads and writes, which
 * go to `cachedInputTokens` and `cacheWriteTokens`; thinking tokens are inside `output_tokens`,
 * so no `reasoningTokens`.
 *
 * In `metadata`: `cache_write_1h_tokens` / `cache_write_5m_tokens` (`usage.cache_creation`, parts
 * of `cacheWriteTokens`; one-hour writes cost more), `web_searches`
 * (`usage.server_tool_use.web_search_requests`), `service_tier` (`usage.service_tier`; `"batch"`
 * also gives `processing: "batch"`) and `speed` (`usage.speed`).
 */
export function fromAnthropic(message: AnthropicLikeMessage, extra?: HelperOptions): TrackOptions {
  return safely("anthropic", () => anthropicFields(message), extra);
}

/**
 * From a Gemini `generateContent` result (`@google/genai`, Gemini API or Vertex AI; for a stream,
 * the last chunk). Provider `google`, model from `modelVersion` (override with `{ model }`).
 * Thoughts are billed as output but reported apart from the candidates, so they go in
 * `reasoningTokens`; tool-use prompt tokens are input and are added to `promptTokens`, as
 * Gemini's total counts them.
 *
 * In `metadata`, per modality (summed; `DOCUMENT` counts as `IMAGE`, as genai-prices prices it;
 * text is not passed): `promptTokensDetails` and `toolUsePromptTokensDetails` → `input_audio_tokens`,
 * `input_image_tokens`, `input_video_tokens`; `cacheTokensDetails` → `cache_audio_read_tokens`,
 * `cache_image_read_tokens`, `cache_video_read_tokens`; `candidatesTokensDetails` →
 * `output_audio_tokens`, `output_image_tokens`, `output_video_tokens`. And `service_tier` from the
 * `x-gemini-service-tier` response header (`sdkHttpResponse.headers`) or `usageMetadata.serviceTier`.
 */
export function fromGemini(response: GeminiLikeResponse, extra?: HelperOptions): TrackOptions {
  return safely("google", () => geminiFields(response), extra);
}

/**
 * From a Bedrock Runtime Converse result (or the `metadata` event of ConverseStream). The
 * response does not name the model, so pass the `modelId` you called as `model`, exactly as
 * called (an inference profile such as `us.anthropic.claude-sonnet-4-5-20250929-v1:0` is priced
 * apart from the global one). Provider `bedrock`; the latency Bedrock measured becomes
 * `latencyMs` unless you pass one.
 *
 * In `metadata`: `cache_write_5m_tokens` / `cache_write_1h_tokens` (`usage.cacheDetails`, parts of
 * `cacheWriteTokens`) and `service_tier` (`serviceTier.type`).
 */
export function fromBedrockConverse(
  response: BedrockConverseLikeResponse,
  extra: HelperOptions & { model: string },
): TrackOptions {
  return safely("bedrock", () => bedrockFields(response), extra);
}
