// The provider helpers fed by the official client libraries (openai, @anthropic-ai/sdk,
// @google/genai) and by the Vercel AI SDK (ai with @ai-sdk/openai, @ai-sdk/anthropic,
// @ai-sdk/google), each pointed at a canned provider on 127.0.0.1 that answers with the
// provider's real response JSON. Nothing leaves this machine: fetch and https refuse any other
// host, and the test fails if anything tried.
import assert from "node:assert/strict";
import http from "node:http";
import https from "node:https";
import { after, before, describe, test } from "node:test";

import { Tracker, fromAnthropic, fromGemini, fromOpenAI, fromVercelAI } from "costtrack";
import { checkEvent } from "../dist/esm/validation.js";
import { collector, sentEvents, startServer } from "./helpers.mjs";
import {
  ANTHROPIC_EVENT,
  ANTHROPIC_USAGE,
  DEEPSEEK_EVENT,
  DEEPSEEK_USAGE,
  GPT5_EVENT,
  GPT5_RESPONSES_USAGE,
  anthropicUsage,
  chatUsage,
  modalities,
  withoutTotal,
} from "./usage-fixtures.mjs";

// -- the network guard, installed before any client library is loaded ---------------------------

const escapes = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  if (url.hostname !== "127.0.0.1") {
    escapes.push(String(url));
    return Promise.reject(new Error(`test network guard: ${url} is not 127.0.0.1`));
  }
  return realFetch(input, init);
};
for (const module of [http, https]) {
  for (const name of ["request", "get"]) {
    const real = module[name];
    module[name] = function guarded(...args) {
      const target = args.find((a) => typeof a === "string" || a instanceof URL || (a && typeof a === "object" && ("host" in a || "hostname" in a)));
      const host = typeof target === "string" || target instanceof URL ? new URL(target).hostname : target?.hostname ?? target?.host;
      if (host !== "127.0.0.1") {
        escapes.push(`${name} ${host}`);
        throw new Error(`test network guard: ${host} is not 127.0.0.1`);
      }
      return real.apply(this, args);
    };
  }
}

const [{ default: OpenAI }, { default: Anthropic }, { GoogleGenAI }, ai, { createOpenAI }, { createAnthropic }, { createGoogleGenerativeAI }] =
  await Promise.all([
    import("openai"),
    import("@anthropic-ai/sdk"),
    import("@google/genai"),
    import("ai"),
    import("@ai-sdk/openai"),
    import("@ai-sdk/anthropic"),
    import("@ai-sdk/google"),
  ]);
// AI SDK 5 and its providers (@ai-sdk/*@2), installed under aliases beside the current ones: its
// usage has another shape and other meanings (see fromVercelAI).
const [ai5, { createOpenAI: createOpenAI5 }, { createAnthropic: createAnthropic5 }, { createGoogleGenerativeAI: createGoogle5 }] = await Promise.all([
  import("ai-v5"),
  import("ai-sdk-openai-v2"),
  import("ai-sdk-anthropic-v2"),
  import("ai-sdk-google-v2"),
]);

// -- the providers' response JSON ---------------------------------------------------------------

const CREATED = 1763000000;

/** Chat Completions: the flex tier, audio in and out, part of the prompt cached. */
const CHAT_FLEX_AUDIO = {
  id: "chatcmpl-CQ1flexAudio",
  object: "chat.completion",
  created: CREATED,
  model: "gpt-4o-audio-preview-2025-06-03",
  service_tier: "flex",
  system_fingerprint: "fp_1c9d3e2b4f",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello!", refusal: null, annotations: [] }, logprobs: null, finish_reason: "stop" }],
  usage: chatUsage({ prompt: 1200, completion: 300, cached: 200, promptAudio: 700, completionAudio: 250 }),
};

/** Responses API: gpt-5 on the priority tier, with cached input and reasoning. */
const RESPONSE_GPT5 = {
  id: "resp_68f1c2d3e4",
  object: "response",
  created_at: CREATED,
  status: "completed",
  background: false,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  model: "gpt-5-2025-08-07",
  output: [
    { id: "rs_68f1c2d3e5", type: "reasoning", summary: [] },
    {
      id: "msg_68f1c2d3e6",
      type: "message",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: "Hello!", annotations: [], logprobs: [] }],
    },
  ],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: "medium", summary: null },
  service_tier: "priority",
  store: true,
  temperature: 1,
  text: { format: { type: "text" }, verbosity: "medium" },
  tool_choice: "auto",
  tools: [],
  top_p: 1,
  truncation: "disabled",
  usage: GPT5_RESPONSES_USAGE,
  user: null,
  metadata: {},
};

