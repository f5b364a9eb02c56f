// instrument() in the paths where capture is easy to get wrong: a server that refuses
// `stream_options`, a caller that stops reading at `finish_reason`, clients derived from an
// instrumented one, the raw-response paths, the beta and embeddings resources, background
// responses, attribution fixed when the call starts, Anthropic on Vertex AI, timeouts, bad
// arguments and Gemini's automatic function calling. The official clients talk over HTTP to the
// canned provider on 127.0.0.1.
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";

import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { AnthropicVertex } from "@anthropic-ai/vertex-sdk";
import { OAuth2Client } from "google-auth-library";
import { GoogleGenAI } from "@google/genai";
import { BedrockRuntimeClient, InvokeModelCommand, InvokeModelWithResponseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";

import { Tracker, instrument, isInstrumented, uninstrument, withAttributes, withReservation } from "costtrack";
import { checkEvent } from "../dist/esm/validation.js";
import { CONVENTIONS } from "../dist/esm/usage-conventions.js"; // generated from spec/usage-conventions.json
import { startCannedService, requestsOf } from "./canned-reservations.mjs";
import { collector, sentEvents, startServer } from "./helpers.mjs";
import { CHAT, INVOKE_COUNTS, MESSAGE, bedrockSettings, chatChunks, recorder, startProvider } from "./canned-provider.mjs";

let provider;
before(async () => {
  provider = await startProvider();
});
after(() => provider.close());

// Every event instrument() builds must be valid (checked after each test).
const trackers = [];
afterEach(() => {
  for (const { invalid } of trackers.splice(0)) assert.deepEqual(invalid, []);
});

const ask = [{ role: "user", content: "Say hello" }];
const openai = (options = {}) => new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/v1`, maxRetries: 0, ...options });

/** A tracker that keeps the events and the warnings instrument() reports to onWarning. */
function watching() {
  const events = [];
  const warnings = [];
  const tracker = recorder();
  trackers.push({ events, invalid: (tracker.invalid = []) });
  const invalid = tracker.invalid;
  tracker.track = (event) => {
    events.push(event); // kept even when invalid: instrument() swallows what track() throws
    const checked = checkEvent(event);
    if (checked.error !== undefined) invalid.push(checked.error.message);
  };
  tracker[Symbol.for("costtrack.warn")] = (warning) => warnings.push(warning);
  return { tracker, events, warnings };
}

async function drain(stream) {
  const seen = [];
  for await (const item of stream) seen.push(item);
  return seen;
}

/** Waits until `list` has `n` items (a stream's end is tracked as it settles). */
async function settled(list, n = 1) {
  for (let i = 0; i < 400 && list.length < n; i++) await new Promise((r) => setTimeout(r, 5));
}

describe("a server that refuses stream_options", () => {
  test("the stream is sent again without them, once, and tracked as usage_missing", async () => {
    const { tracker, events, warnings } = watching();
    const client = instrument(openai(), { tracker });
    const before = provider.requests.length;
    const chunks = await drain(await client.chat.completions.create({ model: "gpt-4o-mini-strict", messages: ask, stream: true }));
    assert.deepEqual(chunks, chatChunks(3).slice(0, -1)); // what the plain client streams
    const sent = provider.requests.slice(before);
    assert.deepEqual(
      sent.map((r) => r.body.stream_options),
      [{ include_usage: true }, undefined],
    );
    assert.equal(events.length, 1);
    assert.equal(events[0].status, "success");
    assert.equal(events[0].promptTokens, 0);
    assert.equal(events[0].metadata.usage_missing, "stream_without_usage");
    assert.deepEqual(
      warnings.map((w) => w.code),
      ["usage_missing"],
    );
  });

  test("withResponse() and asResponse() get the second answer", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const { data, response } = await client.chat.completions.create({ model: "gpt-4o-mini-strict", messages: ask, stream: true }).withResponse();
    assert.equal(response.status, 200);
    assert.equal((await drain(data)).length, 4);
    await settled(events);
    assert.equal(events[0].metadata.usage_missing, "stream_without_usage");
  });

  test("streamUsage: false never adds them; the stream without usage is usage_missing", async () => {
    const { tracker, events, warnings } = watching();
    const client = instrument(openai(), { tracker, streamUsage: false });
    const before = provider.requests.length;
    const chunks = await drain(await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true }));
    assert.equal(chunks.length, 4);
    assert.deepEqual(
      provider.requests.slice(before).map((r) => r.body.stream_options),
      [undefined],
    );
    assert.equal(events[0].status, "success");
    assert.equal(events[0].metadata.usage_missing, "stream_without_usage");
    assert.equal(warnings[0].code, "usage_missing");
  });

  test('"auto" stops adding them for this client once refused; true adds them and never retries', async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const before = provider.requests.length;
    await drain(await client.chat.completions.create({ model: "gpt-4o-mini-strict", messages: ask, stream: true }));
    await drain(await client.chat.completions.create({ model: "gpt-4o-mini-strict", messages: ask, stream: true }));
    assert.deepEqual(
      provider.requests.slice(before).map((r) => r.body.stream_options),
      [{ include_usage: true }, undefined, undefined],
    );
    const always = instrument(openai(), { tracker, streamUsage: true });
    await assert.rejects(always.chat.completions.create({ model: "gpt-4o-mini-strict", messages: ask, stream: true }), (e) => e.status === 400);
    assert.equal(provider.requests.length - before, 4);
    assert.deepEqual(
      events.map((e) => e.status),
      ["success", "success", "error"],
    );
    assert.throws(() => instrument(openai(), { tracker, streamUsage: "yes" }), TypeError);
  });

  test("another 400 is the caller's error, not retried", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const before = provider.requests.length;
    await assert.rejects(client.chat.completions.create({ model: "gpt-4o-mini-fail", messages: ask, stream: true }), (e) => e.status === 429);
    assert.equal(provider.requests.length - before, 1);
    assert.equal(events[0].status, "error");
  });

  test("a real Tracker reports usage_missing to onWarning", async () => {
    const warnings = [];
    const tracker = new Tracker({ apiKey: "ck_test", baseUrl: "http://127.0.0.1:9", maxRetries: 0, onWarning: (w) => warnings.push(w), onError: () => {} });
    try {
      const client = instrument(openai(), { tracker, streamUsage: false });
      await drain(await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true }));
      assert.ok(warnings.some((w) => w.code === "usage_missing" && /usage/.test(w.message)), JSON.stringify(warnings));
    } finally {
      await tracker.shutdown(100);
    }
  });
});

describe("a caller that stops reading once the answer is complete", () => {
  test("Chat Completions: stopped at finish_reason, the usage chunk that follows is still counted", async () => {
    const { tracker, events, warnings } = watching();
    const client = instrument(openai(), { tracker });
    for await (const chunk of await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true })) {
      if (chunk.choices[0]?.finish_reason) break;
    }
    await settled(events);
    assert.equal(events.length, 1);
    assert.equal(events[0].status, "success");
    assert.equal(events[0].promptTokens, 50);
    assert.equal(events[0].completionTokens, 3);
    assert.deepEqual(warnings, []);
  });

  test("Chat Completions: stopped before finish_reason is still cancelled", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    for await (const _chunk of await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true })) break;
    await settled(events);
    assert.equal(events[0].status, "cancelled");
    assert.equal(events[0].promptTokens, 0);
  });

  test("Anthropic: stopped at message_delta (the stop reason), a success with its usage", async () => {
    const { tracker, events } = watching();
    const client = instrument(new Anthropic({ apiKey: "k", baseURL: provider.url, maxRetries: 0 }), { tracker });
    for await (const event of await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask, stream: true })) {
      if (event.type === "message_delta") break;
    }
    await settled(events);
    assert.deepEqual([events[0].status, events[0].promptTokens, events[0].completionTokens], ["success", 1000, 500]);
  });

  test("Gemini: stopped at the chunk with finishReason, a success with its usage", async () => {
    const { tracker, events } = watching();
    const client = instrument(new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: provider.url } }), { tracker });
    for await (const chunk of await client.models.generateContentStream({ model: "gemini-2.5-flash", contents: "hi" })) {
      if (chunk.candidates?.[0]?.finishReason) break;
    }
    await settled(events);
    assert.deepEqual([events[0].status, events[0].promptTokens], ["success", 1000]);
  });

  test("Responses: stopped at response.completed, a success with its usage", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    for await (const event of await client.responses.create({ model: "gpt-5", input: "hi", stream: true })) {
      if (event.type === "response.completed") break;
    }
    await settled(events);
    assert.deepEqual([events[0].status, events[0].promptTokens], ["success", 10000]);
  });
});

describe("clients built from an instrumented client", () => {
  test("withOptions() (and its own withOptions()) is instrumented with the same settings", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker, feature: "parent" });
    const derived = client.withOptions({ timeout: 5000 });
    const again = derived.withOptions({ maxRetries: 0 });
    await derived.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    await again.responses.create({ model: "gpt-5", input: "hi" });
    assert.deepEqual(
      events.map((e) => [e.model, e.feature]),
      [
        ["gpt-4o-mini-2024-07-18", "parent"],
        ["gpt-5-2025-08-07", "parent"],
      ],
    );
  });

  test("instrumenting the first client again with another tracker switches the derived ones too", async () => {
    const first = watching();
    const second = watching();
    const client = instrument(openai(), { tracker: first.tracker });
    const derived = client.withOptions({ timeout: 5000 });
    instrument(client, { tracker: second.tracker, feature: "second" });
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    await derived.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.equal(first.events.length, 0);
    assert.deepEqual(
      second.events.map((e) => e.feature),
      ["second", "second"],
    );
  });

  test("uninstrument() undoes the derived clients; only instances are patched", async () => {
    const { tracker, events } = watching();
    const plain = openai();
    const client = instrument(openai(), { tracker });
    const derived = client.withOptions({ timeout: 5000 });
    assert.equal(Object.hasOwn(plain, "withOptions"), false);
    uninstrument(client);
    assert.equal(isInstrumented(derived), false);
    assert.equal(Object.hasOwn(client, "withOptions"), false);
    await derived.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    await client.withOptions({}).chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.equal(events.length, 0);
  });

  test("Anthropic's withOptions()", async () => {
    const { tracker, events } = watching();
    const client = instrument(new Anthropic({ apiKey: "k", baseURL: provider.url, maxRetries: 0 }), { tracker });
    await client.withOptions({ timeout: 5000 }).messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask });
    assert.deepEqual([events.length, events[0]?.promptTokens], [1, 1000]);
  });
});

describe("paths that were not captured", () => {
  test("asResponse(): the raw response for the caller, the call tracked with its usage", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const response = await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask }).asResponse();
    assert.deepEqual((await response.json()).usage, CHAT.usage);
    await settled(events);
    assert.deepEqual([events.length, events[0].promptTokens, events[0].status], [1, 1200, "success"]);
  });

  test("asResponse() of a stream: the caller reads the raw body, the copy gives the usage", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const response = await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true }).asResponse();
    const text = await response.text();
    assert.match(text, /"usage":\{"prompt_tokens":50/); // the caller gets the body the server sent
    await settled(events);
    assert.deepEqual([events.length, events[0].promptTokens, events[0].completionTokens], [1, 50, 3]);
  });

  test("Anthropic asResponse() and withResponse() are tracked once each", async () => {
    const { tracker, events } = watching();
    const client = instrument(new Anthropic({ apiKey: "k", baseURL: provider.url, maxRetries: 0 }), { tracker });
    const raw = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask }).asResponse();
    assert.equal((await raw.json()).id, MESSAGE.id);
    const { data } = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask }).withResponse();
    assert.equal(data.id, MESSAGE.id);
    await settled(events, 2);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(
      events.map((e) => e.promptTokens),
      [1000, 1000],
    );
  });

  test("Anthropic beta.messages: create, stream and the tool runner", async () => {
    const { tracker, events } = watching();
    const client = instrument(new Anthropic({ apiKey: "k", baseURL: provider.url, maxRetries: 0 }), { tracker });
    await client.beta.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask });
    await client.beta.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask }).finalMessage();
    await settled(events, 2);
    assert.deepEqual(
      events.map((e) => [e.provider, e.promptTokens, e.cachedInputTokens]),
      [
        ["anthropic", 1000, 10000],
        ["anthropic", 1000, 10000],
      ],
    );
    const runner = client.beta.messages.toolRunner({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask, tools: [], thread: false });
    const final = await runner.runUntilDone();
    assert.equal(final.id, MESSAGE.id);
    await settled(events, 3);
    assert.equal(events.length, 3);
  });

  test("OpenAI embeddings.create", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const result = await client.embeddings.create({ model: "text-embedding-3-small", input: "hello" });
    assert.deepEqual(Array.from(result.data[0].embedding), [0.25, -0.5]);
    assert.deepEqual(
      events.map((e) => [e.provider, e.model, e.promptTokens, e.completionTokens, e.status]),
      [["openai", "text-embedding-3-small", 8, 0, "success"]],
    );
  });

  test("a background response is tracked once, when a retrieve sees it done, with its usage", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker, feature: "bg" });
    const started = await client.responses.create({ model: "gpt-5", input: "hi", background: true });
    assert.equal(started.status, "queued");
    assert.equal(events.length, 0);
    assert.equal((await client.responses.retrieve(started.id)).status, "in_progress");
    assert.equal(events.length, 0);
    assert.equal((await client.responses.retrieve(started.id)).status, "completed");
    await client.responses.retrieve(started.id);
    assert.deepEqual(
      events.map((e) => [e.feature, e.status, e.promptTokens, e.cachedInputTokens]),
      [["bg", "success", 10000, 8000]],
    );
  });

  test("a background response cancelled is tracked as cancelled with the usage it reports", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const started = await client.responses.create({ model: "gpt-5", input: "hi", background: true });
    await client.responses.cancel(started.id);
    assert.deepEqual(
      events.map((e) => [e.status, e.promptTokens, e.completionTokens]),
      [["cancelled", 10000, 10]],
    );
  });
});

describe("Bedrock InvokeModel through the AWS SDK's middleware", () => {
  const MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
  const bedrock = () => new BedrockRuntimeClient({ ...bedrockSettings(provider.url), requestHandler: new NodeHttpHandler() });
  const body = JSON.stringify({ anthropic_version: "bedrock-2023-05-31", max_tokens: 100, messages: ask });
  const expected = [MODEL, INVOKE_COUNTS.input, INVOKE_COUNTS.output, INVOKE_COUNTS.cacheRead, INVOKE_COUNTS.cacheWrite, "success"];
  const seen = (e) => [e.model, e.promptTokens, e.completionTokens, e.cachedInputTokens, e.cacheWriteTokens, e.status];

  test("InvokeModel: the counts of its x-amzn-bedrock-*-token-count headers", async () => {
    const { tracker, events } = watching();
    const client = instrument(bedrock(), { tracker });
    const output = await client.send(new InvokeModelCommand({ modelId: MODEL, body, contentType: "application/json" }));
    assert.equal(JSON.parse(new TextDecoder().decode(output.body)).id, MESSAGE.id);
    assert.deepEqual(events.map(seen), [expected]);
  });

  test("InvokeModelWithResponseStream: the counts of its last chunk's invocation metrics", async () => {
    const { tracker, events } = watching();
    const client = instrument(bedrock(), { tracker });
    const output = await client.send(new InvokeModelWithResponseStreamCommand({ modelId: MODEL, body, contentType: "application/json" }));
    const chunks = await drain(output.body);
    assert.equal(chunks.length, 6);
    await settled(events);
    assert.deepEqual(events.map(seen), [expected]);
  });
});

describe("attribution, run and reservation are those of the call's start", () => {
  test("a stream made inside withAttributes() and read outside it, in another context", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const stream = await withAttributes({ feature: "start", customerId: "cus_start" }, () =>
      client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true }),
    );
    await new Promise((r) => setTimeout(r, 5));
    await withAttributes({ feature: "later", customerId: "cus_later" }, async () => {
      await new Promise((r) => setImmediate(r));
      await drain(stream);
    });
    assert.deepEqual(
      events.map((e) => [e.feature, e.customerId, e.promptTokens]),
      [["start", "cus_start", 50]],
    );
  });

  test("a stream made inside a run and read after the run has ended keeps the run's identity", async () => {
    const sink = await startServer();
    const seen = collector();
    const tracker = new Tracker({ apiKey: "ct_test", baseUrl: sink.url, ...seen });
    try {
      const client = instrument(new Anthropic({ apiKey: "k", baseURL: provider.url, maxRetries: 0 }), { tracker });
      let traceId;
      const stream = await tracker.run("answer-ticket", async (run) => {
        traceId = run.traceId;
        return client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask, stream: true });
      });
      await withAttributes({ traceId: "other-trace", runName: "other" }, () => drain(stream));
      assert.equal(await tracker.flush(), true);
      const call = sentEvents(sink.requests)
        .map((e) => e.event)
        .find((e) => e.provider === "anthropic");
      assert.deepEqual([call.trace_id, call.run_name, call.prompt_tokens], [traceId, "answer-ticket", 1000]);
    } finally {
      await tracker.shutdown(100);
      await sink.close();
    }
  });

  test("a stream returned from withReservation() and read after the block settles the block's reservation", async () => {
    const service = await startCannedService();
    const seen = collector();
    const tracker = new Tracker({ apiKey: "ct_test", baseUrl: service.url, ...seen });
    try {
      const client = instrument(openai(), { tracker });
      const stream = await withReservation(tracker, { provider: "openai", model: "gpt-4o-mini", estimate: { amount: "0.01" } }, () =>
        client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true }),
      );
      await new Promise((r) => setTimeout(r, 5));
      await drain(stream);
      assert.equal(await tracker.flush(), true);
      assert.equal(requestsOf(service.requests, "release").length, 0); // the block did not give the hold back
      assert.deepEqual(
        sentEvents(requestsOf(service.requests, "events")).map((e) => [e.event.reservation_id, e.event.prompt_tokens]),
        [["rsv_1", 50]],
      );
      assert.deepEqual(seen.warnings, []);
    } finally {
      await tracker.shutdown(100);
      await service.close();
    }
  });
});

describe("Anthropic on Vertex AI follows Anthropic's counting convention", () => {
  // claude-sonnet-4-5 list prices, USD per million tokens, in hundredths: input, output, cache read, cache write.
  const RATES = { input: 300n, output: 1500n, cached: 30n, write: 375n };
  /** The event's cost as CONTRACT §6 prices it with its provider's counting flags (a decimal string). */
  function cost(event) {
    const [promptIncludesCached] = CONVENTIONS[event.provider];
    const [prompt, cached, write, completion] = [event.promptTokens, event.cachedInputTokens ?? 0, event.cacheWriteTokens ?? 0, event.completionTokens].map(BigInt);
    let uncached = promptIncludesCached ? prompt - cached - write : prompt;
    if (uncached < 0n) uncached = 0n;
    const units = uncached * RATES.input + cached * RATES.cached + write * RATES.write + completion * RATES.output; // 1e-8 USD
    return (Number(units) / 1e8).toFixed(4);
  }
  /** Google's own OAuth client holding a token that has not expired: it asks no token endpoint. */
  function authClient() {
    const client = new OAuth2Client();
    client.setCredentials({ access_token: "ya29.test", expiry_date: Date.now() + 3_600_000 });
    return client;
  }
  const vertex = () => new AnthropicVertex({ region: "us-east5", projectId: "proj", authClient: authClient(), baseURL: provider.url, maxRetries: 0 });

  test("1,000 input + 10,000 cache read + 2,000 cache write + 500 output cost 0.0210, named as Anthropic's", async () => {
    const { tracker, events } = watching();
    const client = instrument(vertex(), { tracker });
    await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask });
    for await (const _event of await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask, stream: true }));
    await settled(events, 2);
    assert.deepEqual(provider.requests.at(-1).path, "/projects/proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:streamRawPredict");
    for (const event of events) {
      assert.deepEqual([event.provider, event.metadata.usage_convention, event.promptTokens, event.cachedInputTokens, event.cacheWriteTokens], ["anthropic", "anthropic", 1000, 10000, 2000]);
      assert.equal(cost(event), "0.0210");
    }
  });

  test("named as another provider, the counts follow that provider's flags and cost the same", async () => {
    const { tracker, events } = watching();
    const client = instrument(vertex(), { tracker, provider: "google" });
    await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 100, messages: ask });
    assert.deepEqual([events[0].provider, events[0].metadata.usage_convention, events[0].promptTokens], ["google", "anthropic", 13000]);
    assert.equal(cost(events[0]), "0.0210");
  });
});

describe("what a call's status and tracker are", () => {
  test("instrumenting a client again with another tracker switches to the latest", async () => {
    const first = watching();
    const second = watching();
    const client = instrument(openai(), { tracker: first.tracker });
    instrument(client, { tracker: second.tracker });
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
    assert.deepEqual([first.events.length, second.events.length], [0, 1]);
  });

  test("a TypeError from bad arguments, thrown before any request, records nothing", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    const before = provider.requests.length;
    await assert.rejects(client.chat.completions.create(null), TypeError); // rejected: openai reads the body late
    assert.throws(() => client.embeddings.create(undefined), TypeError); // thrown at once
    await assert.rejects(client.responses.create(null), TypeError);
    assert.equal(provider.requests.length, before);
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(events, []);
  });

  test("AbortSignal.timeout() is timeout, not cancelled (openai, Anthropic, Gemini); the caller's abort stays cancelled", async () => {
    const { tracker, events } = watching();
    const client = instrument(openai(), { tracker });
    await assert.rejects(client.chat.completions.create({ model: "gpt-4o-mini-hang", messages: ask }, { signal: AbortSignal.timeout(30) }));
    const claude = instrument(new Anthropic({ apiKey: "k", baseURL: provider.url, maxRetries: 0 }), { tracker });
    await assert.rejects(claude.messages.create({ model: "claude-hang", max_tokens: 1, messages: ask }, { signal: AbortSignal.timeout(30) }));
    const gemini = instrument(new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: provider.url } }), { tracker });
    await assert.rejects(gemini.models.generateContent({ model: "gemini-2.5-flash-hang", contents: "hi", config: { abortSignal: AbortSignal.timeout(30) } }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    await assert.rejects(client.chat.completions.create({ model: "gpt-4o-mini-hang", messages: ask }, { signal: controller.signal }));
    assert.deepEqual(
      events.map((e) => [e.model, e.status]),
      [
        ["gpt-4o-mini-hang", "timeout"],
        ["claude-hang", "timeout"],
        ["gemini-2.5-flash-hang", "timeout"],
        ["gpt-4o-mini-hang", "cancelled"],
      ],
    );
  });
});

describe("@google/genai's automatic function calling", () => {
  const weather = {
    tool: async () => ({ functionDeclarations: [{ name: "get_weather", description: "The weather in a city", parametersJsonSchema: { type: "object", properties: { city: { type: "string" } } } }] }),
    callTool: async (calls) => calls.map((call) => ({ functionResponse: { name: call.name, response: { forecast: "sunny" } } })),
  };

  test("every model call inside one generateContent is counted", async () => {
    const { tracker, events } = watching();
    const client = instrument(new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: provider.url } }), { tracker, feature: "afc" });
    const before = provider.requests.length;
    const response = await client.models.generateContent({ model: "gemini-2.5-flash-tools", contents: "Weather in Paris?", config: { tools: [weather] } });
    assert.equal(response.text, "Hello!");
    assert.equal(provider.requests.length - before, 2);
    assert.deepEqual(
      events.map((e) => [e.feature, e.promptTokens, e.completionTokens, e.status]),
      [
        ["afc", 120, 15, "success"],
        ["afc", 1000, 300, "success"],
      ],
    );
  });

  test("and inside one generateContentStream", async () => {
    const { tracker, events } = watching();
    const client = instrument(new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: provider.url } }), { tracker });
    let text = "";
    for await (const chunk of await client.models.generateContentStream({ model: "gemini-2.5-flash-tools", contents: "Weather in Paris?", config: { tools: [weather] } })) {
      text += chunk.text ?? "";
    }
    assert.match(text, /Hello!/);
    await settled(events, 2);
    assert.deepEqual(
      events.map((e) => [e.promptTokens, e.completionTokens]),
      [
        [120, 15],
        [1000, 300],
      ],
    );
  });
});

describe("@google/genai embedContent", () => {
  test("Vertex AI's token count is the prompt; the Gemini API's, which reports none, is usage_missing", async () => {
    const { tracker, events, warnings } = watching();
    const vertex = instrument(new GoogleGenAI({ vertexai: true, apiKey: "k", httpOptions: { baseUrl: provider.url } }), { tracker });
    const embedded = await vertex.models.embedContent({ model: "text-embedding-005", contents: "hello" });
    assert.deepEqual(embedded.embeddings[0].values, [0.25, -0.5]);
    const gemini = instrument(new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: provider.url } }), { tracker });
    await gemini.models.embedContent({ model: "gemini-embedding-001", contents: "hello" });
    assert.deepEqual(
      events.map((e) => [e.provider, e.model, e.promptTokens, e.completionTokens, e.metadata?.usage_missing]),
      [
        ["google", "text-embedding-005", 7, 0, undefined],
        ["google", "gemini-embedding-001", 0, 0, "not_reported"],
      ],
    );
    assert.deepEqual(
      warnings.map((w) => w.code),
      ["usage_missing"],
    );
  });
});
