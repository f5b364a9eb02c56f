// The LangChain JS callback handler (costtrack/langchain) run by @langchain/core itself: a chat
// model built on BaseChatModel answers with LangChain's documented objects (an AIMessage with
// usage_metadata and response_metadata as the provider integrations fill them), through invoke,
// stream, a chain and a failed, timed-out or aborted run.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk } from "@langchain/core/messages";
import { ChatGenerationChunk } from "@langchain/core/outputs";
import { RunnableLambda, RunnableSequence } from "@langchain/core/runnables";
import { tool } from "@langchain/core/tools";
import { z } from "zod";

import { fromAnthropic, fromGemini, withAttributes } from "costtrack";
import { CosttrackCallbackHandler, fromLangChain } from "costtrack/langchain";
import { checkEvent } from "../dist/esm/validation.js";
import { GEMINI, MESSAGE, onlyEvent, recorder } from "./canned-provider.mjs";

const withoutTotal = ({ totalTokens: _t, ...rest }) => rest;

// LangChain's usage_metadata counts all input (cache included) and all output (reasoning included).
const ANTHROPIC_REPLY = {
  content: "Hello!",
  usage_metadata: { input_tokens: 13000, output_tokens: 500, total_tokens: 13500, input_token_details: { cache_read: 10000, cache_creation: 2000 } },
  response_metadata: { model_name: "claude-sonnet-4-5-20250929", model_provider: "anthropic", usage: MESSAGE.usage },
};
const GEMINI_REPLY = {
  content: "Hello!",
  usage_metadata: { input_tokens: 1000, output_tokens: 1000, total_tokens: 2000, output_token_details: { reasoning: 700 } },
  response_metadata: { model_name: "gemini-2.5-flash", usageMetadata: GEMINI.usageMetadata },
};

/** Waits, or rejects as the provider SDKs do (APIUserAbortError) when `signal` aborts: integrations pass it on. */
function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(Object.assign(new Error("Request was aborted."), { name: "APIUserAbortError" }));
    });
  });
}

/** A chat model that answers `reply` (or throws `error`, or waits `delayMs`), as an integration would. */
class CannedChat extends BaseChatModel {
  constructor({ reply, provider, model, error, delayMs = 0, ...rest }) {
    super(rest);
    Object.assign(this, { reply, provider, model, error, delayMs });
  }
  _llmType() {
    return "canned";
  }
  getLsParams(options) {
    return { ...super.getLsParams(options), ls_provider: this.provider, ls_model_name: this.model };
  }
  async _generate(_messages, options) {
    if (this.delayMs) await pause(this.delayMs, options.signal);
    if (this.error) throw this.error;
    return { generations: [{ text: this.reply.content, message: new AIMessage(this.reply) }] };
  }
  async *_streamResponseChunks() {
    const { content, usage_metadata, response_metadata } = this.reply;
    yield new ChatGenerationChunk({ text: content.slice(0, 3), message: new AIMessageChunk({ content: content.slice(0, 3) }) });
    if (this.delayMs) await pause(this.delayMs);
    yield new ChatGenerationChunk({ text: content.slice(3), message: new AIMessageChunk({ content: content.slice(3), usage_metadata, response_metadata }) });
  }
}


const claude = (options = {}) => new CannedChat({ reply: ANTHROPIC_REPLY, provider: "anthropic", model: "claude-sonnet-4-5", ...options });

