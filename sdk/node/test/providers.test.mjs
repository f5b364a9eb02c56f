// Provider helpers: the response shapes each provider returns, mapped without double counting.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { fromAnthropic, fromBedrockConverse, fromGemini, fromOpenAI, fromVercelAI } from "costtrack";
import { vercelProvider } from "../dist/esm/providers.js";
import { checkEvent } from "../dist/esm/validation.js";
import {
  ANTHROPIC_EVENT,
  ANTHROPIC_USAGE,
  DEEPSEEK_EVENT,
  DEEPSEEK_USAGE,
  GEMINI_PRO_EVENT,
  GEMINI_PRO_USAGE,
  GPT5_CHAT_USAGE,
  GPT5_EVENT,
  GPT5_RESPONSES_USAGE,
  SONNET_CACHE_COUNTS,
  aiSdk6Usage,
  anthropicUsage,
  chatUsage,
  modalities,
  withoutTotal,
} from "./usage-fixtures.mjs";

// docs/api-rules.md#cost pricing, to show the helpers' output costs what the provider bills.
const PRICING = {
  "openai/gpt-5": { input: 1.25, output: 10, cached: 0.125, promptIncludesCached: true, completionIncludesReasoning: true },
  "anthropic/claude-sonnet-4-5": { input: 3, output: 15, cached: 0.3, write: 3.75, promptIncludesCached: false, completionIncludesReasoning: true },
  "bedrock/anthropic.claude-sonnet-4-5": { input: 3, output: 15, cached: 0.3, write: 3.75, promptIncludesCached: false, completionIncludesReasoning: true },
  "google/gemini-2.5-pro": {
    input: 1.25, output: 10, cached: 0.125, promptIncludesCached: true, completionIncludesReasoning: false,
    tiers: [{ above: 200000, input: 2.5, output: 15, cached: 0.25 }],
  },
};

function cost(event) {
  const entry = PRICING[`${event.provider}/${event.model}`];
  const prompt = event.promptTokens ?? 0;
  const cached = event.cachedInputTokens ?? 0;
  const write = event.cacheWriteTokens ?? 0;
  const size = prompt + (entry.promptIncludesCached ? 0 : cached + write);
  const rates = (entry.tiers ?? []).filter((t) => size > t.above).pop() ?? entry;
  const uncached = entry.promptIncludesCached ? prompt - cached - write : prompt;
  const reasoningExtra = entry.completionIncludesReasoning ? 0 : event.reasoningTokens ?? 0;
  const total =
    uncached * rates.input +
    cached * (rates.cached ?? rates.input) +
    write * (rates.write ?? entry.write ?? rates.input) +
    (event.completionTokens ?? 0) * rates.output +
    reasoningExtra * rates.output;
  return Math.round((total / 1e6) * 1e10) / 1e10;
}

// Each API's whole response around a usage, with one short answer: what the helpers are handed.
const chatCompletion = (model, usage) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
  usage,
});
const openAIResponse = (model, usage) => ({ id: "resp_1", object: "response", model, status: "completed", usage });
const anthropicMessage = (model, usage, content = [{ type: "text", text: "hi" }]) => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model,
  content,
  stop_reason: "end_turn",
  usage,
});
const geminiResponse = (modelVersion, usageMetadata) => ({
  candidates: [{ content: { parts: [{ text: "hi" }], role: "model" }, finishReason: "STOP" }],
  modelVersion,
  usageMetadata,
});

const valid = (event) => assert.equal(checkEvent(event).error, undefined, checkEvent(event).error?.message);

