// A canned model provider on 127.0.0.1 for the instrumentation tests: OpenAI (Chat Completions,
// Responses), Anthropic Messages, Gemini generateContent and Bedrock Runtime Converse, each in its
// documented wire format: JSON, server-sent events (AWS event stream for ConverseStream), error
// bodies. The model name picks the scenario: `…-fail` answers 429 with the provider's error body,
// `…-strict` answers 400 to a Chat Completions request with `stream_options` (and no usage chunk),
// `…-hang` never answers (for timeouts), `…-slow` streams two chunks and then waits (for
// cancelling midway); anything else answers at once.
import assert from "node:assert/strict";
import http from "node:http";

import { checkEvent } from "../dist/esm/validation.js";
import { chatUsage, anthropicUsage, modalities } from "./usage-fixtures.mjs";

const CREATED = 1763000000;

export const CHAT = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: CREATED,
  model: "gpt-4o-mini-2024-07-18",
  service_tier: "default",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello!", refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: chatUsage({ prompt: 1200, completion: 300, cached: 200 }),
};

/** A Chat Completions stream of `n` content chunks, then the usage-only chunk. */
export function chatChunks(n = 3) {
  const base = { id: "chatcmpl-2", object: "chat.completion.chunk", created: CREATED, model: "gpt-4o-mini-2024-07-18", service_tier: "default" };
  const chunks = [];
  for (let i = 0; i < n; i++) chunks.push({ ...base, choices: [{ index: 0, delta: i === 0 ? { role: "assistant", content: "w0 " } : { content: `w${i} ` }, finish_reason: null }], usage: null });
  chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: null });
  chunks.push({ ...base, choices: [], usage: chatUsage({ prompt: 50, completion: n }) });
  return chunks;
}

export const RESPONSE = {
  id: "resp_1",
  object: "response",
  created_at: CREATED,
  status: "completed",
  model: "gpt-5-2025-08-07",
  output: [{ id: "msg_1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hello!", annotations: [] }] }],
  service_tier: "priority",
  usage: {
    input_tokens: 10000,
    input_tokens_details: { cached_tokens: 8000 },
    output_tokens: 3000,
    output_tokens_details: { reasoning_tokens: 2000 },
    total_tokens: 13000,
  },
};

const responseEvents = () => [
  { type: "response.created", sequence_number: 0, response: { ...RESPONSE, status: "in_progress", usage: null, output: [] } },
  { type: "response.output_text.delta", sequence_number: 1, item_id: "msg_1", output_index: 0, content_index: 0, delta: "Hello!" },
  { type: "response.completed", sequence_number: 2, response: RESPONSE },
];

export const MESSAGE = {
  id: "msg_01",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [{ type: "text", text: "Hello!" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: anthropicUsage({ input: 1000, output: 500, cacheRead: 10000, write1h: 2000, tier: "standard" }),
};

const messageEvents = () => [
  ["message_start", { type: "message_start", message: { ...MESSAGE, content: [], stop_reason: null, usage: { ...MESSAGE.usage, output_tokens: 1 } } }],
  ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello!" } }],
  ["content_block_stop", { type: "content_block_stop", index: 0 }],
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 500 } }],
  ["message_stop", { type: "message_stop" }],
];

export const GEMINI = {
  candidates: [{ content: { parts: [{ text: "Hello!" }], role: "model" }, finishReason: "STOP", index: 0 }],
  usageMetadata: {
    promptTokenCount: 1000,
    candidatesTokenCount: 300,
    totalTokenCount: 2000,
    thoughtsTokenCount: 700,
    promptTokensDetails: modalities({ TEXT: 400, AUDIO: 600 }),
  },
  modelVersion: "gemini-2.5-flash",
  responseId: "r1",
};

/** Gemini's answer that calls a function (automatic function calling runs it and asks again). */
export const geminiToolTurn = () => ({
  candidates: [{ content: { parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } } }], role: "model" }, finishReason: "STOP", index: 0 }],
  usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 15, totalTokenCount: 135 },
  modelVersion: "gemini-2.5-flash",
  responseId: "r0",
});