/** DeepSeek: cache hits and misses beside prompt_tokens, no prompt_tokens_details. */
const DEEPSEEK = {
  id: "930c60df-bf64-41c9-a88e-3ec75f81e00e",
  object: "chat.completion",
  created: CREATED,
  model: "deepseek-chat",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello!" }, logprobs: null, finish_reason: "stop" }],
  usage: DEEPSEEK_USAGE,
  system_fingerprint: "fp_ffc7281d48_prod0820_fp8_kvcache",
};

/** Anthropic: one-hour cache writes, cache reads, and two web searches. */
const ANTHROPIC_MESSAGE = {
  id: "msg_01XFDUDYJgAACzvnptvVoYEL",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [{ type: "text", text: "Hello!" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: ANTHROPIC_USAGE,
};

/** Gemini: audio in the prompt and in the cache, thoughts apart from the candidates. */
const GEMINI_RESPONSE = {
  candidates: [{ content: { parts: [{ text: "Hello!" }], role: "model" }, finishReason: "STOP", index: 0 }],
  usageMetadata: {
    promptTokenCount: 1000,
    candidatesTokenCount: 300,
    totalTokenCount: 2000,
    cachedContentTokenCount: 500,
    promptTokensDetails: modalities({ TEXT: 400, AUDIO: 600 }),
    cacheTokensDetails: modalities({ TEXT: 200, AUDIO: 300 }),
    candidatesTokensDetails: modalities({ TEXT: 300 }),
    thoughtsTokenCount: 700,
  },
  modelVersion: "gemini-2.5-flash",
  responseId: "mHr5aKqAEqOQ1dkP3aWhsAE",
};

// A two-step Anthropic call: a tool call (writing the cache), then the answer (reading it).
const ANTHROPIC_TOOL_CALL = {
  ...ANTHROPIC_MESSAGE,
  id: "msg_01ToolCall",
  content: [{ type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "weather", input: { city: "Paris" } }],
  stop_reason: "tool_use",
  usage: anthropicUsage({ input: 400, output: 60, write5m: 1000, write1h: 2000, tier: "standard" }),
};
const ANTHROPIC_AFTER_TOOL = {
  ...ANTHROPIC_MESSAGE,
  id: "msg_01AfterTool",
  content: [{ type: "text", text: "Sunny in Paris." }],
  usage: anthropicUsage({ input: 90, output: 20, cacheRead: 3000, webSearches: 1, tier: "priority" }),
};

/** A Chat Completions stream with `stream_options.include_usage`: usage in the last chunk. */
const CHAT_STREAM = [
  { choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }], usage: null },
  { choices: [{ index: 0, delta: { content: "Hello!" }, logprobs: null, finish_reason: null }], usage: null },
  { choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }], usage: null },
  {
    choices: [],
    usage: chatUsage({ prompt: 50, completion: 5 }),
  },
].map((chunk) => ({
  id: "chatcmpl-CQ1stream",
  object: "chat.completion.chunk",
  created: CREATED,
  model: "gpt-4o-mini-2024-07-18",
  service_tier: "default",
  system_fingerprint: "fp_560af6e559",
  ...chunk,
}));

// OpenRouter's chat completion (its API reference: usage accounting is always on): `usage.cost`
// is what the call cost in credits (USD), a JSON number; `cost_details` and `is_byok` beside it.
const OPENROUTER_TEXT = `{"id": "gen-1763800000-abc", "object": "chat.completion", "created": 1763800000,
 "model": "openai/gpt-4o-mini", "provider": "OpenAI",
 "choices": [{"index": 0, "finish_reason": "stop", "native_finish_reason": "stop",
              "message": {"role": "assistant", "content": "Paris.", "refusal": null}}],
 "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240, "cost": COST, "is_byok": false,
           "prompt_tokens_details": {"cached_tokens": 1024}, "cost_details": {"upstream_inference_cost": null},
           "completion_tokens_details": {"reasoning_tokens": 0}}}`;

