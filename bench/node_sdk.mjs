#!/usr/bin/env node
// The Node SDK's costs, against a local sink that speaks the batch wire format (docs/api-rules.md#batches)
// and answers 200 with one accepted result per event:
//
// - what one track() call costs its caller, in microseconds (median and p99). track() is
//   synchronous (validate, idempotency key, serialize, enqueue); delivery happens later on the
//   event loop. Each call is timed alone with process.hrtime; between rounds the script awaits
//   flush(), so the queue stays realistic and every event is actually sent;
// - delivery throughput, in events per second from the first track() to the end of flush():
//   "burst" tracks every event in one go (as bench/python_sdk.py does); "stream" tracks 10
//   events per turn of the event loop, so delivery runs while events keep coming and batches
//   are only as full as the backlog makes them;
// - what instrument() adds to a model call: the openai client, bare and instrumented (its events
//   going to the same sink), alternating call by call against a canned Chat Completions server
//   (also in the child process): a JSON reply, and a stream of 100 content chunks read to its
//   end (plus the usage-only chunk when include_usage asks for it, as OpenAI does). The figure
//   is the median of (instrumented call − bare call) over the pairs, in microseconds, beside
//   each one's median time.
//
// The sink runs in a child process (this script with --sink), so its work is not counted as
// the SDK's: the figures are what one application process achieves.
//
// Usage: node bench/node_sdk.mjs [--calls N]   (needs the SDK built: cd sdk/node && npm run build)
// Prints one JSON object: node_track_us_*, node_delivery_*_events_per_s, node_instrument_*, and context.

import { fork } from "node:child_process";
import { existsSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";


// --- the sink (child process) ---------------------------------------------------------------

function runSink() {
  let received = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const items = JSON.parse(Buffer.concat(chunks).toString("utf8")).batch;
      received += items.length;
      const results = items.map((item) => ({
        status: 200,
        event_id: "evt_bench",
        idempotency_key: item.idempotency_key,
        replayed: false,
        cost: "0.0042",
        currency: "USD",
        pricing_status: "priced",
        warnings: [],
      }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ results }));
    });
  });
  const provider = http.createServer(cannedChat);
  server.listen(0, "127.0.0.1", () =>
    provider.listen(0, "127.0.0.1", () => process.send({ port: server.address().port, providerPort: provider.address().port })),
  );
  process.on("message", (message) => {
    if (message === "count") process.send({ received });
  });
  process.on("disconnect", () => process.exit(0));
}

// A canned Chat Completions endpoint: the JSON reply, or (`stream: true`) 100 content chunks,
// the finish chunk, the usage-only chunk when `stream_options.include_usage` asks for it, [DONE].
const STREAM_CHUNKS = 100;
const USAGE = { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 200 } };
const BASE = { id: "chatcmpl-bench", created: 1763000000, model: "gpt-4o-mini-2024-07-18", service_tier: "default" };
const COMPLETION = JSON.stringify({
  ...BASE,
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello!", refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: USAGE,
});
const chunk = (choices, usage = null) => `data: ${JSON.stringify({ ...BASE, object: "chat.completion.chunk", choices, usage })}\n\n`;
const CHUNKS = Array.from({ length: STREAM_CHUNKS }, (_, i) => chunk([{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }])).join("");
const STREAM_END = chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
const STREAM_USAGE = chunk([], USAGE);

function cannedChat(req, res) {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(COMPLETION);
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(CHUNKS + STREAM_END + (body.stream_options?.include_usage ? STREAM_USAGE : "") + "data: [DONE]\n\n");
  });
}

// --- the measurements (this process) --------------------------------------------------------