const geminiChunks = () => [
  { candidates: [{ content: { parts: [{ text: "Hel" }], role: "model" }, index: 0 }], modelVersion: "gemini-2.5-flash" },
  { candidates: [{ content: { parts: [{ text: "lo!" }], role: "model" }, index: 0 }], modelVersion: "gemini-2.5-flash" },
  GEMINI,
];

export const CONVERSE = {
  output: { message: { role: "assistant", content: [{ text: "Hello!" }] } },
  stopReason: "end_turn",
  usage: { inputTokens: 1000, outputTokens: 200, totalTokens: 1200, cacheReadInputTokens: 300 },
  metrics: { latencyMs: 321 },
};

const ERRORS = {
  openai: { error: { message: "Rate limit reached", type: "requests", param: null, code: "rate_limit_exceeded" } },
  anthropic: { type: "error", error: { type: "rate_limit_error", message: "Rate limited" } },
  gemini: { error: { code: 429, message: "Resource exhausted", status: "RESOURCE_EXHAUSTED" } },
  bedrock: { message: "Too many requests" },
};

function which(path) {
  if (path.includes("/chat/completions")) return "chat";
  if (path.endsWith("/responses")) return "responses";
  if (path.endsWith("/messages") || path.includes(":rawPredict") || path.includes(":streamRawPredict")) return "anthropic"; // also Anthropic on Vertex AI
  if (path.includes(":generateContent") || path.includes(":streamGenerateContent")) return "gemini";
  if (path.startsWith("/model/")) return "bedrock";
  return undefined;
}

let codecPromise;
async function eventStreamFrame(type, body) {
  codecPromise ??= import("@smithy/core/event-streams").then(({ EventStreamCodec }) => {
    const toUtf8 = (bytes) => Buffer.from(bytes).toString("utf8");
    const fromUtf8 = (text) => new Uint8Array(Buffer.from(text, "utf8"));
    return new EventStreamCodec(toUtf8, fromUtf8);
  });
  const codec = await codecPromise;
  return Buffer.from(
    codec.encode({
      headers: {
        ":event-type": { type: "string", value: type },
        ":message-type": { type: "string", value: "event" },
        ":content-type": { type: "string", value: "application/json" },
      },
      body: new Uint8Array(Buffer.from(JSON.stringify(body))),
    }),
  );
}

const converseEvents = () => [
  ["messageStart", { role: "assistant" }],
  ["contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hello!" } }],
  ["contentBlockStop", { contentBlockIndex: 0 }],
  ["messageStop", { stopReason: "end_turn" }],
  ["metadata", { usage: CONVERSE.usage, metrics: CONVERSE.metrics }],
];

/** Whether the request's input has an item of `type` (a tool's result, in an agent's later turn). */
function asked(body, type) {
  return Array.isArray(body.input) && body.input.some((item) => item?.type === type);
}

/** A Responses API turn that calls the request's first tool (usage of its own). */
export function toolTurn(body) {
  const name = body.tools?.[0]?.name ?? "tool";
  return {
    ...RESPONSE,
    id: "resp_tools",
    output: [{ type: "function_call", id: "fc_1", call_id: "call_1", name, arguments: JSON.stringify({ city: "Paris" }), status: "completed" }],
    usage: { input_tokens: 1500, input_tokens_details: { cached_tokens: 1024 }, output_tokens: 120, output_tokens_details: { reasoning_tokens: 64 }, total_tokens: 1620 },
  };
}

export const EMBEDDING = {
  object: "list",
  data: [{ object: "embedding", index: 0, embedding: [0.25, -0.5] }],
  model: "text-embedding-3-small",
  usage: { prompt_tokens: 8, total_tokens: 8 },
};

/** Background responses by id: how many times each was retrieved (the second sees it completed). */
const background = new Map();