// -- the canned provider ------------------------------------------------------------------------

function answer(path, body) {
  const headers = { "content-type": "application/json" };
  if (path === "/openai/v1/chat/completions") {
    if (body.stream) return { headers: { "content-type": "text/event-stream" }, sse: CHAT_STREAM };
    return { headers, json: CHAT_FLEX_AUDIO };
  }
  if (path === "/openai/v1/responses") return { headers, json: RESPONSE_GPT5 };
  if (path === "/deepseek/chat/completions") return { headers, json: DEEPSEEK };
  // OpenRouter: usage.cost as the JSON number the request's `user` names (written as text).
  if (path === "/openrouter/api/v1/chat/completions") return { headers, raw: OPENROUTER_TEXT.replace("COST", body.user) };
  if (path === "/anthropic/v1/messages") {
    const sawToolResult = JSON.stringify(body.messages ?? []).includes('"tool_result"');
    const wantsTool = (body.tools ?? []).length > 0;
    return { headers, json: wantsTool ? (sawToolResult ? ANTHROPIC_AFTER_TOOL : ANTHROPIC_TOOL_CALL) : ANTHROPIC_MESSAGE };
  }
  if (/^\/gemini\/v1(beta)?\/models\/gemini-2\.5-flash:generateContent$/.test(path)) {
    return { headers: { ...headers, "x-gemini-service-tier": "flex" }, json: GEMINI_RESPONSE };
  }
  return { status: 404, headers, json: { error: { message: `no canned answer for ${path}` } } };
}

let provider;
let requests;

