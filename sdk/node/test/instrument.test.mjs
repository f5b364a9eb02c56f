// instrument(): the official clients (openai, @anthropic-ai/sdk, @google/genai, AWS SDK v3 Bedrock
// Runtime) against the canned provider on 127.0.0.1, each call tracked once with the usage the
// provider helper reads from the same response, its latency and its status: sync, stream, stream
// cancelled midway, HTTP error, timeout. What the caller sees is the client's own.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import OpenAI, { AzureOpenAI } from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";

import { fromAnthropic, fromBedrockConverse, fromGemini, fromOpenAI, instrument, isInstrumented, uninstrument } from "costtrack";
import { checkEvent } from "../dist/esm/validation.js";
import { CHAT, CONVERSE, GEMINI, MESSAGE, RESPONSE, bedrockSettings, chatChunks, recorder, startProvider } from "./canned-provider.mjs";

let provider;
before(async () => {
  provider = await startProvider();
});
after(() => provider.close());

const ask = [{ role: "user", content: "Say hello" }];
const openai = (options = {}) => new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/v1`, maxRetries: 0, ...options });
const anthropic = (options = {}) => new Anthropic({ apiKey: "sk-ant-test", baseURL: provider.url, maxRetries: 0, ...options });
const google = () => new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: provider.url } });
// HTTP/1.1: the canned provider is no HTTP/2 server.
const bedrock = () => new BedrockRuntimeClient({ ...bedrockSettings(provider.url), requestHandler: new NodeHttpHandler() });

/** The one event tracked, valid, with a latency; returned without its latency. */
function only(tracker, status = "success") {
  assert.equal(tracker.events.length, 1, JSON.stringify(tracker.events));
  const [event] = tracker.events;
  assert.equal(event.status, status);
  assert.ok(typeof event.latencyMs === "number" && event.latencyMs >= 0);
  const checked = checkEvent(event);
  assert.equal(checked.error, undefined, checked.error?.message);
  const { latencyMs: _latency, ...rest } = event;
  return withoutConvention(rest);
}

/** The event without `metadata.usage_convention` (each call's route names one; checked apart). */
function withoutConvention(event) {
  if (event.metadata?.usage_convention === undefined) return event;
  assert.ok(["openai", "anthropic", "google", "bedrock", "xai"].includes(event.metadata.usage_convention));
  const { usage_convention: _convention, ...metadata } = event.metadata;
  const { metadata: _metadata, ...rest } = event;
  return Object.keys(metadata).length === 0 ? rest : { ...rest, metadata };
}

const same = (helperEvent) => {
  const { latencyMs: _l, ...rest } = helperEvent;
  return { ...rest, status: "success" };
};

async function drain(stream) {
  const seen = [];
  for await (const item of stream) seen.push(item);
  return seen;
}

/** Waits until the tracker has `n` events (a stream's end is tracked as it settles). */
async function tracked(tracker, n = 1) {
  for (let i = 0; i < 200 && tracker.events.length < n; i++) await new Promise((r) => setTimeout(r, 5));
}

describe("openai", () => {
  test("Chat Completions: the same client, the helper's event, feature from the defaults", async () => {
    const tracker = recorder();
    const client = openai();
    assert.equal(instrument(client, { tracker, feature: "chat" }), client);
    const completion = await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.deepEqual(completion, CHAT);
    assert.deepEqual(only(tracker), { ...same(fromOpenAI(CHAT)), feature: "chat" });
  });

  test("withResponse() and asResponse() still work on the instrumented call", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker });
    const { data, response } = await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask }).withResponse();
    assert.deepEqual(data, CHAT);
    assert.equal(response.status, 200);
    assert.equal(tracker.events.length, 1);
  });

  test("a stream: usage asked for, the usage-only chunk held back, chunks unchanged", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker });
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true, n: 5 });
    const chunks = await drain(stream);
    assert.deepEqual(provider.requests.at(-1).body.stream_options, { include_usage: true });
    const all = chatChunks(5);
    assert.deepEqual(chunks, all.slice(0, -1)); // what the caller sees without costtrack
    assert.deepEqual(only(tracker), same(fromOpenAI(all.at(-1))));
  });

  test("a stream whose caller asked for usage gets the usage chunk", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker });
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true, stream_options: { include_usage: true } });
    const chunks = await drain(stream);
    assert.deepEqual(chunks, chatChunks(3));
    assert.equal(only(tracker).promptTokens, 50);
  });

  test("the stream() helper (ChatCompletionStream) is tracked once", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker });
    const runner = client.chat.completions.stream({ model: "gpt-4o-mini", messages: ask });
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].message.content, "w0 w1 w2 ");
    await tracked(tracker);
    assert.equal(only(tracker).completionTokens, 3);
  });

  test("a stream the caller stops early is cancelled", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker });
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini-slow", messages: ask, stream: true });
    for await (const _chunk of stream) break;
    assert.deepEqual(only(tracker, "cancelled"), { provider: "openai", model: "gpt-4o-mini-2024-07-18", promptTokens: 0, completionTokens: 0, status: "cancelled" });
  });

  test("an abort signal midway is cancelled, and the caller's rejection is unchanged", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker });
    const controller = new AbortController();
    const pending = client.chat.completions.create({ model: "gpt-4o-mini-hang", messages: ask }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(pending, OpenAI.APIUserAbortError);
    assert.equal(only(tracker, "cancelled").model, "gpt-4o-mini-hang");
  });

  test("an HTTP error: the client's error, tracked with zero tokens", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker, customerId: "cus_1" });
    await assert.rejects(client.chat.completions.create({ model: "gpt-4o-mini-fail", messages: ask }), (error) => error.status === 429);
    assert.deepEqual(only(tracker, "error"), {
      provider: "openai",
      model: "gpt-4o-mini-fail",
      customerId: "cus_1",
      promptTokens: 0,
      completionTokens: 0,
      status: "error",
    });
  });

  test("a timeout", async () => {
    const tracker = recorder();
    const client = instrument(openai({ timeout: 50 }), { tracker });
    await assert.rejects(client.responses.create({ model: "gpt-5-hang", input: "hi" }), OpenAI.APIConnectionTimeoutError);
    assert.equal(only(tracker, "timeout").model, "gpt-5-hang");
  });

  test("Responses API, sync and streamed", async () => {
    const tracker = recorder();
    const client = instrument(openai(), { tracker });
    const { output_text: text, ...response } = await client.responses.create({ model: "gpt-5", input: "hi" });
    assert.equal(text, "Hello!"); // the SDK's convenience property
    assert.deepEqual(response, RESPONSE);
    assert.deepEqual(only(tracker), same(fromOpenAI(RESPONSE)));
    tracker.events.length = 0;
    const events = await drain(await client.responses.create({ model: "gpt-5", input: "hi", stream: true }));
    assert.equal(events.length, 3);
    assert.deepEqual(only(tracker), same(fromOpenAI(RESPONSE)));
  });

  test("Azure OpenAI is provider azure", async () => {
    const tracker = recorder();
    const client = new AzureOpenAI({ apiKey: "k", endpoint: provider.url, apiVersion: "2024-10-21", deployment: "gpt-4o-mini", maxRetries: 0 });
    instrument(client, { tracker });
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.deepEqual(only(tracker), same(fromOpenAI(CHAT, { provider: "azure" })));
  });

  test("instrumenting twice tracks once; uninstrument restores the client", async () => {
    const tracker = recorder();
    const client = openai();
    const create = client.chat.completions.create;
    instrument(client, { tracker });
    instrument(client, { tracker, feature: "second" });
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.equal(only(tracker).feature, "second");
    assert.equal(uninstrument(client), client);
    assert.equal(isInstrumented(client), false);
    assert.equal(client.chat.completions.create, create);
    assert.equal(Object.hasOwn(client.chat.completions, "create"), false);
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.equal(tracker.events.length, 1);
  });

  test("only the instance is patched, never the prototype", async () => {
    const tracker = recorder();
    const one = instrument(openai(), { tracker });
    const other = openai();
    assert.notEqual(one.chat.completions.create, other.chat.completions.create);
    await other.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.equal(tracker.events.length, 0);
  });

  test("a tracker that throws never breaks the call", async () => {
    const client = instrument(openai(), { tracker: { track: () => { throw new Error("boom"); } } });
    assert.deepEqual(await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask }), CHAT);
  });

  test("not a client, or no tracker: a TypeError at setup", () => {
    assert.throws(() => instrument({}, { tracker: recorder() }), TypeError);
    assert.throws(() => instrument(openai(), {}), TypeError);
  });
});

describe("@anthropic-ai/sdk", () => {
  test("Messages: the helper's event", async () => {
    const tracker = recorder();
    const client = instrument(anthropic(), { tracker });
    assert.deepEqual(await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask }), MESSAGE);
    assert.deepEqual(only(tracker), same(fromAnthropic(MESSAGE)));
  });

  test("create({ stream: true }): usage from message_start and message_delta", async () => {
    const tracker = recorder();
    const client = instrument(anthropic(), { tracker });
    const events = await drain(await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask, stream: true }));
    assert.equal(events.length, 6);
    assert.deepEqual(only(tracker), same(fromAnthropic(MESSAGE)));
  });

  test("messages.stream(): one event, finalMessage() unchanged", async () => {
    const tracker = recorder();
    const client = instrument(anthropic(), { tracker });
    const final = await client.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask }).finalMessage();
    assert.deepEqual(final.usage, MESSAGE.usage);
    await tracked(tracker);
    assert.deepEqual(only(tracker), same(fromAnthropic(MESSAGE)));
  });

  test("a stream aborted midway is cancelled with the input counts seen so far", async () => {
    const tracker = recorder();
    const client = instrument(anthropic(), { tracker });
    const stream = client.messages.stream({ model: "claude-sonnet-4-5-slow", max_tokens: 100, messages: ask });
    stream.on("streamEvent", (event) => event.type === "content_block_start" && stream.abort());
    await assert.rejects(stream.finalMessage(), Anthropic.APIUserAbortError);
    await tracked(tracker);
    const event = only(tracker, "cancelled");
    assert.equal(event.promptTokens, 1000);
    assert.equal(event.completionTokens, 1);
  });

  test("an HTTP error and a timeout", async () => {
    const tracker = recorder();
    const client = instrument(anthropic(), { tracker });
    await assert.rejects(client.messages.create({ model: "claude-fail", max_tokens: 1, messages: ask }), (e) => e.status === 429);
    // The short timeout only where it is meant to fire (a loaded host can take 50 ms to answer).
    await assert.rejects(client.messages.create({ model: "claude-hang", max_tokens: 1, messages: ask }, { timeout: 50 }), Anthropic.APIConnectionTimeoutError);
    assert.deepEqual(
      tracker.events.map((e) => [e.model, e.status, e.promptTokens]),
      [
        ["claude-fail", "error", 0],
        ["claude-hang", "timeout", 0],
      ],
    );
  });
});

describe("@google/genai", () => {
  test("generateContent and generateContentStream", async () => {
    const tracker = recorder();
    const client = instrument(google(), { tracker });
    const response = await client.models.generateContent({ model: "gemini-2.5-flash", contents: "hi" });
    assert.equal(response.text, "Hello!");
    assert.deepEqual(only(tracker), same(fromGemini(response)));
    tracker.events.length = 0;
    let text = "";
    for await (const chunk of await client.models.generateContentStream({ model: "gemini-2.5-flash", contents: "hi" })) text += chunk.text;
    assert.equal(text, "Hello!Hello!");
    assert.deepEqual(only(tracker), same(fromGemini(GEMINI)));
  });

  test("a stream stopped early, an HTTP error", async () => {
    const tracker = recorder();
    const client = instrument(google(), { tracker });
    for await (const _chunk of await client.models.generateContentStream({ model: "gemini-2.5-flash-slow", contents: "hi" })) break;
    await assert.rejects(client.models.generateContent({ model: "gemini-2.5-flash-fail", contents: "hi" }));
    assert.deepEqual(
      tracker.events.map((e) => [e.model, e.status, e.promptTokens]),
      [
        ["gemini-2.5-flash", "cancelled", 0],
        ["gemini-2.5-flash-fail", "error", 0],
      ],
    );
    uninstrument(client);
    assert.equal(typeof client.models.generateContent, "function");
    await client.models.generateContent({ model: "gemini-2.5-flash", contents: "hi" });
    assert.equal(tracker.events.length, 2);
  });
});

describe("Bedrock Runtime (AWS SDK v3), through a middleware", () => {
  const MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
  const input = (modelId = MODEL) => ({ modelId, messages: [{ role: "user", content: [{ text: "hi" }] }] });

  test("Converse and ConverseStream", async () => {
    const tracker = recorder();
    const client = instrument(bedrock(), { tracker });
    const output = await client.send(new ConverseCommand(input()));
    assert.deepEqual(output.usage, CONVERSE.usage);
    assert.deepEqual(only(tracker), same(fromBedrockConverse(CONVERSE, { model: MODEL })));
    tracker.events.length = 0;
    const streamed = await client.send(new ConverseStreamCommand(input()));
    const events = await drain(streamed.stream);
    assert.equal(events.length, 5);
    assert.deepEqual(only(tracker), same(fromBedrockConverse(CONVERSE, { model: MODEL })));
  });

  test("an error, a stream stopped early; uninstrument removes the middleware", async () => {
    const tracker = recorder();
    const client = instrument(bedrock(), { tracker });
    await assert.rejects(client.send(new ConverseCommand(input("m-fail"))), { name: "ThrottlingException" });
    const streamed = await client.send(new ConverseStreamCommand(input("m-slow")));
    for await (const _event of streamed.stream) break;
    assert.deepEqual(
      tracker.events.map((e) => [e.model, e.status, e.promptTokens]),
      [
        ["m-fail", "error", 0],
        ["m-slow", "cancelled", 0],
      ],
    );
    uninstrument(client);
    await client.send(new ConverseCommand(input()));
    assert.equal(tracker.events.length, 2);
  });
});
