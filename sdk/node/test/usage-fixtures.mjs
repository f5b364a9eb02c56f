// Provider usage and the events the helpers make of it, shared by the tests that feed the helpers
// by hand (providers.test.mjs) and through the official clients (provider-clients.test.mjs).

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
 * Anthropic Messages usage (claude-sonnet-4-5): cache reads and writes beside the input, the writes
 * for one hour, two web searches.
 */
export const ANTHROPIC_USAGE = {
  input_tokens: 1000,
  cache_creation_input_tokens: 2000,
  cache_read_input_tokens: 10000,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 2000 },
  output_tokens: 500,
  server_tool_use: { web_search_requests: 2, web_fetch_requests: 0 },
  service_tier: "standard",
};

/** What fromAnthropic makes of it (for the dated model the API names): extra counts in metadata. */
export const ANTHROPIC_EVENT = {
  provider: "anthropic",
  model: "claude-sonnet-4-5-20250929",
  promptTokens: 1000,
  completionTokens: 500,
  cachedInputTokens: 10000,
  cacheWriteTokens: 2000,
  metadata: { service_tier: "standard", cache_write_1h_tokens: 2000, web_searches: 2 },
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