describe("fromOpenAI", () => {
  test("Chat Completions: cached input is part of the prompt; reasoning is inside completion, so not passed", () => {
    const event = fromOpenAI(chatCompletion("gpt-5", GPT5_CHAT_USAGE), { feature: "chat", customerId: "c_1" });
    assert.deepEqual(event, { ...GPT5_EVENT, feature: "chat", customerId: "c_1" });
    valid(event);
    assert.equal(cost(event), 0.0335); // docs/api-rules.md#worked-examples
  });

  test("Responses API: input/output tokens and their details", () => {
    const event = fromOpenAI(openAIResponse("gpt-5", GPT5_RESPONSES_USAGE));
    assert.deepEqual(event, GPT5_EVENT);
    assert.equal(cost(event), 0.0335);
  });

  test("Azure and overrides: extra wins, explicit undefined overrides nothing", () => {
    const event = fromOpenAI({ model: "gpt-4o", usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }, {
      provider: "azure",
      model: undefined,
      latencyMs: 30,
    });
    assert.deepEqual(event, { provider: "azure", model: "gpt-4o", promptTokens: 5, completionTokens: 1, totalTokens: 6, latencyMs: 30 });
  });

  test("a stream chunk without usage gives no token fields", () => {
    assert.deepEqual(fromOpenAI({ model: "gpt-5", usage: null }), { provider: "openai", model: "gpt-5" });
  });
});

describe("fromAnthropic", () => {
  test("cache reads and writes beside input; thinking inside output", () => {
    const usage = { input_tokens: 1000, cache_read_input_tokens: 10000, cache_creation_input_tokens: 2000, output_tokens: 500 };
    const message = anthropicMessage("claude-sonnet-4-5", usage, [{ type: "thinking", thinking: "…" }, { type: "text", text: "hi" }]);
    const event = fromAnthropic(message, { feature: "support" });
    assert.deepEqual(event, { provider: "anthropic", model: "claude-sonnet-4-5", ...SONNET_CACHE_COUNTS, feature: "support" });
    valid(event);
    assert.equal(cost(event), 0.021); // docs/api-rules.md#worked-examples
  });

  test("one-hour cache writes travel in metadata.cache_write_1h_tokens, merged with the caller's", () => {
    const usage = {
      input_tokens: 10,
      output_tokens: 5,
      cache_creation_input_tokens: 3000,
      cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
    };
    const event = fromAnthropic({ model: "claude-sonnet-4-5", usage }, { metadata: { route: "/chat" } });
    assert.equal(event.cacheWriteTokens, 3000);
    assert.deepEqual(event.metadata, { cache_write_1h_tokens: 2000, cache_write_5m_tokens: 1000, route: "/chat" });
    valid(event);
    const none = fromAnthropic({ model: "claude-sonnet-4-5", usage: { ...usage, cache_creation: { ephemeral_1h_input_tokens: 0 } } });
    assert.equal(none.metadata, undefined);
  });

  test("null cache fields (older API versions) are left out", () => {
    const event = fromAnthropic({ model: "claude-haiku-4-5", usage: { input_tokens: 3, output_tokens: 4, cache_read_input_tokens: null } });
    assert.deepEqual(event, { provider: "anthropic", model: "claude-haiku-4-5", promptTokens: 3, completionTokens: 4 });
  });
});

describe("fromGemini", () => {
  test("thoughts are reported apart from candidates, so they are reasoningTokens", () => {
    const event = fromGemini(geminiResponse("gemini-2.5-pro", GEMINI_PRO_USAGE));
    assert.deepEqual(event, GEMINI_PRO_EVENT);
    valid(event);
    assert.equal(cost(event), 0.22); // docs/api-rules.md#worked-examples (long-context tier)
  });

  test("tool-use prompt tokens are input", () => {
    const event = fromGemini({
      modelVersion: "gemini-2.5-flash",
      usageMetadata: { promptTokenCount: 100, toolUsePromptTokenCount: 40, candidatesTokenCount: 10, totalTokenCount: 150 },
    });
    assert.equal(event.promptTokens, 140);
    assert.equal(event.totalTokens, 150);
  });
});

