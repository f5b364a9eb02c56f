#!/usr/bin/env node
// What one track() call costs its caller, in microseconds (median and p99), with delivery running
// for real against a local sink server started here on a free port.
//
// track() is synchronous (validate, idempotency key, serialize, enqueue); delivery happens
// later on the event loop. Each call is timed alone with process.hrtime; between rounds the
// script awaits flush(), so the queue stays realistic and every event is actually sent.
//
// Usage: node bench/node_sdk.mjs [--calls N]   (needs the SDK built: cd sdk/node && npm run build)
// Prints one JSON object: node_track_us_median, node_track_us_p99, and context.

import { existsSync } from "node:fs";
import http from "node:http";

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

const RESPONSE = JSON.stringify({ event_id: "evt_bench", replayed: false, cost: "0.0042", currency: "USD", warnings: [] });
let received = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    received++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(RESPONSE);
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));

let problems = 0;
const tracker = new Tracker({
  apiKey: "ct_bench",
  baseUrl: `http://127.0.0.1:${server.address().port}`,
  maxQueueSize: ROUND * 4,
  onError: () => problems++,
  onWarning: () => problems++,
});

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

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function run(count, samples) {
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

await run(WARMUP, null);
const samples = [];
await run(CALLS, samples);
await tracker.shutdown(10_000);

// The cost of the clock itself, for reading the figures.
const overhead = [];
for (let i = 0; i < 10_000; i++) {
  const start = process.hrtime.bigint();
  const end = process.hrtime.bigint();
  overhead.push(Number(end - start) / 1000);
}
server.close();

samples.sort((a, b) => a - b);
overhead.sort((a, b) => a - b);
const round = (x) => Math.round(x * 1000) / 1000;
const stats = tracker.stats();
const result = {
  node_track_us_median: round(percentile(samples, 50)),
  node_track_us_p99: round(percentile(samples, 99)),
  node_track_us_mean: round(samples.reduce((a, b) => a + b, 0) / samples.length),
  calls: samples.length,
  delivered: stats.sent,
  received_by_sink: received,
  callbacks: problems,
  clock_overhead_us_median: round(percentile(overhead, 50)),
  sdk_version: VERSION,
  node_version: process.version,
};
console.log(JSON.stringify(result));
if (stats.sent !== WARMUP + CALLS || problems !== 0) {
  console.error(`expected ${WARMUP + CALLS} events delivered without callbacks, got ${JSON.stringify(stats)}, ${problems} callbacks`);
  process.exit(1);
}