/** Responses API in the background: queued at create, in progress, then completed (or cancelled). */
function backgroundReply(req, res, body, path, requests) {
  const json = (status, value) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(value));
  };
  const cancel = path.match(/\/responses\/([^/]+)\/cancel$/);
  const retrieve = path.match(/\/responses\/([^/]+)$/);
  if (req.method === "POST" && path.endsWith("/responses") && body.background === true) {
    const id = `resp_bg_${background.size + 1}`;
    background.set(id, 0);
    requests.push({ path, body, model: body.model });
    json(200, { ...RESPONSE, id, background: true, status: "queued", output: [], usage: null });
    return true;
  }
  if (req.method === "POST" && cancel) {
    requests.push({ path, body, model: "" });
    json(200, { ...RESPONSE, id: cancel[1], background: true, status: "cancelled", output: [], usage: { ...RESPONSE.usage, output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 10010 } });
    return true;
  }
  if (req.method === "GET" && retrieve) {
    const id = retrieve[1];
    const seen = (background.get(id) ?? 1) + 1;
    background.set(id, seen);
    requests.push({ path, body, model: "" });
    if (seen < 2) json(200, { ...RESPONSE, id, background: true, status: "in_progress", output: [], usage: null });
    else json(200, { ...RESPONSE, id, background: true });
    return true;
  }
  return false;
}

/** Bedrock InvokeModel's counts, as its response headers and its stream's last chunk carry them. */
export const INVOKE_COUNTS = { input: 1000, output: 500, cacheRead: 10000, cacheWrite: 2000 };

/** Bedrock InvokeModel (an Anthropic model: the Messages body) and its response stream. */
async function invokeReply(res, body, path, requests) {
  const invoke = path.match(/^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/);
  if (!invoke) return false;
  const model = decodeURIComponent(invoke[1]);
  requests.push({ path, body, model });
  const counts = INVOKE_COUNTS;
  if (invoke[2] === "invoke") {
    res.writeHead(200, {
      "content-type": "application/json",
      "x-amzn-bedrock-input-token-count": String(counts.input),
      "x-amzn-bedrock-output-token-count": String(counts.output),
      "x-amzn-bedrock-cache-read-input-token-count": String(counts.cacheRead),
      "x-amzn-bedrock-cache-write-input-token-count": String(counts.cacheWrite),
      "x-amzn-bedrock-invocation-latency": "321",
    });
    res.end(JSON.stringify({ ...MESSAGE, usage: { input_tokens: counts.input, output_tokens: counts.output } }));
    return true;
  }
  res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" });
  const events = messageEvents().map(([, event]) => event);
  events[events.length - 1] = {
    ...events.at(-1),
    "amazon-bedrock-invocationMetrics": {
      inputTokenCount: counts.input,
      outputTokenCount: counts.output,
      cacheReadInputTokenCount: counts.cacheRead,
      cacheWriteInputTokenCount: counts.cacheWrite,
      invocationLatency: 321,
      firstByteLatency: 100,
    },
  };
  for (const [i, event] of events.entries()) {
    if (model.endsWith("-slow") && i === 2) return true;
    res.write(await eventStreamFrame("chunk", { bytes: Buffer.from(JSON.stringify(event)).toString("base64") }));
  }
  res.end();
  return true;
}

