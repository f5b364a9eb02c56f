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
import { PRICING_CONTEXT_MAX, NODE_NAMES, PRICING_COUNT_PARENTS, codePointLength, exceededParent, hasLoneSurrogate } from "./validation.js";

type Count = number | null | undefined;
type Text = string | null | undefined;

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
 * The part of a Vercel AI SDK (`ai`) result the helper reads: a `generateText` result, a
 * `streamText` `onFinish` event, or one step (`result.steps[i]`, an `onStepFinish` event).
 * `usage` is the shape of AI SDK 6 and 7 (`inputTokenDetails`, `outputTokenDetails`, `raw`) or of
 * AI SDK 5 (`reasoningTokens`, `cachedInputTokens`).
 */
interface VercelAILikeResult {
  usage?: VercelAIUsage | null | undefined;
  providerMetadata?: Record<string, unknown> | null | undefined;
  response?: { modelId?: Text } | null | undefined;
  model?: { provider?: Text; modelId?: Text } | null | undefined;
  steps?: readonly VercelAILikeResult[] | null | undefined;
}

interface VercelAIUsage {
  inputTokens?: Count;
  outputTokens?: Count;
  totalTokens?: Count;
  inputTokenDetails?: { noCacheTokens?: Count; cacheReadTokens?: Count; cacheWriteTokens?: Count } | null | undefined;
  outputTokenDetails?: { textTokens?: Count; reasoningTokens?: Count } | null | undefined;
  reasoningTokens?: Count;
  cachedInputTokens?: Count;
  raw?: unknown;
}

/**
 * The second argument of every helper: any event field, which wins over what the helper read
 * from the response (`metadata` is merged, the caller's keys winning), and `processing`.
 */
export type HelperOptions = Partial<TrackOptions> & {
  /**
   * `"batch"` for a result obtained through the provider's batch API (OpenAI's Batch API, Message
   * Batches, ...): sent as `metadata.processing`, which prices the batch discount.
   */
  processing?: string | null | undefined;
};

// What a helper read from the response; a field it could not find is undefined.
type Fields = { [K in keyof TrackOptions]?: TrackOptions[K] | undefined };
// Reserved metadata names read from the response (validated and merged by `finish`).
type Found = Record<string, unknown>;

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