describe("fromBedrockConverse", () => {
  test("cache reads and writes beside input; the model comes from the caller; Bedrock's latency is kept", () => {
    const response = {
      output: { message: { role: "assistant", content: [{ text: "hi" }] } },
      stopReason: "end_turn",
      usage: { inputTokens: 1000, outputTokens: 500, totalTokens: 13500, cacheReadInputTokens: 10000, cacheWriteInputTokens: 2000 },
      metrics: { latencyMs: 850 },
    };
    const event = fromBedrockConverse(response, { model: "anthropic.claude-sonnet-4-5" });
    assert.deepEqual(event, { provider: "bedrock", model: "anthropic.claude-sonnet-4-5", ...SONNET_CACHE_COUNTS, totalTokens: 13500, latencyMs: 850 });
    valid(event);
    assert.equal(cost(event), 0.021);
    assert.equal(fromBedrockConverse(response, { model: "m", latencyMs: 900 }).latencyMs, 900);
  });
});

test("helpers never throw; missing data leaves fields out for track() to report", () => {
  const hostile = new Proxy({}, { get() { throw new Error("no"); } });
  for (const response of [undefined, null, 5, "x", {}, { usage: "nope" }, hostile]) {
    for (const helper of [fromOpenAI, fromAnthropic, fromGemini]) {
      const event = helper(response);
      assert.equal(typeof event.provider, "string");
      assert.deepEqual(checkEvent(event).error?.fields, ["model"]);
    }
    assert.doesNotThrow(() => fromBedrockConverse(response, { model: "m" }));
    // The AI SDK result names the provider through its model: without one, track() asks for both.
    assert.deepEqual(checkEvent(fromVercelAI(response)).error?.fields, ["provider", "model"]);
    assert.deepEqual(checkEvent(fromVercelAI(response, { provider: "openai", model: "gpt-5" })).error, undefined);
  }
  assert.doesNotThrow(() => fromOpenAI({}, null));
  const hostileExtra = new Proxy({}, { get() { throw new Error("no"); }, ownKeys() { throw new Error("no"); } });
  for (const helper of [fromOpenAI, fromAnthropic, fromGemini, fromVercelAI]) assert.doesNotThrow(() => helper({ model: "m" }, hostileExtra));
});

// -- Pricing context and extra counts (docs/api-rules.md#cost), merged into metadata ----------------------