async function main() {
  const entry = new URL("../sdk/node/dist/esm/index.js", import.meta.url);
  if (!existsSync(entry)) {
    console.error("costtrack Node SDK is not built: run `cd sdk/node && npm ci && npm run build` first");
    process.exit(2);
  }
  const { Tracker, VERSION, instrument } = await import(entry.href);

  const argIndex = process.argv.indexOf("--calls");
  const CALLS = argIndex > 0 ? Number(process.argv[argIndex + 1]) : 10_000;
  const ROUND = 500;
  const WARMUP = 1_000;
  const DELIVERY_EVENTS = 20_000;
  const STREAM_CHUNK = 10;

  const sink = fork(new URL(import.meta.url).pathname, ["--sink"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const ask = (message) =>
    new Promise((resolve) => {
      sink.once("message", resolve);
      if (message !== undefined) sink.send(message);
    });
  const { port, providerPort } = await ask();
  const baseUrl = `http://127.0.0.1:${port}`;

  let problems = 0;
  const options = { apiKey: "ct_bench", baseUrl, onError: () => problems++, onWarning: () => problems++ };

  // A typical event: attribution, token counts and a little metadata.
  const event = {
    provider: "openai",
    model: "gpt-5",
    feature: "chat",
    customerId: "cus_42",
    promptTokens: 1200,
    completionTokens: 300,
    cachedInputTokens: 1024,
    latencyMs: 840,
    metadata: { route: "/v1/chat", requestId: "req_7f3a9c", tags: ["beta", "eu"] },
  };

  const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const round = (x) => Math.round(x * 1000) / 1000;
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  // track() cost.
  const tracker = new Tracker({ ...options, maxQueueSize: ROUND * 4 });
  async function timeTrack(count, samples) {
    for (let done = 0; done < count; ) {
      const n = Math.min(ROUND, count - done);
      for (let i = 0; i < n; i++) {
        const start = process.hrtime.bigint();
        tracker.track(event);
        const end = process.hrtime.bigint();
        if (samples) samples.push(Number(end - start) / 1000);
      }
      done += n;
      if (!(await tracker.flush(30_000))) throw new Error("flush timed out");
    }
  }
  await timeTrack(WARMUP, null);
  const samples = [];
  await timeTrack(CALLS, samples);
  await tracker.shutdown(10_000);
  const trackStats = tracker.stats();

  // Delivery throughput, on a warmed-up tracker (connections open, code optimized).
  async function delivery(streamed) {
    const t = new Tracker({ ...options, maxQueueSize: DELIVERY_EVENTS });
    for (let i = 0; i < 1_000; i++) t.track(event);
    if (!(await t.flush(30_000))) throw new Error("flush timed out");
    const started = process.hrtime.bigint();
    for (let i = 0; i < DELIVERY_EVENTS; i++) {
      t.track(event);
      if (streamed && i % STREAM_CHUNK === STREAM_CHUNK - 1) await nextTurn();
    }
    const done = await t.flush(120_000);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const { sent } = t.stats();
    await t.shutdown(10_000);
    if (!done || sent !== DELIVERY_EVENTS + 1_000) throw new Error(`delivery incomplete: ${JSON.stringify(t.stats())}`);
    return DELIVERY_EVENTS / seconds;
  }
  const burst = await delivery(false);
  const stream = await delivery(true);

  // What instrument() adds to a call of the openai client (the SDK's dev dependency).
  const sdkRequire = createRequire(new URL("../sdk/node/package.json", import.meta.url));
  const { default: OpenAI } = await import(pathToFileURL(sdkRequire.resolve("openai")).href);
  const clientOptions = { apiKey: "sk-bench", baseURL: `http://127.0.0.1:${providerPort}/v1`, maxRetries: 0 };
  const bare = new OpenAI(clientOptions);
  const callTracker = new Tracker({ ...options, maxQueueSize: 10_000 });
  const instrumented = instrument(new OpenAI(clientOptions), { tracker: callTracker, feature: "bench" });
  const messages = [{ role: "user", content: "Say hello" }];
  const once = async (client, streamed) => {
    const start = process.hrtime.bigint();
    if (streamed) {
      const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages, stream: true });
      let n = 0;
      for await (const _ of stream) n++;
      if (n < STREAM_CHUNKS) throw new Error(`stream of ${n} chunks`);
    } else {
      await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    }
    return Number(process.hrtime.bigint() - start) / 1000;
  };
  async function added(streamed, calls) {
    const times = { bare: [], instrumented: [] };
    const differences = []; // instrumented minus bare, pair by pair: the load of the moment cancels out
    for (let i = 0; i < calls + 50; i++) {
      // Alternate which goes first, so neither always gets the warmer connection.
      const pair = i % 2 === 0 ? ["bare", "instrumented"] : ["instrumented", "bare"];
      if (i % 100 === 99 && !(await callTracker.flush(30_000))) throw new Error("flush timed out");
      const us = {};
      for (const name of pair) us[name] = await once(name === "bare" ? bare : instrumented, streamed);
      if (i < 50) continue; // the first 50 pairs warm up
      for (const name of pair) times[name].push(us[name]);
      differences.push(us.instrumented - us.bare);
    }
    for (const list of [...Object.values(times), differences]) list.sort((a, b) => a - b);
    return { bare: percentile(times.bare, 50), instrumented: percentile(times.instrumented, 50), added: percentile(differences, 50) };
  }
  const plain = await added(false, 1_000);
  const streamed = await added(true, 300);
  await callTracker.shutdown(10_000);
  const callStats = callTracker.stats();
  const instrumentedCalls = 2 * 50 + 1_000 + 300;

  const { received } = await ask("count");
  sink.disconnect();

  // The cost of the clock itself, for reading the figures.
  const overhead = [];
  for (let i = 0; i < 10_000; i++) {
    const start = process.hrtime.bigint();
    const end = process.hrtime.bigint();
    overhead.push(Number(end - start) / 1000);
  }

  samples.sort((a, b) => a - b);
  overhead.sort((a, b) => a - b);
  const result = {
    node_track_us_median: round(percentile(samples, 50)),
    node_track_us_p99: round(percentile(samples, 99)),
    node_track_us_mean: round(samples.reduce((a, b) => a + b, 0) / samples.length),
    calls: samples.length,
    delivered: trackStats.sent,
    node_delivery_events_per_s: Math.round(burst),
    node_delivery_stream_events_per_s: Math.round(stream),
    received_by_sink: received,
    callbacks: problems,
    node_instrument_added_us_median: round(plain.added),
    node_instrument_call_us_median: round(plain.instrumented),
    node_bare_call_us_median: round(plain.bare),
    node_instrument_stream100_added_us_median: round(streamed.added),
    node_instrument_stream100_call_us_median: round(streamed.instrumented),
    node_bare_stream100_call_us_median: round(streamed.bare),
    instrumented_calls_tracked: callStats.sent,
    clock_overhead_us_median: round(percentile(overhead, 50)),
    sdk_version: VERSION,
    node_version: process.version,
  };
  console.log(JSON.stringify(result));
  const expected = WARMUP + CALLS + 2 * (DELIVERY_EVENTS + 1_000) + instrumentedCalls;
  if (trackStats.sent !== WARMUP + CALLS || callStats.sent !== instrumentedCalls || received !== expected || problems !== 0) {
    console.error(`expected ${expected} events delivered without callbacks, got ${received} at the sink, ${JSON.stringify(trackStats)}, ${problems} callbacks`);
    process.exit(1);
  }
}

if (process.argv.includes("--sink")) {
  runSink();
} else {
  await main();
}
