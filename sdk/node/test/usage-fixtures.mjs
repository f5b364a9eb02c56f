// Provider usage and the events the helpers make of it, shared by the tests that feed the helpers
// by hand (providers.test.mjs) and through the official clients (provider-clients.test.mjs), with
// builders that spell a provider's usage as its API does from the few counts a test cares about.

/**
 * Chat Completions usage as OpenAI spells it: every detail present, 0 when unused. `total` defaults
 * to prompt + completion; `cacheWrite` is spelled only when given.
 */
export function chatUsage({ prompt, completion, total = prompt + completion, cached = 0, cacheWrite, promptAudio = 0, reasoning = 0, completionAudio = 0 }) {
  const writes = cacheWrite === undefined ? {} : { cache_write_tokens: cacheWrite };
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: total,
    prompt_tokens_details: { cached_tokens: cached, ...writes, audio_tokens: promptAudio },
    completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: completionAudio, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

/**
 * Anthropic Messages usage as the API spells it: the cache writes in total and by lifetime;
 * `server_tool_use` only when the call used a server tool (`webSearches` or `webFetches` given).
 */
export function anthropicUsage({ input, output, cacheRead = 0, write5m = 0, write1h = 0, webSearches, webFetches, tier }) {
  const usedTools = webSearches !== undefined || webFetches !== undefined;
  const tools = usedTools ? { server_tool_use: { web_search_requests: webSearches ?? 0, web_fetch_requests: webFetches ?? 0 } } : {};
  return {
    input_tokens: input,
    cache_creation_input_tokens: write5m + write1h,
    cache_read_input_tokens: cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: write5m, ephemeral_1h_input_tokens: write1h },
    output_tokens: output,
    ...tools,
    service_tier: tier,
  };
}

/** Gemini's per-modality counts (`promptTokensDetails` and the like) from `{ TEXT: n, AUDIO: m, ... }`, in that order. */
export const modalities = (counts) => Object.entries(counts).map(([modality, tokenCount]) => ({ modality, tokenCount }));

/**
 * AI SDK 6's usage (LanguageModelUsage) as the SDK fills it from a provider's counts: the details
 * under their own names and again in the deprecated `reasoningTokens` and `cachedInputTokens`;
 * totalTokens is input + output. A detail the provider leaves out stays undefined.
 */
export function aiSdk6Usage({ input, output, noCache, cacheRead, cacheWrite, text, reasoning, raw }) {
  return {
    inputTokens: input,
    inputTokenDetails: { noCacheTokens: noCache, cacheReadTokens: cacheRead, cacheWriteTokens: cacheWrite },
    outputTokens: output,
    outputTokenDetails: { textTokens: text, reasoningTokens: reasoning },
    totalTokens: input + output,
    reasoningTokens: reasoning,
    cachedInputTokens: cacheRead,
    raw,
  };
}

/**
 * What the direct helper gives, as fromVercelAI gives it: without totalTokens (left to the
 * service) and without cache counts of 0 (the AI SDK says 0 for "not reported").
 */
export function withoutTotal(event) {
  const { totalTokens: _total, ...rest } = event;
  if (rest.cachedInputTokens === 0) delete rest.cachedInputTokens;
  if (rest.cacheWriteTokens === 0) delete rest.cacheWriteTokens;
  return rest;
}

/**
 * OpenAI Responses API usage of docs/api-rules.md#worked-examples (gpt-5): 8000 of the 10000 input
 * tokens cached, 2000 reasoning tokens inside the 3000 output tokens; 0.0335 USD.
 */
export const GPT5_RESPONSES_USAGE = {
  input_tokens: 10000,
  input_tokens_details: { cached_tokens: 8000 },
  output_tokens: 3000,
  output_tokens_details: { reasoning_tokens: 2000 },
  total_tokens: 13000,
};

/** The same usage as Chat Completions spells it. */
export const GPT5_CHAT_USAGE = chatUsage({ prompt: 10000, completion: 3000, cached: 8000, reasoning: 2000 });

/** What fromOpenAI makes of that usage (of Chat Completions' spelling of it too): reasoning stays inside completion. */
export const GPT5_EVENT = {
  provider: "openai",
  model: "gpt-5",
  promptTokens: 10000,
  completionTokens: 3000,
  totalTokens: 13000,
  cachedInputTokens: 8000,
};

/**
 * The cache example of docs/api-rules.md#worked-examples (claude-sonnet-4-5, 0.021 USD): 10000
 * tokens read from the cache and 2000 written beside 1000 uncached input tokens, 500 output
 * tokens. Anthropic's and Bedrock's responses both come to these counts.
 */
export const SONNET_CACHE_COUNTS = { promptTokens: 1000, completionTokens: 500, cachedInputTokens: 10000, cacheWriteTokens: 2000 };

/** Anthropic Messages usage of those counts, the writes for one hour, two web searches. */
export const ANTHROPIC_USAGE = anthropicUsage({ input: 1000, output: 500, cacheRead: 10000, write1h: 2000, webSearches: 2, tier: "standard" });

/** What fromAnthropic makes of it (for the dated model the API names): extra counts in metadata. */
export const ANTHROPIC_EVENT = {
  provider: "anthropic",
  model: "claude-sonnet-4-5-20250929",
  ...SONNET_CACHE_COUNTS,
  metadata: { service_tier: "standard", cache_write_1h_tokens: 2000, web_searches: 2 },
};

/**
 * Gemini usage of docs/api-rules.md#worked-examples (gemini-2.5-pro, long-context tier, 0.22 USD):
 * thoughts reported apart from the candidates.
 */
export const GEMINI_PRO_USAGE = {
  promptTokenCount: 250000,
  cachedContentTokenCount: 200000,
  candidatesTokenCount: 1000,
  thoughtsTokenCount: 2000,
  totalTokenCount: 253000,
};

/** What fromGemini makes of it: the thoughts are reasoningTokens. */
export const GEMINI_PRO_EVENT = {
  provider: "google",
  model: "gemini-2.5-pro",
  promptTokens: 250000,
  completionTokens: 1000,
  reasoningTokens: 2000,
  cachedInputTokens: 200000,
  totalTokens: 253000,
};

/** DeepSeek: cache hits and misses beside prompt_tokens (their sum), no prompt_tokens_details. */
export const DEEPSEEK_USAGE = { prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050, prompt_cache_hit_tokens: 800, prompt_cache_miss_tokens: 200 };

/** What fromOpenAI(..., { provider: "deepseek" }) makes of it: the hits are the cached input. */
export const DEEPSEEK_EVENT = {
  provider: "deepseek",
  model: "deepseek-chat",
  promptTokens: 1000,
  completionTokens: 50,
  totalTokens: 1050,
  cachedInputTokens: 800,
};