before(async () => {
  requests = [];
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      const path = req.url.split("?")[0];
      const body = text ? JSON.parse(text) : {};
      requests.push({ method: req.method, path, body, headers: req.headers });
      const reply = answer(path, body);
      res.writeHead(reply.status ?? 200, reply.headers);
      if (reply.raw !== undefined) {
        res.end(reply.raw);
      } else if (reply.sse) {
        for (const chunk of reply.sse) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        res.end("data: [DONE]\n\n");
      } else {
        res.end(JSON.stringify(reply.json));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  provider = {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
});

after(async () => {
  await provider.close();
  assert.deepEqual(escapes, [], "a client tried to reach a host other than 127.0.0.1");
});

/** Every event built here, tracked for real at the end. */
const built = [];

function expectEvent(event, expected) {
  assert.deepEqual(event, expected);
  const checked = checkEvent(event);
  assert.equal(checked.error, undefined, checked.error?.message);
  built.push(event);
}

const lastRequest = () => requests[requests.length - 1];

// -- the events those responses give (each checked once per client that gets them) --------------

/** CHAT_FLEX_AUDIO's event: the tier and the audio counts in metadata. */
const CHAT_FLEX_AUDIO_EVENT = {
  provider: "openai",
  model: "gpt-4o-audio-preview-2025-06-03",
  promptTokens: 1200,
  completionTokens: 300,
  totalTokens: 1500,
  cachedInputTokens: 200,
  metadata: { service_tier: "flex", input_audio_tokens: 700, output_audio_tokens: 250 },
};

/** RESPONSE_GPT5's event: the worked example's counts, the dated model, the priority tier. */
const RESPONSE_GPT5_EVENT = { ...GPT5_EVENT, model: "gpt-5-2025-08-07", metadata: { service_tier: "priority" } };

/** GEMINI_RESPONSE's event as the AI SDK gives it (no totalTokens), thoughts as reasoning, the tier header. */
const GEMINI_EVENT = {
  provider: "google",
  model: "gemini-2.5-flash",
  promptTokens: 1000,
  completionTokens: 300,
  reasoningTokens: 700,
  cachedInputTokens: 500,
  metadata: { input_audio_tokens: 600, cache_audio_read_tokens: 300, service_tier: "flex" },
};

/** The weather tool loop's event: the counts summed over both steps, the tier of the last one. */
const TOOL_LOOP_EVENT = {
  provider: "anthropic",
  model: "claude-sonnet-4-5-20250929",
  promptTokens: 490,
  completionTokens: 80,
  cachedInputTokens: 3000,
  cacheWriteTokens: 3000,
  metadata: { service_tier: "priority", cache_write_1h_tokens: 2000, cache_write_5m_tokens: 1000, web_searches: 1 },
};

// -- the AI SDK's providers, pointed at the canned provider (`create`: that SDK version's factory) --

const openAIAt = (create) => create({ apiKey: "sk-test", baseURL: `${provider.url}/openai/v1` });
const anthropicAt = (create) => create({ apiKey: "sk-ant-test", baseURL: `${provider.url}/anthropic/v1` });
const googleAt = (create) => create({ apiKey: "test-key", baseURL: `${provider.url}/gemini/v1beta` });

/** `generateText` of one AI SDK version (`sdk`), asked "Say hello" of `model`, without retries. */
const sayHello = (sdk, model, options = {}) => sdk.generateText({ model, prompt: "Say hello", maxRetries: 0, ...options });

/**
 * The two-step tool loop (ANTHROPIC_TOOL_CALL, then ANTHROPIC_AFTER_TOOL) run by one AI SDK
 * version (`sdk`, its Anthropic provider from `createAnthropic`).
 */
function weatherToolLoop(sdk, createAnthropic, options = {}) {
  const { generateText, jsonSchema, tool, stepCountIs } = sdk;
  const weather = tool({
    description: "The weather in a city",
    inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
    execute: async ({ city }) => `Sunny in ${city}`,
  });
  return generateText({
    model: anthropicAt(createAnthropic)("claude-sonnet-4-5"),
    prompt: "Weather in Paris?",
    tools: { weather },
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    ...options,
  });
}

// -- the official clients -----------------------------------------------------------------------

describe("official clients → helpers", () => {
  test("openai: Chat Completions with the flex tier and audio", async () => {
    const client = new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/openai/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "gpt-4o-audio-preview",
      service_tier: "flex",
      messages: [{ role: "user", content: "Say hello" }],
    });
    assert.equal(lastRequest().path, "/openai/v1/chat/completions");
    expectEvent(fromOpenAI(completion, { feature: "voice" }), { ...CHAT_FLEX_AUDIO_EVENT, feature: "voice" });
    // The same result from the Batch API.
    assert.deepEqual(fromOpenAI(completion, { processing: "batch" }).metadata, { ...CHAT_FLEX_AUDIO_EVENT.metadata, processing: "batch" });
  });

  test("openai: OpenRouter's usage.cost → metadata.reported_cost", async () => {
    const client = new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/openrouter/api/v1`, maxRetries: 0 });
    const cases = [["0.000123456", "0.000123456"], ["1.5e-7", "0.00000015"], ["0", "0"], ["12", "12"], ["-1", undefined]];
    for (const [cost, reported] of cases) {
      const completion = await client.chat.completions.create({
        model: "openai/gpt-4o-mini",
        user: cost,
        messages: [{ role: "user", content: "x" }],
      });
      const event = fromOpenAI(completion, { provider: "openrouter", metadata: { team: "search" } });
      assert.equal(event.cachedInputTokens, 1024);
      assert.deepEqual(event.metadata, reported === undefined ? { team: "search" } : { reported_cost: reported, team: "search" });
      assert.equal(checkEvent(event).error, undefined);
    }
    // The caller's own key wins, as for every figure a helper reads.
    const last = await client.chat.completions.create({ model: "x", user: "0.5", messages: [] });
    assert.deepEqual(fromOpenAI(last, { metadata: { reported_cost: "1" } }).metadata, { reported_cost: "1" });
  });

  test("openai: Responses API", async () => {
    const client = new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/openai/v1`, maxRetries: 0 });
    const response = await client.responses.create({ model: "gpt-5", input: "Say hello", service_tier: "priority" });
    assert.equal(lastRequest().path, "/openai/v1/responses");
    expectEvent(fromOpenAI(response), RESPONSE_GPT5_EVENT);
  });

  test("openai client against DeepSeek: cache hits become the cached input", async () => {
    const client = new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/deepseek`, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "deepseek-chat", messages: [{ role: "user", content: "Say hello" }] });
    expectEvent(fromOpenAI(completion, { provider: "deepseek" }), DEEPSEEK_EVENT);
  });

  test("@anthropic-ai/sdk: one-hour cache writes and web searches", async () => {
    const client = new Anthropic({ apiKey: "sk-ant-test", baseURL: `${provider.url}/anthropic`, maxRetries: 0 });
    const message = await client.messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      messages: [{ role: "user", content: "Say hello" }],
    });
    assert.equal(lastRequest().path, "/anthropic/v1/messages");
    expectEvent(fromAnthropic(message, { customerId: "cus_42" }), { ...ANTHROPIC_EVENT, customerId: "cus_42" });
  });

  test("@google/genai: audio prompt and cache details, thoughts, the tier header", async () => {
    const client = new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: `${provider.url}/gemini` } });
    const response = await client.models.generateContent({ model: "gemini-2.5-flash", contents: "Say hello" });
    assert.match(lastRequest().path, /:generateContent$/);
    expectEvent(fromGemini(response), { ...GEMINI_EVENT, totalTokens: 2000 });
  });
});

// -- the Vercel AI SDK --------------------------------------------------------------------------

describe("Vercel AI SDK (ai) → fromVercelAI", () => {

  test("@ai-sdk/openai Chat Completions: the same event as fromOpenAI on the raw response", async () => {
    const openai = openAIAt(createOpenAI);
    // AI SDK 7 keeps the provider's response body only when asked; its usage parser drops the
    // audio counts and its Chat Completions metadata has no tier, so without the body they are unknown.
    const bare = await sayHello(ai, openai.chat("gpt-4o-audio-preview"));
    assert.equal(lastRequest().path, "/openai/v1/chat/completions");
    const { metadata: _unknown, ...counts } = withoutTotal(CHAT_FLEX_AUDIO_EVENT);
    expectEvent(fromVercelAI(bare), counts);
    const result = await sayHello(ai, openai.chat("gpt-4o-audio-preview"), { include: { responseBody: true } });
    expectEvent(fromVercelAI(result), withoutTotal(CHAT_FLEX_AUDIO_EVENT));
    assert.deepEqual(fromVercelAI(result), withoutTotal(fromOpenAI(CHAT_FLEX_AUDIO)));
  });

  test("@ai-sdk/openai Responses API (the default model kind)", async () => {
    const result = await sayHello(ai, openAIAt(createOpenAI)("gpt-5"));
    assert.equal(lastRequest().path, "/openai/v1/responses");
    expectEvent(fromVercelAI(result, { feature: "chat" }), { ...withoutTotal(RESPONSE_GPT5_EVENT), feature: "chat" });
  });

  test("@ai-sdk/anthropic: inputTokens counts the cache reads and writes, which are taken out again", async () => {
    const result = await sayHello(ai, anthropicAt(createAnthropic)("claude-sonnet-4-5"));
    assert.equal(lastRequest().path, "/anthropic/v1/messages");
    // What this AI SDK reports: all input, the cache included.
    assert.equal(result.usage.inputTokens, 13000);
    assert.deepEqual(result.usage.inputTokenDetails, { noCacheTokens: 1000, cacheReadTokens: 10000, cacheWriteTokens: 2000 });
    expectEvent(fromVercelAI(result), ANTHROPIC_EVENT);
    assert.deepEqual(fromVercelAI(result), fromAnthropic(ANTHROPIC_MESSAGE));
  });

  test("@ai-sdk/google: outputTokens counts the thoughts, which go back to reasoningTokens", async () => {
    const result = await sayHello(ai, googleAt(createGoogleGenerativeAI)("gemini-2.5-flash"));
    assert.match(lastRequest().path, /^\/gemini\/v1beta\/models\/gemini-2\.5-flash:generateContent$/);
    assert.equal(result.usage.outputTokens, 1000); // 300 candidates + 700 thoughts
    expectEvent(fromVercelAI(result), GEMINI_EVENT);
    assert.deepEqual(
      fromVercelAI(result),
      withoutTotal(fromGemini({ ...GEMINI_RESPONSE, sdkHttpResponse: { headers: { "x-gemini-service-tier": "flex" } } })),
    );
  });

  test("a tool loop: each step counted once with its own cache use; onFinish gives the same", async () => {
    let finished;
    const result = await weatherToolLoop(ai, createAnthropic, { onFinish: (event) => (finished = event) });
    assert.equal(result.steps.length, 2);
    expectEvent(fromVercelAI(result), TOOL_LOOP_EVENT);
    assert.deepEqual(fromVercelAI(finished), TOOL_LOOP_EVENT);
    // One step at a time (onStepFinish) adds up to the same.
    const [first, second] = result.steps.map((step) => fromVercelAI(step));
    assert.deepEqual(first, withoutTotal(fromAnthropic(ANTHROPIC_TOOL_CALL)));
    assert.deepEqual(second, withoutTotal(fromAnthropic(ANTHROPIC_AFTER_TOOL)));
  });

  test("streamText: the onFinish event (a stream's tier is not in it: pass it in metadata when it matters)", async () => {
    let finished;
    const stream = ai.streamText({
      model: openAIAt(createOpenAI).chat("gpt-4o-mini"),
      prompt: "Say hello",
      maxRetries: 0,
      onFinish: (event) => (finished = event),
    });
    let text = "";
    for await (const delta of stream.textStream) text += delta;
    assert.equal(text, "Hello!");
    assert.equal(lastRequest().body.stream_options?.include_usage, true);
    assert.ok(finished, "onFinish ran");
    expectEvent(fromVercelAI(finished, { feature: "stream" }), {
      provider: "openai",
      model: "gpt-4o-mini-2024-07-18",
      promptTokens: 50,
      completionTokens: 5,
      feature: "stream",
    });
  });
});

describe("Vercel AI SDK 5 (ai@5, @ai-sdk/*@2) → fromVercelAI", () => {

  test("the usage shape of AI SDK 5", async () => {
    const result = await sayHello(ai5, anthropicAt(createAnthropic5)("claude-sonnet-4-5"));
    // Anthropic's own numbers: input without the cache; the cache write only in providerMetadata.
    assert.deepEqual(result.usage, { inputTokens: 1000, outputTokens: 500, totalTokens: 1500, cachedInputTokens: 10000 });
    assert.equal(result.providerMetadata.anthropic.cacheCreationInputTokens, 2000);
    assert.equal(result.model, undefined); // AI SDK 5 does not name the provider: providerMetadata's key does
  });

  test("@ai-sdk/anthropic@2: inputTokens already excludes the cache; the provider from providerMetadata", async () => {
    const result = await sayHello(ai5, anthropicAt(createAnthropic5)("claude-sonnet-4-5"));
    expectEvent(fromVercelAI(result), ANTHROPIC_EVENT);
    assert.deepEqual(fromVercelAI(result), fromAnthropic(ANTHROPIC_MESSAGE));
  });

  test("@ai-sdk/google@2: outputTokens already excludes the thoughts", async () => {
    const result = await sayHello(ai5, googleAt(createGoogle5)("gemini-2.5-flash"));
    assert.equal(result.usage.outputTokens, 300);
    assert.equal(result.usage.reasoningTokens, 700);
    expectEvent(fromVercelAI(result), GEMINI_EVENT);
  });

  test("@ai-sdk/openai@2 Chat Completions: the response body is kept, so the tier and audio are known", async () => {
    const result = await sayHello(ai5, openAIAt(createOpenAI5).chat("gpt-4o-audio-preview"));
    expectEvent(fromVercelAI(result), withoutTotal(fromOpenAI(CHAT_FLEX_AUDIO)));
  });

  test("a tool loop, step by step", async () => {
    const result = await weatherToolLoop(ai5, createAnthropic5);
    assert.equal(result.steps.length, 2);
    expectEvent(fromVercelAI(result), TOOL_LOOP_EVENT);
  });
});

test("every event built above is valid and goes out as built", async () => {
  assert.ok(built.length >= 15, `only ${built.length} events`);
  const sink = await startServer();
  try {
    const seen = collector();
    const tracker = new Tracker({ apiKey: "ct_test", baseUrl: sink.url, ...seen });
    for (const event of built) tracker.track(event);
    assert.equal(await tracker.shutdown(5000), true);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(seen.warnings, []);
    const sent = sentEvents(sink.requests).map((e) => e.event);
    assert.equal(sent.length, built.length);
    sent.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    const wire = built
      .map((event) => {
        const checked = checkEvent(event);
        return { ...checked.fields, environment: "production", ...(checked.metadata ? { metadata: checked.metadata } : {}) };
      })
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    assert.deepEqual(sent, wire);
  } finally {
    await sink.close();
  }
});