/** A count usable in arithmetic: a safe non-negative integer, else undefined. */
function exact(source: unknown, ...path: string[]): number | undefined {
  const value = count(source, ...path);
  return value !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function text(source: unknown, ...path: string[]): string | undefined {
  const value = read(source, ...path);
  return typeof value === "string" ? value : undefined;
}

function sum(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : a + b;
}

function items(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A response header kept by the provider's SDK, in any casing (a plain object or a `Headers`). */
function header(headers: unknown, name: string): string | undefined {
  if (typeof (headers as { get?: unknown } | undefined)?.get === "function") {
    const value: unknown = (headers as { get(name: string): unknown }).get(name);
    return typeof value === "string" ? value : undefined;
  }
  const object = record(headers);
  if (object === undefined) return undefined;
  for (const key of Object.keys(object)) {
    if (key.toLowerCase() === name) return typeof object[key] === "string" ? (object[key] as string) : undefined;
  }
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isContext(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && !hasLoneSurrogate(value) && codePointLength(value) <= PRICING_CONTEXT_MAX;
}

/** Adds `value` to the count `name` of `found` (modalities can be reported in several entries). */
function add(found: Found, name: string, value: number | undefined): void {
  if (value === undefined) return;
  const before = found[name];
  found[name] = typeof before === "number" ? before + value : value;
}

// Undefined entries are left out, so `extra` can override anything and add the rest
// (feature, customerId, latencyMs, metadata, ...), and an explicit `undefined` overrides nothing.
function build(base: Fields, found: Found, extra: HelperOptions | undefined): TrackOptions {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) if (value !== undefined) result[key] = value;
  let given: unknown;
  let processing: unknown;
  if (extra !== undefined && extra !== null) {
    for (const [key, value] of Object.entries(extra)) {
      if (key === "processing") processing = value;
      else if (key === "metadata") given = value;
      else if (value !== undefined) result[key] = value;
    }
  }
  const hasGiven = given !== undefined && given !== null;
  if (hasGiven && (!isPlainObject(given) || typeof (given as Record<string, unknown>)["toJSON"] === "function")) {
    result["metadata"] = given; // not a plain object: sent (or reported by track()) exactly as given
    return result as unknown as TrackOptions;
  }
  // The caller's metadata (and `processing`) as given; what the response says, where valid.
  const callers: Record<string, unknown> = {};
  if (processing !== undefined && processing !== null) callers["processing"] = processing;
  if (hasGiven) Object.assign(callers, given);
  const merged: Record<string, unknown> = {};
  const derived = new Set<string>();
  for (const [name, value] of Object.entries(found)) {
    if (Object.prototype.hasOwnProperty.call(callers, name)) continue;
    const valid = PRICING_COUNT_PARENTS.has(name) ? isCount(value) && value > 0 : isContext(value);
    if (!valid) continue;
    merged[name] = value;
    derived.add(name);
  }
  Object.assign(merged, callers);
  // A count from the response that a parent contradicts is left out (and then so is any count
  // of its own), rather than making the whole event invalid. The caller's are kept as given.
  const event = (wire: string): unknown => result[NODE_NAMES.get(wire) ?? wire];
  for (let dropped = true; dropped; ) {
    dropped = false;
    for (const name of derived) {
      if (exceededParent(name, merged[name] as number, merged, event) !== undefined) {
        delete merged[name];
        derived.delete(name);
        dropped = true;
      }
    }
  }
  if (derived.size === 0 && (processing === undefined || processing === null)) {
    if (hasGiven) result["metadata"] = given; // nothing to add: the caller's object itself
  } else {
    result["metadata"] = merged;
  }
  return result as unknown as TrackOptions;
}

function safely(provider: string | undefined, base: () => [Fields, Found], extra: HelperOptions | undefined): TrackOptions {
  let fields: Fields;
  let found: Found;
  try {
    [fields, found] = base();
    fields = { provider, ...fields };
  } catch {
    // A response object whose getters throw: keep what is certain.
    fields = { provider };
    found = {};
  }
  try {
    return build(fields, found, extra);
  } catch {
    return build(fields, {}, undefined);
  }
}

/** The provider the caller named (for conventions that depend on it), lower-case. */
function namedProvider(extra: HelperOptions | undefined, fallback: string): string {
  try {
    const given: unknown = extra?.provider;
    return typeof given === "string" ? given.trim().toLowerCase() : fallback;
  } catch {
    return fallback;
  }
}

// -- OpenAI and OpenAI-compatible APIs ---------------------------------------------------------

/** Pricing context and extra counts of a Chat Completions or Responses API result. */
function openAIFound(response: unknown): Found {
  const usage = read(response, "usage");
  const responsesApi = read(usage, "input_tokens") !== undefined || read(usage, "output_tokens") !== undefined;
  return {
    service_tier: text(response, "service_tier"),
    input_audio_tokens: count(usage, responsesApi ? "input_tokens_details" : "prompt_tokens_details", "audio_tokens"),
    output_audio_tokens: count(usage, responsesApi ? "output_tokens_details" : "completion_tokens_details", "audio_tokens"),
  };
}

function openAIFields(response: unknown, provider: string): [Fields, Found] {
  const usage = read(response, "usage");
  const responsesApi = count(usage, "input_tokens") !== undefined || count(usage, "output_tokens") !== undefined;
  const promptDetails = read(usage, responsesApi ? "input_tokens_details" : "prompt_tokens_details");
  const completionDetails = read(usage, responsesApi ? "output_tokens_details" : "completion_tokens_details");
  let prompt = count(usage, responsesApi ? "input_tokens" : "prompt_tokens");
  let completion = count(usage, responsesApi ? "output_tokens" : "completion_tokens");
  // DeepSeek reports cache hits and misses beside prompt_tokens (which is their sum).
  const hits = count(usage, "prompt_cache_hit_tokens");
  const cached = count(promptDetails, "cached_tokens") ?? hits;
  if (prompt === undefined && !responsesApi) prompt = sum(hits, count(usage, "prompt_cache_miss_tokens"));
  if ((provider === "xai" || provider === "x-ai") && !responsesApi) {
    // xAI's Chat Completions count reasoning apart from completion_tokens (its total_tokens is
    // prompt + completion + reasoning), and its prompt_tokens can leave cached tokens out. Make
    // them the OpenAI convention, which prices right whichever convention the entry has.
    const reasoning = exact(completionDetails, "reasoning_tokens");
    if (reasoning !== undefined && completion !== undefined && Number.isSafeInteger(completion)) completion += reasoning;
    if (cached !== undefined && prompt !== undefined && cached > prompt) prompt += cached;
  }
  const found = openAIFound(response);
  const fields: Fields = {
    model: text(response, "model"),
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: count(usage, "total_tokens"),
    cachedInputTokens: cached,
    cacheWriteTokens: count(promptDetails, "cache_write_tokens"),
  };
  return [fields, found];
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
 * pass `{ processing: "batch" }` for a result of the Batch API. DeepSeek's
 * `prompt_cache_hit_tokens` is the cached input when `prompt_tokens_details` is absent.
 */
export function fromOpenAI(response: OpenAILikeResponse, extra?: HelperOptions): TrackOptions {
  const provider = namedProvider(extra, "openai");
  return safely("openai", () => openAIFields(response, provider), extra);
}

// -- Anthropic ---------------------------------------------------------------------------------

function anthropicFound(usage: unknown): Found {
  const tier = text(usage, "service_tier");
  return {
    service_tier: tier,
    processing: tier === "batch" ? "batch" : undefined, // Message Batches results say so
    speed: text(usage, "speed"),
    cache_write_1h_tokens: count(usage, "cache_creation", "ephemeral_1h_input_tokens"),
    cache_write_5m_tokens: count(usage, "cache_creation", "ephemeral_5m_input_tokens"),
    web_searches: count(usage, "server_tool_use", "web_search_requests"),
  };
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
  return safely(
    "anthropic",
    () => {
      const usage = read(message, "usage");
      const fields: Fields = {
        model: text(message, "model"),
        promptTokens: count(usage, "input_tokens"),
        completionTokens: count(usage, "output_tokens"),
        cachedInputTokens: count(usage, "cache_read_input_tokens"),
        cacheWriteTokens: count(usage, "cache_creation_input_tokens"),
      };
      return [fields, anthropicFound(usage)];
    },
    extra,
  );
}

// -- Gemini ------------------------------------------------------------------------------------

// Gemini's modalities → the genai-prices units they count in. A document's pages are priced as
// image tokens (as genai-prices' own Gemini extractor maps them); text is the default rate, so it
// is not passed.
const GEMINI_PROMPT_UNITS: Readonly<Record<string, string>> = { AUDIO: "input_audio_tokens", IMAGE: "input_image_tokens", VIDEO: "input_video_tokens" };
const GEMINI_CACHE_UNITS: Readonly<Record<string, string>> = {
  AUDIO: "cache_audio_read_tokens",
  IMAGE: "cache_image_read_tokens",
  VIDEO: "cache_video_read_tokens",
};
const GEMINI_OUTPUT_UNITS: Readonly<Record<string, string>> = { AUDIO: "output_audio_tokens", IMAGE: "output_image_tokens", VIDEO: "output_video_tokens" };

function modalities(found: Found, lists: readonly unknown[], units: Readonly<Record<string, string>>): void {
  for (const list of lists) {
    for (const item of items(list)) {
      let modality = text(item, "modality")?.toUpperCase();
      if (modality === "DOCUMENT") modality = "IMAGE";
      const unit = modality === undefined ? undefined : units[modality];
      const tokens = exact(item, "tokenCount");
      if (unit !== undefined && tokens !== undefined) add(found, unit, tokens);
    }
  }
}

function geminiFound(usage: unknown): Found {
  const found: Found = {};
  modalities(found, [read(usage, "promptTokensDetails"), read(usage, "toolUsePromptTokensDetails")], GEMINI_PROMPT_UNITS);
  modalities(found, [read(usage, "cacheTokensDetails")], GEMINI_CACHE_UNITS);
  modalities(found, [read(usage, "candidatesTokensDetails")], GEMINI_OUTPUT_UNITS);
  return found;
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
  return safely(
    "google",
    () => {
      const usage = read(response, "usageMetadata");
      const fields: Fields = {
        model: text(response, "modelVersion"),
        promptTokens: sum(count(usage, "promptTokenCount"), count(usage, "toolUsePromptTokenCount")),
        completionTokens: count(usage, "candidatesTokenCount"),
        reasoningTokens: count(usage, "thoughtsTokenCount"),
        cachedInputTokens: count(usage, "cachedContentTokenCount"),
        totalTokens: count(usage, "totalTokenCount"),
      };
      const found = geminiFound(usage);
      found["service_tier"] =
        header(read(response, "sdkHttpResponse", "headers"), "x-gemini-service-tier") ??
        text(usage, "serviceTier") ??
        text(response, "serviceTier");
      return [fields, found];
    },
    extra,
  );
}

// -- Bedrock -----------------------------------------------------------------------------------

function bedrockFound(usage: unknown): Found {
  const found: Found = {};
  for (const detail of items(read(usage, "cacheDetails"))) {
    const ttl = text(detail, "ttl");
    const name = ttl === "5m" ? "cache_write_5m_tokens" : ttl === "1h" ? "cache_write_1h_tokens" : undefined;
    const tokens = exact(detail, "inputTokens");
    if (name !== undefined && tokens !== undefined) add(found, name, tokens);
  }
  return found;
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
  return safely(
    "bedrock",
    () => {
      const usage = read(response, "usage");
      const fields: Fields = {
        promptTokens: count(usage, "inputTokens"),
        completionTokens: count(usage, "outputTokens"),
        totalTokens: count(usage, "totalTokens"),
        cachedInputTokens: count(usage, "cacheReadInputTokens"),
        cacheWriteTokens: count(usage, "cacheWriteInputTokens"),
        latencyMs: count(response, "metrics", "latencyMs"),
      };
      const found = bedrockFound(usage);
      found["service_tier"] = text(response, "serviceTier", "type");
      return [fields, found];
    },
    extra,
  );
}

// -- Vercel AI SDK -----------------------------------------------------------------------------

// The AI SDK's provider ids ("openai.chat", "anthropic.messages", "google.generative-ai",
// "amazon-bedrock", "vertex.anthropic.messages", ...): the part before the first dot, mapped to
// costtrack's provider id. Anything else keeps its first part (mistral, xai, deepseek, groq,
// cohere, fireworks, cerebras, perplexity, ...).
const VERCEL_PROVIDERS: ReadonlyMap<string, string> = new Map([
  ["amazon-bedrock", "bedrock"],
  ["google-vertex", "google"],
  ["vertex", "google"],
  ["gemini", "google"],
  ["togetherai", "together"],
  ["azure-openai", "azure"],
  ["x-ai", "xai"],
]);

/** costtrack's provider id (and the model, for the AI Gateway) for an AI SDK provider id. */
export function vercelProvider(aiProvider: string, modelId: string | undefined): { provider: string; model: string | undefined } {
  const parts = aiProvider.trim().toLowerCase().split(".");
  const first = parts[0] ?? "";
  // Claude on Vertex AI or Bedrock: Anthropic's models and conventions, sold by the cloud.
  if (first === "vertex" || first === "google-vertex" || first === "google") {
    if (parts.includes("anthropic")) return { provider: "anthropic", model: modelId };
    if (parts.includes("xai")) return { provider: "xai", model: modelId };
  }
  // The AI Gateway names the provider in the model id: "anthropic/claude-sonnet-4.5".
  if (first === "gateway" && modelId !== undefined && modelId.includes("/")) {
    const slash = modelId.indexOf("/");
    const inner = modelId.slice(0, slash);
    return { provider: VERCEL_PROVIDERS.get(inner) ?? inner, model: modelId.slice(slash + 1) };
  }
  return { provider: VERCEL_PROVIDERS.get(first) ?? first, model: modelId };
}

// providerMetadata keys → costtrack provider, for AI SDK 5 results (which do not name it).
const METADATA_PROVIDERS: readonly string[] = ["openai", "azure", "anthropic", "google", "vertex", "bedrock", "mistral", "xai", "deepseek", "groq"];

function lastStep(result: unknown): unknown {
  const steps = read(result, "steps");
  if (Array.isArray(steps) && steps.length > 0) return steps[steps.length - 1];
  return read(result, "finalStep") ?? result;
}

function vercelIdentity(result: unknown): { provider: string | undefined; model: string | undefined } {
  const step = lastStep(result);
  const modelId =
    text(step, "response", "modelId") ?? text(step, "model", "modelId") ?? text(result, "response", "modelId") ?? text(result, "model", "modelId");
  const aiProvider = text(step, "model", "provider") ?? text(result, "model", "provider");
  if (aiProvider !== undefined) return vercelProvider(aiProvider, modelId);
  // AI SDK 5 does not name the provider; its providerMetadata is keyed by it.
  const metadata = record(read(step, "providerMetadata"));
  const keys = METADATA_PROVIDERS.filter((key) => metadata !== undefined && record(metadata[key]) !== undefined);
  const only = keys.length === 1 ? keys[0] : undefined;
  return { provider: only === undefined ? undefined : VERCEL_PROVIDERS.get(only) ?? only, model: modelId };
}

interface StepCounts {
  prompt: number | undefined;
  completion: number | undefined;
  reasoning: number | undefined;
  cached: number | undefined;
  write: number | undefined;
  found: Found;
}

function nonNegative(value: number | undefined): number | undefined {
  return value !== undefined && value >= 0 ? value : undefined;
}

/** One step's usage in costtrack's terms for `provider`'s conventions. */
function vercelStep(step: unknown, provider: string): StepCounts {
  const usage = read(step, "usage");
  const metadata = read(step, "providerMetadata");
  const inputDetails = read(usage, "inputTokenDetails");
  const outputDetails = read(usage, "outputTokenDetails");
  // AI SDK 6 and 7 (LanguageModelV3/V4 providers): inputTokens is ALL input (cache reads and writes
  // included, for every provider) and outputTokens ALL output (reasoning included). AI SDK 5 (and
  // a version-5 provider run by a later AI SDK, which leaves these details undefined) reports the
  // provider's own numbers: Anthropic's and Bedrock's input without the cache, Gemini's output
  // without the thoughts.
  const allIn = exact(inputDetails, "noCacheTokens") !== undefined || exact(outputDetails, "textTokens") !== undefined;
  const input = exact(usage, "inputTokens");
  const output = exact(usage, "outputTokens");
  const cached = exact(inputDetails, "cacheReadTokens") ?? exact(usage, "cachedInputTokens");
  const write =
    exact(inputDetails, "cacheWriteTokens") ??
    exact(metadata, "anthropic", "cacheCreationInputTokens") ??
    exact(metadata, "bedrock", "usage", "cacheWriteInputTokens");
  const reasoning = exact(outputDetails, "reasoningTokens") ?? exact(usage, "reasoningTokens");
  const raw = read(usage, "raw");
  const result: StepCounts = { prompt: input, completion: output, reasoning: undefined, cached, write, found: {} };

  if (provider === "anthropic" || provider === "bedrock") {
    // costtrack's Anthropic and Bedrock prompts exclude the cache, which the AI SDK's includes.
    if (allIn) {
      const noCache = exact(inputDetails, "noCacheTokens");
      const left = input === undefined ? undefined : nonNegative(input - (cached ?? 0) - (write ?? 0));
      result.prompt = left ?? noCache;
    }
  } else if (provider === "google") {
    // costtrack's Gemini completion excludes thoughts (passed as reasoning), which the AI SDK's includes.
    const geminiUsage = record(raw) ?? record(read(metadata, "google", "usageMetadata"));
    if (allIn) {
      result.completion = output === undefined ? undefined : nonNegative(output - (reasoning ?? 0)) ?? output;
    } else {
      // AI SDK 5 leaves the tool-use prompt out of inputTokens; Gemini's own total counts it.
      result.prompt = sum(input, input === undefined ? undefined : exact(geminiUsage, "toolUsePromptTokenCount"));
    }
    result.reasoning = reasoning !== undefined && reasoning > 0 ? reasoning : undefined;
  }

  // Pricing context and extra counts, as the direct helpers read them: from the provider's
  // response body (generateText keeps it), else its raw usage (AI SDK 6+; the AI SDK's parsers
  // drop fields they do not know), else what the AI SDK's provider copied into providerMetadata.
  const body = read(step, "response", "body");
  let found: Found = {};
  if (provider === "anthropic") {
    found = anthropicFound(record(read(body, "usage")) ?? record(raw) ?? read(metadata, "anthropic", "usage"));
  } else if (provider === "google") {
    const geminiUsage = record(read(body, "usageMetadata")) ?? record(raw) ?? read(metadata, "google", "usageMetadata");
    found = geminiFound(geminiUsage);
    found["service_tier"] =
      header(read(step, "response", "headers"), "x-gemini-service-tier") ?? text(geminiUsage, "serviceTier") ?? text(body, "serviceTier");
  } else if (provider === "bedrock") {
    found = bedrockFound(record(read(body, "usage")) ?? raw);
    found["service_tier"] = text(body, "serviceTier", "type");
  } else {
    // OpenAI and the OpenAI-compatible APIs: a Chat Completions or Responses API result.
    found = openAIFound(record(read(body, "usage")) !== undefined ? body : { usage: raw });
  }
  if (found["service_tier"] === undefined) {
    // The AI SDK's providers put the tier in their providerMetadata as `serviceTier`.
    for (const value of Object.values(record(metadata) ?? {})) {
      const tier = text(value, "serviceTier");
      if (tier !== undefined) {
        found["service_tier"] = tier;
        if (provider === "anthropic" && tier === "batch") found["processing"] = "batch";
        break;
      }
    }
  }
  result.found = found;
  return result;
}

/**
 * From a Vercel AI SDK (`ai`) result: what `generateText` returns, the event `streamText`'s (or
 * `generateText`'s) `onFinish` receives, or one step (`result.steps[i]`, an `onStepFinish`
 * event). Works with AI SDK 7, 6 and 5. Every step of a multi-step call (tool loops) is counted
 * once, with its own provider metadata; the model is the last step's.
 *
 * The provider comes from the model's AI SDK provider id (`"openai.chat"` → `openai`,
 * `"anthropic.messages"` → `anthropic`, `"google.generative-ai"` → `google`, `"amazon-bedrock"` →
 * `bedrock`, `"vertex.anthropic.messages"` → `anthropic`, `"gateway"` with `"openai/gpt-5"` →
 * `openai` and `gpt-5`, ...); AI SDK 5 results do not carry it, so it is taken from the
 * `providerMetadata` key, or pass `{ provider }`. The AI SDK normalizes usage across providers
 * in ways costtrack must undo, or tokens would be charged twice: its input count includes
 * Anthropic's and Bedrock's cache reads and writes (costtrack's prompt for them excludes the
 * cache), and its output count includes Gemini's thoughts (costtrack's Gemini completion
 * excludes them; they go in `reasoningTokens`). `totalTokens` is not passed (the service
 * computes it as for the direct helpers).
 */
export function fromVercelAI(result: VercelAILikeResult, extra?: HelperOptions): TrackOptions {
  let identity: { provider: string | undefined; model: string | undefined } = { provider: undefined, model: undefined };
  try {
    identity = vercelIdentity(result);
  } catch {
    // keep nothing
  }
  const provider = namedProvider(extra, identity.provider ?? "");
  return safely(
    identity.provider,
    () => {
      const list = read(result, "steps");
      const steps: readonly unknown[] = Array.isArray(list) && list.length > 0 ? list : [result];
      const fields: Fields = { model: identity.model };
      const found: Found = {};
      let prompt: number | undefined;
      let completion: number | undefined;
      let reasoning: number | undefined;
      let cached: number | undefined;
      let write: number | undefined;
      for (const step of steps) {
        const counts = vercelStep(step, provider);
        prompt = sum(prompt, counts.prompt);
        completion = sum(completion, counts.completion);
        reasoning = sum(reasoning, counts.reasoning);
        cached = sum(cached, counts.cached);
        write = sum(write, counts.write);
        for (const [name, value] of Object.entries(counts.found)) {
          if (value === undefined) continue;
          if (PRICING_COUNT_PARENTS.has(name)) {
            if (isCount(value)) add(found, name, value);
          } else {
            found[name] = value; // context: the last step's
          }
        }
      }
      Object.assign(fields, {
        promptTokens: prompt,
        completionTokens: completion,
        reasoningTokens: reasoning,
        // The AI SDK says 0 for "not reported": leave those out, as the direct helpers do.
        cachedInputTokens: cached === 0 ? undefined : cached,
        cacheWriteTokens: write === 0 ? undefined : write,
      });
      return [fields, found];
    },
    extra,
  );
}
