// What each provider's result says, in costtrack's terms: the event's fields (each token counted
// once, docs/api-rules.md#cost) and what `metadata` gets (pricing context and extra counts). Behind
// providers.ts, whose helpers document each mapping; the Vercel AI SDK helper reads the
// providers' own usage through the same functions.

import { add, count, exact, header, items, read, readCounts, sum, text, type Fields, type Found } from "./provider-read.js";

// -- OpenAI and OpenAI-compatible APIs ---------------------------------------------------------

/** Pricing context and extra counts of a Chat Completions or Responses API result. */
export function openAIFound(response: unknown): Found {
  const usage = read(response, "usage");
  const responsesApi = read(usage, "input_tokens") !== undefined || read(usage, "output_tokens") !== undefined;
  return {
    service_tier: text(response, "service_tier"),
    input_audio_tokens: count(usage, responsesApi ? "input_tokens_details" : "prompt_tokens_details", "audio_tokens"),
    output_audio_tokens: count(usage, responsesApi ? "output_tokens_details" : "completion_tokens_details", "audio_tokens"),
    reported_cost: reportedCost(read(usage, "cost")),
  };
}

/**
 * OpenRouter's `usage.cost` (credits, i.e. USD) as a plain decimal string, kept for comparison
 * only (the service prices the event itself); undefined unless a finite number ≥ 0. The client
 * has already read the JSON number as a double: its shortest form is the figure the provider
 * wrote, spelt out here without an exponent (`1.5e-7` → `"0.00000015"`).
 */
export function reportedCost(value: unknown): string | undefined {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) return undefined;
  const shown = String(value);
  const parts = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(shown);
  if (parts === null) return shown;
  const [, head, tail = "", exponent] = parts;
  const power = Number(exponent);
  if (power < 0) return `0.${"0".repeat(-power - 1)}${head}${tail}`;
  return `${head}${tail}${"0".repeat(power - tail.length)}`;
}

export function openAIFields(response: unknown, provider: string): [Fields, Found] {
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


export function anthropicFound(usage: unknown): Found {
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

const ANTHROPIC_COUNTS = {
  promptTokens: "input_tokens",
  completionTokens: "output_tokens",
  cachedInputTokens: "cache_read_input_tokens",
  cacheWriteTokens: "cache_creation_input_tokens",
};

export function anthropicFields(message: unknown): [Fields, Found] {
  const usage = read(message, "usage");
  return [{ model: text(message, "model"), ...readCounts(usage, ANTHROPIC_COUNTS) }, anthropicFound(usage)];
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

export function geminiFound(usage: unknown): Found {
  const found: Found = {};
  modalities(found, [read(usage, "promptTokensDetails"), read(usage, "toolUsePromptTokensDetails")], GEMINI_PROMPT_UNITS);
  modalities(found, [read(usage, "cacheTokensDetails")], GEMINI_CACHE_UNITS);
  modalities(found, [read(usage, "candidatesTokensDetails")], GEMINI_OUTPUT_UNITS);
  return found;
}

const GEMINI_COUNTS = {
  promptTokens: "promptTokenCount",
  completionTokens: "candidatesTokenCount",
  reasoningTokens: "thoughtsTokenCount",
  cachedInputTokens: "cachedContentTokenCount",
  totalTokens: "totalTokenCount",
};

export function geminiFields(response: unknown): [Fields, Found] {
  const usage = read(response, "usageMetadata");
  const fields: Fields = { model: text(response, "modelVersion"), ...readCounts(usage, GEMINI_COUNTS) };
  // Tool-use prompt tokens are input too, as Gemini's total counts them.
  fields.promptTokens = sum(count(usage, "promptTokenCount"), count(usage, "toolUsePromptTokenCount"));
  const found = geminiFound(usage);
  found["service_tier"] =
    header(read(response, "sdkHttpResponse", "headers"), "x-gemini-service-tier") ?? text(usage, "serviceTier") ?? text(response, "serviceTier");
  return [fields, found];
}

// -- Bedrock -----------------------------------------------------------------------------------

export function bedrockFound(usage: unknown): Found {
  const found: Found = {};
  for (const detail of items(read(usage, "cacheDetails"))) {
    const ttl = text(detail, "ttl");
    const name = ttl === "5m" ? "cache_write_5m_tokens" : ttl === "1h" ? "cache_write_1h_tokens" : undefined;
    const tokens = exact(detail, "inputTokens");
    if (name !== undefined && tokens !== undefined) add(found, name, tokens);
  }
  return found;
}

const BEDROCK_COUNTS = {
  promptTokens: "inputTokens",
  completionTokens: "outputTokens",
  totalTokens: "totalTokens",
  cachedInputTokens: "cacheReadInputTokens",
  cacheWriteTokens: "cacheWriteInputTokens",
};

export function bedrockFields(response: unknown): [Fields, Found] {
  const usage = read(response, "usage");
  const fields: Fields = { ...readCounts(usage, BEDROCK_COUNTS), latencyMs: count(response, "metrics", "latencyMs") };
  const found = bedrockFound(usage);
  found["service_tier"] = text(response, "serviceTier", "type");
  return [fields, found];
}
