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
//   are only as full as the backlog makes them.
//
// The sink runs in a child process (this script with --sink), so its work is not counted as
// the SDK's: the figures are what one application process achieves.
//
// Usage: node bench/node_sdk.mjs [--calls N]   (needs the SDK built: cd sdk/node && npm run build)
// Prints one JSON object: node_track_us_*, node_delivery_*_events_per_s, and context.

import { fork } from "node:child_process";
import { existsSync } from "node:fs";
import http from "node:http";

if (process.argv.includes("--sink")) {
  runSink();
} else {
  await main();
}

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
  server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }));
  process.on("message", (message) => {
    if (message === "count") process.send({ received });
  });
  process.on("disconnect", () => process.exit(0));
}

// --- the measurements (this process) --------------------------------------------------------

async function main() {
  const entry = new URL("../sdk/node/dist/esm/index.js", import.meta.url);
  if (!existsSync(entry)) {
    console.error("costtrack Node SDK is not built: run `cd sdk/node && npm ci && npm run build` first");
    process.exit(2);
  }
  const { Tracker, VERSION } = await import(entry.href);

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
  const { port } = await ask();
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
    clock_overhead_us_median: round(percentile(overhead, 50)),
    sdk_version: VERSION,
    node_version: process.version,
  };
  console.log(JSON.stringify(result));
  const expected = WARMUP + CALLS + 2 * (DELIVERY_EVENTS + 1_000);
  if (trackStats.sent !== WARMUP + CALLS || received !== expected || problems !== 0) {
    console.error(`expected ${expected} events delivered without callbacks, got ${received} at the sink, ${JSON.stringify(trackStats)}, ${problems} callbacks`);
    process.exit(1);
  }
}