describe("LangChain callback handler", () => {
  test("invoke: the Anthropic integration's usage_metadata gives fromAnthropic's event for the same message", async () => {
    const tracker = recorder();
    const message = await claude().invoke("Say hello", { callbacks: [new CosttrackCallbackHandler({ tracker, feature: "chat" })] });
    assert.equal(message.content, "Hello!");
    // Tracked before invoke returned (the handler is awaited).
    assert.deepEqual(onlyEvent(tracker), { ...withoutTotal(fromAnthropic(MESSAGE)), feature: "chat", status: "success" });
  });

  test("Gemini: output_tokens counts the thoughts, which go back to reasoningTokens", async () => {
    const tracker = recorder();
    const model = new CannedChat({ reply: GEMINI_REPLY, provider: "google_genai", model: "gemini-2.5-flash", callbacks: [new CosttrackCallbackHandler({ tracker })] });
    await model.invoke("Say hello");
    assert.deepEqual(onlyEvent(tracker), { ...withoutTotal(fromGemini(GEMINI)), status: "success" });
  });

  test("stream: tracked once when it ends, with the aggregated usage", async () => {
    const tracker = recorder();
    let text = "";
    for await (const chunk of await claude().stream("Say hello", { callbacks: [new CosttrackCallbackHandler({ tracker })] })) text += chunk.content;
    assert.equal(text, "Hello!");
    assert.deepEqual(onlyEvent(tracker), { ...withoutTotal(fromAnthropic(MESSAGE)), status: "success" });
  });

  test("a chain: every model run inside, with the attributes in force when it started", async () => {
    const tracker = recorder();
    const model = claude();
    const chain = RunnableLambda.from(async (input, config) => [await model.invoke(input, config), await model.invoke(input, config)]);
    await withAttributes({ customerId: "cus_42" }, () => chain.invoke("Say hello", { callbacks: [new CosttrackCallbackHandler({ tracker })] }));
    assert.equal(tracker.events.length, 2);
    for (const event of tracker.events) assert.equal(event.customerId, "cus_42");
  });

  test("run ids: a model run in a chain or a tool has the root run's id as traceId and its parent's as parentId", async () => {
    const tracker = recorder();
    const seen = { parents: [] };
    const ids = {
      handleChainStart: (_chain, _inputs, runId, parentRunId) => {  // the manager passes the parent fourth
        if (parentRunId === undefined) seen.root = runId;
      },
      handleChatModelStart: (_llm, _messages, _runId, parentRunId) => void seen.parents.push(parentRunId),
    };
    const model = claude();
    const ask = tool(async (input, config) => String((await model.invoke(input.question, config)).content), {
      name: "ask",
      description: "Ask the model.",
      schema: z.object({ question: z.string() }),
    });
    const chain = RunnableSequence.from([
      RunnableLambda.from((text) => `${text}?`),
      model,
      RunnableLambda.from((message, config) => ask.invoke({ question: String(message.content) }, config)),
    ]);
    const handler = new CosttrackCallbackHandler({ tracker });
    assert.equal(await chain.invoke("Say hello", { callbacks: [handler, ids] }), "Hello!");
    assert.equal(tracker.events.length, 2);
    assert.deepEqual(tracker.events.map((event) => event.traceId), [seen.root, seen.root]);
    assert.deepEqual(tracker.events.map((event) => event.parentId), seen.parents);
    assert.equal(seen.parents[0], seen.root);
    assert.notEqual(seen.parents[1], seen.root); // the tool's run
    for (const event of tracker.events) assert.equal(checkEvent(event).error, undefined);

    // The context's ids win; a model run on its own has none; a failing chain is forgotten too.
    const short = RunnableSequence.from([RunnableLambda.from((text) => text), model]);
    await withAttributes({ traceId: "req-7", parentId: "step-1" }, () => short.invoke("Hi", { callbacks: [handler] }));
    assert.equal(tracker.events[2].traceId, "req-7");
    assert.equal(tracker.events[2].parentId, "step-1");
    await model.invoke("Hi", { callbacks: [handler] });
    assert.equal(tracker.events[3].traceId, undefined);
    assert.equal(tracker.events[3].parentId, undefined);
    const failing = RunnableSequence.from([model, RunnableLambda.from(() => { throw new Error("no"); })]);
    await assert.rejects(failing.invoke("Hi", { callbacks: [handler] }), /no/);
    assert.match(tracker.events[4].traceId, /^[0-9a-f-]{36}$/);
    assert.equal(tracker.events[4].traceId, tracker.events[4].parentId); // the sequence is the model's parent and root
  });

  test("a failed run: zero tokens, the model asked for, the error's status; the error is LangChain's own", async () => {
    for (const [error, status] of [
      [Object.assign(new Error("Rate limited"), { status: 429 }), "error"],
      [Object.assign(new Error("Request timed out."), { name: "APIConnectionTimeoutError" }), "timeout"],
    ]) {
      const tracker = recorder();
      await assert.rejects(claude({ error }).invoke("Say hello", { callbacks: [new CosttrackCallbackHandler({ tracker })] }), (e) => e === error);
      assert.deepEqual(onlyEvent(tracker, status), { provider: "anthropic", model: "claude-sonnet-4-5", promptTokens: 0, completionTokens: 0, status });
    }
  });

  test("an aborted run is cancelled", async () => {
    const tracker = recorder();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    await assert.rejects(claude({ delayMs: 2000 }).invoke("Say hello", { signal: controller.signal, callbacks: [new CosttrackCallbackHandler({ tracker })] }));
    assert.equal(onlyEvent(tracker, "cancelled").promptTokens, 0);
  });

  test("fromLangChain reads an AIMessage or an LLMResult; the handler needs a tracker", () => {
    const message = new AIMessage(ANTHROPIC_REPLY);
    assert.deepEqual(fromLangChain(message), withoutTotal(fromAnthropic(MESSAGE)));
    assert.deepEqual(fromLangChain({ generations: [[{ text: "Hello!", message }]] }, { feature: "x" }), { ...withoutTotal(fromAnthropic(MESSAGE)), feature: "x" });
    // An LLM without usage_metadata: llmOutput.tokenUsage as given.
    assert.deepEqual(fromLangChain({ generations: [[{ text: "Hi" }]], llmOutput: { tokenUsage: { promptTokens: 5, completionTokens: 2 } } }, { provider: "openai", model: "gpt-3.5-turbo-instruct" }), {
      provider: "openai",
      model: "gpt-3.5-turbo-instruct",
      promptTokens: 5,
      completionTokens: 2,
    });
    assert.throws(() => new CosttrackCallbackHandler({}), TypeError);
  });
});
