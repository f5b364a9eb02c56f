// Provider helpers: the response shapes each provider returns, mapped without double counting.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { fromAnthropic, fromBedrockConverse, fromGemini, fromOpenAI } from "costtrack";
import { checkEvent } from "../dist/esm/validation.js";

// CONTRACT.md §6 pricing, to show the helpers' output costs what the provider bills.
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

const valid = (event) => assert.equal(checkEvent(event).error, undefined, checkEvent(event).error?.message);

describe("fromOpenAI", () => {
  test("Chat Completions: cached input is part of the prompt; reasoning is inside completion, so not passed", () => {
    const response = {
      id: "chatcmpl-1",
      object: "chat.completion",
      model: "gpt-5",
      choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
      usage: {
        prompt_tokens: 10000,
        completion_tokens: 3000,
        total_tokens: 13000,
        prompt_tokens_details: { cached_tokens: 8000, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 2000, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    };
    const event = fromOpenAI(response, { feature: "chat", customerId: "c_1" });
    assert.deepEqual(event, {
      provider: "openai",
      model: "gpt-5",
      promptTokens: 10000,
      completionTokens: 3000,
      totalTokens: 13000,
      cachedInputTokens: 8000,
      feature: "chat",
      customerId: "c_1",
    });
    valid(event);
    assert.equal(cost(event), 0.0335); // CONTRACT.md §6 worked vector
  });

  test("Responses API: input/output tokens and their details", () => {
    const response = {
      id: "resp_1",
      object: "response",
      model: "gpt-5",
      status: "completed",
      usage: {
        input_tokens: 10000,
        input_tokens_details: { cached_tokens: 8000 },
        output_tokens: 3000,
        output_tokens_details: { reasoning_tokens: 2000 },
        total_tokens: 13000,
      },
    };
    const event = fromOpenAI(response);
    assert.deepEqual(event, {
      provider: "openai",
      model: "gpt-5",
      promptTokens: 10000,
      completionTokens: 3000,
      totalTokens: 13000,
      cachedInputTokens: 8000,
    });
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
    const message = {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [{ type: "thinking", thinking: "…" }, { type: "text", text: "hi" }],
      stop_reason: "end_turn",
      usage: { input_tokens: 1000, cache_read_input_tokens: 10000, cache_creation_input_tokens: 2000, output_tokens: 500 },
    };
    const event = fromAnthropic(message, { feature: "support" });
    assert.deepEqual(event, {
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      promptTokens: 1000,
      completionTokens: 500,
      cachedInputTokens: 10000,
      cacheWriteTokens: 2000,
      feature: "support",
    });
    valid(event);
    assert.equal(cost(event), 0.021); // CONTRACT.md §6 worked vector
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
    assert.deepEqual(event.metadata, { cache_write_1h_tokens: 2000, route: "/chat" });
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
    const response = {
      candidates: [{ content: { parts: [{ text: "hi" }], role: "model" }, finishReason: "STOP" }],
      modelVersion: "gemini-2.5-pro",
      usageMetadata: {
        promptTokenCount: 250000,
        cachedContentTokenCount: 200000,
        candidatesTokenCount: 1000,
        thoughtsTokenCount: 2000,
        totalTokenCount: 253000,
      },
    };
    const event = fromGemini(response);
    assert.deepEqual(event, {
      provider: "google",
      model: "gemini-2.5-pro",
      promptTokens: 250000,
      completionTokens: 1000,
      reasoningTokens: 2000,
      cachedInputTokens: 200000,
      totalTokens: 253000,
    });
    valid(event);
    assert.equal(cost(event), 0.22); // CONTRACT.md §6 worked vector (long-context tier)
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
    assert.deepEqual(event, {
      provider: "bedrock",
      model: "anthropic.claude-sonnet-4-5",
      promptTokens: 1000,
      completionTokens: 500,
      totalTokens: 13500,
      cachedInputTokens: 10000,
      cacheWriteTokens: 2000,
      latencyMs: 850,
    });
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
  }
  assert.doesNotThrow(() => fromOpenAI({}, null));
});