async function reply(req, res, body, path, requests) {
  if (await invokeReply(res, body, path, requests)) return;
  if (path.endsWith("/embeddings")) {
    requests.push({ path, body, model: body.model });
    const base64 = Buffer.from(new Float32Array(EMBEDDING.data[0].embedding).buffer).toString("base64");
    const data = body.encoding_format === "base64" ? [{ ...EMBEDDING.data[0], embedding: base64 }] : EMBEDDING.data;
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ ...EMBEDDING, data }));
  }
  if (backgroundReply(req, res, body, path, requests)) return;
  if (path.endsWith(":batchEmbedContents") || path.endsWith(":predict")) {
    // Gemini embeddings: the Gemini API counts no tokens, Vertex AI counts each input's.
    requests.push({ path, body, model: path.match(/models\/([^:]+)/)?.[1] ?? "" });
    const vertex = path.endsWith(":predict");
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(
      JSON.stringify(
        vertex
          ? { predictions: [{ embeddings: { values: [0.25, -0.5], statistics: { token_count: 7, truncated: false } } }] }
          : { embeddings: [{ values: [0.25, -0.5] }] },
      ),
    );
  }
  const kind = which(path);
  const model = body.model ?? decodeURIComponent(path.match(/models\/([^:]+)/)?.[1] ?? path.match(/^\/model\/([^/]+)/)?.[1] ?? "");
  requests.push({ path, body, model });
  const streaming = body.stream === true || path.includes(":streamGenerateContent") || path.endsWith("/converse-stream");
  if (model.endsWith("-hang")) return; // never answers
  if (model.endsWith("-fail")) {
    const errorBody = ERRORS[kind === "chat" || kind === "responses" ? "openai" : kind];
    const headers = { "content-type": "application/json" };
    if (kind === "bedrock") headers["x-amzn-errortype"] = "ThrottlingException";
    res.writeHead(429, headers);
    return res.end(JSON.stringify(errorBody));
  }
  if (model.endsWith("-strict") && body.stream_options !== undefined) {
    // An OpenAI-compatible server that refuses parameters it does not know (older Azure api-versions).
    res.writeHead(400, { "content-type": "application/json" });
    return res.end(JSON.stringify({ error: { code: null, message: "Unrecognized request argument supplied: stream_options", param: null, type: "invalid_request_error" } }));
  }
  const slow = model.endsWith("-slow");
  if (kind === "gemini" && model.endsWith("-tools") && !body.contents?.some((c) => c.parts?.some((p) => p.functionResponse))) {
    // Gemini's first turn with tools: a function call, with usage of its own.
    const turn = geminiToolTurn();
    if (!streaming) {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify(turn));
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    return res.end(`data: ${JSON.stringify(turn)}\r\n\r\n`);
  }
  if (!streaming && kind === "responses" && model.endsWith("-tools") && !asked(body, "function_call_output")) {
    // An agent's first turn: the model calls the request's first tool.
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(toolTurn(body)));
  }
  if (!streaming) {
    const json = { chat: CHAT, responses: RESPONSE, anthropic: MESSAGE, gemini: GEMINI, bedrock: CONVERSE }[kind];
    res.writeHead(json ? 200 : 404, { "content-type": "application/json" });
    return res.end(JSON.stringify(json ?? { error: { message: `nothing canned for ${path}` } }));
  }
  if (kind === "bedrock") {
    res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" });
    const events = converseEvents();
    for (const [i, [type, event]] of events.entries()) {
      if (slow && i === 2) return;
      res.write(await eventStreamFrame(type, event));
    }
    return res.end();
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  const lines =
    kind === "chat"
      ? chatChunks(body.n ?? 3)
          .slice(0, body.stream_options?.include_usage === true ? undefined : -1) // usage only when asked, as OpenAI does
          .map((c) => `data: ${JSON.stringify(c)}\n\n`)
      : kind === "responses"
        ? responseEvents().map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
        : kind === "anthropic"
          ? messageEvents().map(([type, e]) => `event: ${type}\ndata: ${JSON.stringify(e)}\n\n`)
          : geminiChunks().map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`);
  for (const [i, line] of lines.entries()) {
    if (slow && i === 2) return; // two chunks, then silence
    res.write(line);
  }
  if (kind === "chat") res.write("data: [DONE]\n\n");
  res.end();
}

/** Starts the canned provider; `requests` records what each call asked for. */
export async function startProvider() {
  const requests = [];
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      let body = {};
      try {
        body = text ? JSON.parse(text) : {};
      } catch {
        body = {};
      }
      reply(req, res, body, req.url.split("?")[0], requests).catch((error) => {
        res.writeHead(500);
        res.end(String(error));
      });
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A Bedrock Runtime client's settings for the canned provider at `url` (fake credentials, one attempt). */
export function bedrockSettings(url) {
  return { region: "us-east-1", endpoint: url, credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" }, maxAttempts: 1 };
}

/** A tracker that keeps what it is given (the event as instrument() builds it). */
export function recorder() {
  const events = [];
  return { events, track: (event) => events.push(event) };
}

/** A recorder's one event, valid, with a latency and `status`; returned without its latency. */
export function onlyEvent(tracker, status = "success") {
  assert.equal(tracker.events.length, 1, JSON.stringify(tracker.events));
  const [{ latencyMs, ...event }] = tracker.events;
  assert.equal(event.status, status);
  assert.ok(Number.isSafeInteger(latencyMs) && latencyMs >= 0);
  assert.equal(checkEvent(tracker.events[0]).error, undefined);
  return event;
}
