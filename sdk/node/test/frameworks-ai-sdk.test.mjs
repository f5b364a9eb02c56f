// The Vercel AI SDK middleware (costtrack/ai-sdk) in wrapLanguageModel, run by AI SDK 7 (`ai`,
// @ai-sdk/*@4) and AI SDK 5 (`ai-v5`, @ai-sdk/*@2) against the canned provider on 127.0.0.1: one
// event per model call with the usage the direct helper reads from the same response, its latency
// and status (sync, stream, stream cancelled midway, HTTP error, timeout); what the caller sees is
// the model's own.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import * as ai7 from "ai";
import * as ai5 from "ai-v5";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic as createAnthropic5 } from "ai-sdk-anthropic-v2";
import { createOpenAI as createOpenAI5 } from "ai-sdk-openai-v2";

import { fromAnthropic, fromGemini, fromOpenAI, fromVercelAI, withAttributes } from "costtrack";
import { costtrackMiddleware } from "costtrack/ai-sdk";
import { CHAT, GEMINI, MESSAGE, onlyEvent, recorder, startProvider } from "./canned-provider.mjs";

let provider;
before(async () => {
  provider = await startProvider();
});
after(() => provider.close());

const withoutTotal = ({ totalTokens: _t, ...rest }) => rest;
const succeeded = (event) => ({ ...withoutTotal(event), status: "success" });

async function tracked(tracker, n = 1) {
  for (let i = 0; i < 200 && tracker.events.length < n; i++) await new Promise((r) => setTimeout(r, 5));
}

for (const [name, ai, openai, anthropic] of [
  ["AI SDK 7", ai7, createOpenAI, createAnthropic],
  ["AI SDK 5", ai5, createOpenAI5, createAnthropic5],
]) {
  describe(`${name}: wrapLanguageModel({ middleware: costtrackMiddleware() })`, () => {
    const wrap = (model, tracker, options = {}) => ai.wrapLanguageModel({ model, middleware: costtrackMiddleware({ tracker, ...options }) });
    const gpt = (id) => openai({ apiKey: "sk-test", baseURL: `${provider.url}/v1` }).chat(id);
    const claude = (id) => anthropic({ apiKey: "sk-ant-test", baseURL: `${provider.url}/v1` })(id);

    test("generateText, OpenAI Chat Completions: fromOpenAI's event for the same response", async () => {
      const tracker = recorder();
      const result = await ai.generateText({ model: wrap(gpt("gpt-4o-mini"), tracker, { feature: "chat" }), prompt: "Say hello", maxRetries: 0 });
      assert.equal(result.text, "Hello!");
      assert.deepEqual(onlyEvent(tracker), { ...succeeded(fromOpenAI(CHAT)), feature: "chat" });
    });

    test("generateText, Anthropic: the cache the AI SDK counts in the input is taken out again", async () => {
      const tracker = recorder();
      const result = await ai.generateText({ model: wrap(claude("claude-sonnet-4-5"), tracker), prompt: "Say hello", maxRetries: 0 });
      assert.equal(result.text, "Hello!");
      assert.deepEqual(onlyEvent(tracker), succeeded(fromAnthropic(MESSAGE)));
      // The same as fromVercelAI on the result: one place for the AI SDK's conventions.
      const { metadata: _m, ...counts } = fromVercelAI(result);
      const { metadata: _n, status: _s, ...tracked_ } = onlyEvent(tracker);
      assert.deepEqual(tracked_, counts);
    });

    test("streamText: tracked once when the stream ends, the chunks unchanged; attributes from the context", async () => {
      const tracker = recorder();
      let text = "";
      await withAttributes({ customerId: "cus_42" }, async () => {
        const stream = ai.streamText({ model: wrap(gpt("gpt-4o-mini"), tracker), prompt: "Say hello", maxRetries: 0 });
        for await (const delta of stream.textStream) text += delta;
      });
      assert.equal(text, "w0 w1 w2 ");
      await tracked(tracker);
      assert.deepEqual(onlyEvent(tracker), { provider: "openai", model: "gpt-4o-mini-2024-07-18", promptTokens: 50, completionTokens: 3, customerId: "cus_42", status: "success" });
    });

    test("streamText, Anthropic: the stream's usage", async () => {
      const tracker = recorder();
      const stream = ai.streamText({ model: wrap(claude("claude-sonnet-4-5"), tracker), prompt: "Say hello", maxRetries: 0 });
      assert.equal(await stream.text, "Hello!");
      await tracked(tracker);
      const event = onlyEvent(tracker);
      const expected = succeeded(fromAnthropic(MESSAGE));
      assert.deepEqual([event.promptTokens, event.completionTokens, event.cachedInputTokens, event.cacheWriteTokens], [expected.promptTokens, expected.completionTokens, expected.cachedInputTokens, expected.cacheWriteTokens]);
    });

    test("a stream cancelled midway is cancelled, with the model asked for", async () => {
      const tracker = recorder();
      const controller = new AbortController();
      const stream = ai.streamText({ model: wrap(gpt("gpt-4o-mini-slow"), tracker), prompt: "Say hello", maxRetries: 0, abortSignal: controller.signal, onError: () => {} });
      try {
        for await (const _delta of stream.textStream) controller.abort();
      } catch {
        // AI SDK 5 rethrows the abort; 7 ends the stream
      }
      await tracked(tracker);
      assert.deepEqual(onlyEvent(tracker, "cancelled"), { provider: "openai", model: "gpt-4o-mini-slow", promptTokens: 0, completionTokens: 0, status: "cancelled" });
    });

    test("an HTTP error: the AI SDK's own error, tracked with zero tokens", async () => {
      const tracker = recorder();
      await assert.rejects(ai.generateText({ model: wrap(gpt("gpt-4o-mini-fail"), tracker), prompt: "Say hello", maxRetries: 0 }), (error) => error.statusCode === 429);
      assert.deepEqual(onlyEvent(tracker, "error"), { provider: "openai", model: "gpt-4o-mini-fail", promptTokens: 0, completionTokens: 0, status: "error" });
    });

    test("a timeout", async () => {
      const tracker = recorder();
      await assert.rejects(ai.generateText({ model: wrap(claude("claude-sonnet-4-5-hang"), tracker), prompt: "Say hello", maxRetries: 0, abortSignal: AbortSignal.timeout(100) }));
      assert.equal(onlyEvent(tracker, "timeout").model, "claude-sonnet-4-5-hang");
    });
  });
}

test("AI SDK 7, Google: the thoughts the AI SDK counts in the output go back to reasoningTokens", async () => {
  const tracker = recorder();
  const google = createGoogleGenerativeAI({ apiKey: "test-key", baseURL: `${provider.url}/v1beta` });
  const model = ai7.wrapLanguageModel({ model: google("gemini-2.5-flash"), middleware: costtrackMiddleware({ tracker }) });
  await ai7.generateText({ model, prompt: "Say hello", maxRetries: 0 });
  assert.deepEqual(onlyEvent(tracker), succeeded(fromGemini(GEMINI)));
});

test("costtrackMiddleware needs a tracker", () => {
  assert.throws(() => costtrackMiddleware({}), TypeError);
});