describe("pricing context and extra counts", () => {
  test("OpenAI Chat Completions: service tier and audio tokens; cache writes are part of the prompt", () => {
    const response = {
      model: "gpt-4o-audio-preview",
      service_tier: "flex",
      usage: chatUsage({ prompt: 1200, completion: 300, cached: 200, cacheWrite: 100, promptAudio: 700, completionAudio: 250 }),
    };
    const event = fromOpenAI(response, { processing: "batch", metadata: { route: "/voice" } });
    assert.deepEqual(event, {
      provider: "openai",
      model: "gpt-4o-audio-preview",
      promptTokens: 1200,
      completionTokens: 300,
      totalTokens: 1500,
      cachedInputTokens: 200,
      cacheWriteTokens: 100,
      metadata: { service_tier: "flex", input_audio_tokens: 700, output_audio_tokens: 250, processing: "batch", route: "/voice" },
    });
    valid(event);
  });

  test("the caller's metadata wins; zero counts, empty tiers and contradicted counts are left out", () => {
    const usage = {
      prompt_tokens: 100,
      completion_tokens: 10,
      prompt_tokens_details: { audio_tokens: 0 },
      completion_tokens_details: { audio_tokens: 11 }, // more than the completion: the response contradicts itself
    };
    assert.deepEqual(fromOpenAI({ model: "m", service_tier: "", usage }).metadata, undefined);
    assert.deepEqual(fromOpenAI({ model: "m", service_tier: null, usage }).metadata, undefined);
    assert.deepEqual(fromOpenAI({ model: "m", service_tier: "x".repeat(65), usage }).metadata, undefined);
    const mine = fromOpenAI({ model: "m", service_tier: "flex", usage }, { metadata: { service_tier: "priority" }, processing: "batch" });
    assert.deepEqual(mine.metadata, { processing: "batch", service_tier: "priority" });
    // metadata.processing given by the caller beats the processing option
    assert.deepEqual(fromOpenAI({ model: "m" }, { processing: "batch", metadata: { processing: "none" } }).metadata, { processing: "none" });
    // The caller's own counts are kept as given, even when wrong: track() reports them.
    const wrong = fromOpenAI({ model: "m", usage }, { metadata: { output_audio_tokens: 11 } });
    assert.deepEqual(wrong.metadata, { output_audio_tokens: 11 });
    assert.deepEqual(checkEvent(wrong).error?.fields, ["metadata.output_audio_tokens"]);
    // An overridden count is what the parent check uses.
    assert.deepEqual(fromOpenAI({ model: "m", usage }, { completionTokens: 20 }).metadata, { output_audio_tokens: 11 });
    // Metadata that is not a plain object is passed through for track() to report.
    assert.equal(fromOpenAI({ model: "m", service_tier: "flex" }, { metadata: "x" }).metadata, "x");
    const map = new Map([["a", 1]]);
    assert.equal(fromOpenAI({ model: "m", service_tier: "flex" }, { metadata: map }).metadata, map);
    assert.deepEqual(checkEvent(fromOpenAI({ model: "m" }, { metadata: map })).error?.fields, ["metadata"]);
    // Nothing read from the response: the caller's own object, untouched.
    const own = { route: "/chat" };
    assert.equal(fromOpenAI({ model: "m" }, { metadata: own }).metadata, own);
    assert.equal(fromOpenAI({ model: "m" }, { metadata: own, processing: null }).metadata, own);
    assert.equal(fromOpenAI({ model: "m" }, { processing: undefined }).metadata, undefined);
  });

  test("OpenAI Responses API: audio details where present", () => {
    const event = fromOpenAI({
      model: "gpt-realtime",
      service_tier: "default",
      usage: {
        input_tokens: 500,
        input_tokens_details: { cached_tokens: 0, audio_tokens: 300 },
        output_tokens: 80,
        output_tokens_details: { reasoning_tokens: 0, audio_tokens: 60 },
        total_tokens: 580,
      },
    });
    assert.deepEqual(event.metadata, { service_tier: "default", input_audio_tokens: 300, output_audio_tokens: 60 });
    valid(event);
  });

  test("DeepSeek: cache hits are the cached input when prompt_tokens_details is absent", () => {
    const usage = DEEPSEEK_USAGE;
    assert.deepEqual(fromOpenAI({ model: "deepseek-chat", usage }, { provider: "deepseek" }), DEEPSEEK_EVENT);
    const both = { ...usage, prompt_tokens_details: { cached_tokens: 768 } };
    assert.equal(fromOpenAI({ model: "deepseek-chat", usage: both }, { provider: "deepseek" }).cachedInputTokens, 768);
    const noPrompt = { completion_tokens: 50, prompt_cache_hit_tokens: 800, prompt_cache_miss_tokens: 200 };
    assert.equal(fromOpenAI({ model: "deepseek-chat", usage: noPrompt }, { provider: "deepseek" }).promptTokens, 1000);
  });

  test("xAI Chat Completions count reasoning apart from completion_tokens: made the OpenAI convention", () => {
    const usage = chatUsage({ prompt: 26, completion: 1, total: 199, cached: 6, reasoning: 172 });
    assert.deepEqual(fromOpenAI({ model: "grok-4", usage }, { provider: "xai" }), {
      provider: "xai",
      model: "grok-4",
      promptTokens: 26,
      completionTokens: 173,
      totalTokens: 199,
      cachedInputTokens: 6,
    });
    // Not for OpenAI itself, nor for xAI's Responses API (whose output_tokens include reasoning).
    assert.equal(fromOpenAI({ model: "gpt-5", usage }).completionTokens, 1);
    const responses = { input_tokens: 26, output_tokens: 173, output_tokens_details: { reasoning_tokens: 172 } };
    assert.equal(fromOpenAI({ model: "grok-4", usage: responses }, { provider: "xai" }).completionTokens, 173);
  });

  test("Anthropic: cache lifetimes, web searches, service tier and speed", () => {
    const message = {
      model: "claude-opus-4-6",
      usage: {
        ...anthropicUsage({ input: 50, output: 400, cacheRead: 9000, write5m: 1000, write1h: 2000, webSearches: 3, webFetches: 1, tier: "priority" }),
        speed: "fast",
        inference_geo: "us",
      },
    };
    const event = fromAnthropic(message);
    assert.deepEqual(event.metadata, {
      service_tier: "priority",
      speed: "fast",
      cache_write_1h_tokens: 2000,
      cache_write_5m_tokens: 1000,
      web_searches: 3,
    });
    valid(event);
    const batch = fromAnthropic({ ...message, usage: { ...message.usage, service_tier: "batch", speed: null } });
    assert.equal(batch.metadata.processing, "batch");
    assert.equal(batch.metadata.service_tier, "batch");
    assert.equal(batch.metadata.speed, undefined);
    // One-hour writes larger than all writes: the response contradicts itself, the count is left out.
    const odd = fromAnthropic({ model: "m", usage: { ...message.usage, cache_creation_input_tokens: 1500 } });
    assert.deepEqual(Object.keys(odd.metadata), ["service_tier", "speed", "cache_write_5m_tokens", "web_searches"]);
    valid(odd);
  });

  test("Gemini: modalities per prompt, cache and output; tool-use details count as prompt; the tier header", () => {
    const response = {
      modelVersion: "gemini-2.5-flash",
      sdkHttpResponse: { headers: { "X-Gemini-Service-Tier": "flex" } },
      usageMetadata: {
        promptTokenCount: 1000,
        toolUsePromptTokenCount: 100,
        cachedContentTokenCount: 400,
        candidatesTokenCount: 300,
        thoughtsTokenCount: 50,
        totalTokenCount: 1450,
        promptTokensDetails: modalities({ TEXT: 200, AUDIO: 500, IMAGE: 100, DOCUMENT: 150, VIDEO: 50 }),
        toolUsePromptTokensDetails: modalities({ AUDIO: 20 }),
        cacheTokensDetails: modalities({ AUDIO: 300, TEXT: 100 }),
        candidatesTokensDetails: modalities({ AUDIO: 200, IMAGE: 90 }),
      },
    };
    const event = fromGemini(response);
    assert.deepEqual(event, {
      provider: "google",
      model: "gemini-2.5-flash",
      promptTokens: 1100,
      completionTokens: 300,
      reasoningTokens: 50,
      cachedInputTokens: 400,
      totalTokens: 1450,
      metadata: {
        input_audio_tokens: 520,
        input_image_tokens: 250,
        input_video_tokens: 50,
        cache_audio_read_tokens: 300,
        output_audio_tokens: 200,
        output_image_tokens: 90,
        service_tier: "flex",
      },
    });
    valid(event);
    // No header: the usage metadata's tier. Cached audio without prompt audio is contradicted: left out.
    const bare = fromGemini({
      modelVersion: "gemini-2.5-flash",
      usageMetadata: { promptTokenCount: 10, cachedContentTokenCount: 5, serviceTier: "priority", cacheTokensDetails: modalities({ AUDIO: 5 }) },
    });
    assert.deepEqual(bare.metadata, { service_tier: "priority" });
  });

  test("Bedrock Converse: cache write lifetimes and the service tier", () => {
    const response = {
      usage: {
        inputTokens: 20,
        outputTokens: 100,
        totalTokens: 5120,
        cacheReadInputTokens: 0,
        cacheWriteInputTokens: 5000,
        cacheDetails: [
          { ttl: "1h", inputTokens: 4000 },
          { ttl: "5m", inputTokens: 1000 },
        ],
      },
      metrics: { latencyMs: 900 },
      serviceTier: { type: "flex" },
    };
    const event = fromBedrockConverse(response, { model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" });
    assert.deepEqual(event, {
      provider: "bedrock",
      model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
      promptTokens: 20,
      completionTokens: 100,
      totalTokens: 5120,
      cachedInputTokens: 0,
      cacheWriteTokens: 5000,
      latencyMs: 900,
      metadata: { cache_write_1h_tokens: 4000, cache_write_5m_tokens: 1000, service_tier: "flex" },
    });
    valid(event);
  });
});

// -- Vercel AI SDK ------------------------------------------------------------------------------
// AI SDK 7's shapes come from the real packages in provider-clients.test.mjs; these are AI SDK 6
// and 5 shapes, as their providers build them (@ai-sdk/*@3 and @ai-sdk/*@2 respectively).

describe("fromVercelAI", () => {
  test("AI SDK provider ids map to costtrack's", () => {
    const cases = [
      ["openai.chat", "gpt-5", "openai", "gpt-5"],
      ["openai.responses", "gpt-5", "openai", "gpt-5"],
      ["azure.chat", "my-deployment", "azure", "my-deployment"],
      ["azure.responses", "my-deployment", "azure", "my-deployment"],
      ["anthropic.messages", "claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"],
      ["google.generative-ai", "gemini-2.5-pro", "google", "gemini-2.5-pro"],
      ["google.vertex.chat", "gemini-2.5-pro", "google", "gemini-2.5-pro"],
      ["vertex.anthropic.messages", "claude-sonnet-4-5@20250929", "anthropic", "claude-sonnet-4-5@20250929"],
      ["amazon-bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"],
      ["mistral.chat", "mistral-large-latest", "mistral", "mistral-large-latest"],
      ["xai.chat", "grok-4", "xai", "grok-4"],
      ["xai.responses", "grok-4", "xai", "grok-4"],
      ["deepseek.chat", "deepseek-chat", "deepseek", "deepseek-chat"],
      ["groq.chat", "llama-3.3-70b-versatile", "groq", "llama-3.3-70b-versatile"],
      ["togetherai.chat", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "together", "meta-llama/Llama-3.3-70B-Instruct-Turbo"],
      ["fireworks.chat", "accounts/fireworks/models/x", "fireworks", "accounts/fireworks/models/x"],
      ["cohere.chat", "command-a", "cohere", "command-a"],
      ["perplexity", "sonar", "perplexity", "sonar"],
      ["gateway", "anthropic/claude-sonnet-4.5", "anthropic", "claude-sonnet-4.5"],
      ["gateway", "openai/gpt-5", "openai", "gpt-5"],
      ["gateway", "gpt-5", "gateway", "gpt-5"],
    ];
    for (const [ai, modelId, provider, model] of cases) assert.deepEqual(vercelProvider(ai, modelId), { provider, model }, ai);
  });

  // @ai-sdk/anthropic@3 (AI SDK 6): inputTokens counts the cache; the deprecated fields are still there.
  const anthropicV6Step = {
    model: { provider: "anthropic.messages", modelId: "claude-sonnet-4-5" },
    usage: aiSdk6Usage({ input: 13000, output: 500, noCache: 1000, cacheRead: 10000, cacheWrite: 2000, raw: ANTHROPIC_USAGE }),
    providerMetadata: { anthropic: { usage: ANTHROPIC_USAGE, cacheCreationInputTokens: 2000, serviceTier: "standard" } },
    response: { id: "msg_1", modelId: "claude-sonnet-4-5-20250929" },
  };

  test("AI SDK 6, Anthropic: the cache is taken out of inputTokens again (no double count)", () => {
    const result = { ...anthropicV6Step, totalUsage: anthropicV6Step.usage, steps: [anthropicV6Step] };
    const event = fromVercelAI(result, { feature: "chat" });
    assert.deepEqual(event, { ...ANTHROPIC_EVENT, feature: "chat" });
    valid(event);
    // Same cost as the direct helper on the same message.
    const direct = fromAnthropic({ model: "claude-sonnet-4-5", usage: ANTHROPIC_USAGE });
    assert.equal(cost({ ...event, model: "claude-sonnet-4-5" }), cost(direct));
    // One step alone (onStepFinish) gives the same.
    assert.deepEqual(fromVercelAI(anthropicV6Step), ANTHROPIC_EVENT);
  });

  test("AI SDK 5, Anthropic: inputTokens already excludes the cache; the provider comes from providerMetadata", () => {
    // @ai-sdk/anthropic@2: usage is { inputTokens, outputTokens, totalTokens, cachedInputTokens }.
    const step = {
      usage: { inputTokens: 1000, outputTokens: 500, totalTokens: 1500, cachedInputTokens: 10000 },
      providerMetadata: { anthropic: { usage: ANTHROPIC_USAGE, cacheCreationInputTokens: 2000, stopSequence: null } },
      response: { id: "msg_1", modelId: "claude-sonnet-4-5-20250929" },
    };
    const event = fromVercelAI({ ...step, totalUsage: step.usage, steps: [step] });
    assert.deepEqual(event, ANTHROPIC_EVENT);
    valid(event);
  });

  test("AI SDK 6 running an AI SDK 5 provider (details left undefined) is read as AI SDK 5", () => {
    const step = {
      model: { provider: "anthropic.messages", modelId: "claude-sonnet-4-5" },
      usage: aiSdk6Usage({ input: 1000, output: 500, cacheRead: 10000 }),
      providerMetadata: { anthropic: { usage: ANTHROPIC_USAGE, cacheCreationInputTokens: 2000 } },
      response: { modelId: "claude-sonnet-4-5-20250929" },
    };
    assert.deepEqual(fromVercelAI(step), ANTHROPIC_EVENT);
  });

  // The worked example with 1000 of its prompt tokens in audio.
  const geminiRaw = { ...GEMINI_PRO_USAGE, promptTokensDetails: modalities({ TEXT: 249000, AUDIO: 1000 }) };
  const geminiExpected = { ...withoutTotal(GEMINI_PRO_EVENT), metadata: { input_audio_tokens: 1000 } };

  test("AI SDK 6, Gemini: thoughts are taken out of outputTokens again and passed as reasoning", () => {
    const step = {
      model: { provider: "google.generative-ai", modelId: "gemini-2.5-pro" },
      usage: aiSdk6Usage({ input: 250000, output: 3000, noCache: 50000, cacheRead: 200000, text: 1000, reasoning: 2000, raw: geminiRaw }),
      providerMetadata: { google: { usageMetadata: geminiRaw, serviceTier: null } },
      response: { modelId: "gemini-2.5-pro" },
    };
    const event = fromVercelAI({ ...step, steps: [step] });
    assert.deepEqual(event, geminiExpected);
    assert.equal(cost(event), 0.22); // docs/api-rules.md#worked-examples, as fromGemini gives it
    assert.equal(cost(event), cost(fromGemini({ modelVersion: "gemini-2.5-pro", usageMetadata: geminiRaw })));
  });

  test("AI SDK 5, Gemini: outputTokens already excludes thoughts; the tool-use prompt is added back", () => {
    const raw = { ...geminiRaw, promptTokenCount: 249000, toolUsePromptTokenCount: 1000, totalTokenCount: 253000 };
    const step = {
      usage: { inputTokens: 249000, outputTokens: 1000, totalTokens: 253000, reasoningTokens: 2000, cachedInputTokens: 200000 },
      providerMetadata: { google: { usageMetadata: raw, groundingMetadata: null, safetyRatings: null } },
      response: { modelId: "gemini-2.5-pro" },
    };
    assert.deepEqual(fromVercelAI({ ...step, steps: [step] }), geminiExpected);
  });

  test("AI SDK 5, OpenAI: inputTokens includes cached input and outputTokens reasoning, as costtrack's do", () => {
    const step = {
      usage: { inputTokens: 10000, outputTokens: 3000, totalTokens: 13000, reasoningTokens: 2000, cachedInputTokens: 8000 },
      providerMetadata: { openai: { acceptedPredictionTokens: 0, rejectedPredictionTokens: 0 } },
      response: { modelId: "gpt-5-2025-08-07" },
    };
    const event = fromVercelAI({ ...step, steps: [step] }, { model: "gpt-5" });
    assert.deepEqual(event, { provider: "openai", model: "gpt-5", promptTokens: 10000, completionTokens: 3000, cachedInputTokens: 8000 });
    assert.equal(cost(event), 0.0335);
  });

  test("Bedrock through the AI SDK: the cache is taken out of inputTokens, lifetimes from the raw usage", () => {
    const raw = { inputTokens: 20, outputTokens: 100, totalTokens: 5120, cacheReadInputTokens: 0, cacheWriteInputTokens: 5000, cacheDetails: [{ ttl: "1h", inputTokens: 5000 }] };
    const step = {
      model: { provider: "amazon-bedrock", modelId: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" },
      usage: aiSdk6Usage({ input: 5020, output: 100, noCache: 20, cacheRead: 0, cacheWrite: 5000, text: 100, raw }),
      providerMetadata: { bedrock: { usage: { cacheWriteInputTokens: 5000 } } },
      response: { modelId: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" },
    };
    assert.deepEqual(fromVercelAI(step), {
      provider: "bedrock",
      model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
      promptTokens: 20,
      completionTokens: 100,
      cacheWriteTokens: 5000,
      metadata: { cache_write_1h_tokens: 5000 },
    });
  });

  test("multi-step calls: every step counted once, with its own cache and extra counts; the last model", () => {
    const second = {
      ...anthropicV6Step,
      usage: {
        ...anthropicV6Step.usage,
        inputTokens: 10300,
        inputTokenDetails: { noCacheTokens: 300, cacheReadTokens: 10000, cacheWriteTokens: 0 },
        outputTokens: 40,
        raw: { input_tokens: 300, output_tokens: 40, cache_read_input_tokens: 10000, cache_creation_input_tokens: 0, service_tier: "priority" },
      },
      providerMetadata: { anthropic: { cacheCreationInputTokens: 0 } },
      response: { modelId: "claude-sonnet-4-5-20250929" },
    };
    const result = { ...second, steps: [anthropicV6Step, second], totalUsage: {} };
    // The first step's event plus the second's counts (300 in, 40 out, 10000 cached); the second's tier.
    assert.deepEqual(fromVercelAI(result), {
      ...ANTHROPIC_EVENT,
      promptTokens: 1000 + 300,
      completionTokens: 500 + 40,
      cachedInputTokens: 10000 + 10000,
      metadata: { ...ANTHROPIC_EVENT.metadata, service_tier: "priority" },
    });
  });

  test("extra wins: provider, model and metadata; the provider's conventions follow the provider given", () => {
    const step = { ...anthropicV6Step, model: { provider: "custom.messages", modelId: "claude" } };
    assert.equal(fromVercelAI(step).provider, "custom");
    assert.equal(fromVercelAI(step).promptTokens, 13000); // unknown provider: the AI SDK's own count
    const event = fromVercelAI(step, { provider: "anthropic", model: "claude-sonnet-4-5", metadata: { web_searches: 0 }, processing: "batch" });
    assert.equal(event.promptTokens, 1000);
    assert.deepEqual(event.metadata, { service_tier: "standard", cache_write_1h_tokens: 2000, processing: "batch", web_searches: 0 });
  });
});
