// The Node half of bench/sdk_reserve.py: `await tracker.reserve(...)` against the local stack,
// alternating call by call with a bare `fetch` POST of the same body to /v1/reservations.
//
//   node bench/node_reserve.mjs <attribution-json> <api-url> <api-key> <warmup> <calls> <prompt> <max-output>
//
// Prints one JSON object on the last line: {"sdk": [ms...], "bare": [ms...]} (timed calls only).
// Every call must be allowed; anything else exits non-zero. Which call goes first is drawn per pair.

import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";

const [attributionJson, apiUrl, apiKey, warmupArg, callsArg, promptArg, maxOutputArg] = process.argv.slice(2);
const attribution = JSON.parse(attributionJson);
const warmup = Number(warmupArg);
const calls = Number(callsArg);
const promptTokens = Number(promptArg);
const maxOutputTokens = Number(maxOutputArg);

const { Tracker } = await import(new URL("../sdk/node/dist/esm/index.js", import.meta.url).href);
const problems = [];
const tracker = new Tracker({
  apiKey,
  baseUrl: apiUrl,
  onError: (error) => problems.push(String(error)),
  onWarning: (warning) => problems.push(JSON.stringify(warning)),
});
const bareBody = JSON.stringify({
  provider: attribution.provider,
  model: attribution.model,
  feature: attribution.feature,
  customer_id: attribution.customer_id,
  environment: "production",
  estimate: { prompt_tokens: promptTokens, max_output_tokens: maxOutputTokens },
});

const pauseMs = 20;
const pause = () => new Promise((resolve) => setTimeout(resolve, pauseMs));

async function sdkCall() {
  const started = performance.now();
  const reservation = await tracker.reserve({
    provider: attribution.provider,
    model: attribution.model,
    feature: attribution.feature,
    customerId: attribution.customer_id,
    estimate: { promptTokens, maxOutputTokens },
    timeoutMs: 30_000,
  });
  const took = performance.now() - started;
  if (!reservation.allowed || reservation.reservationId === null || problems.length > 0) {
    console.error("node reserve not allowed", reservation, problems);
    process.exit(1);
  }
  return took;
}

async function bareCall() {
  const started = performance.now();
  const answer = await fetch(`${apiUrl}/v1/reservations`, {
    method: "POST",
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", "Idempotency-Key": randomUUID() },
    body: bareBody,
  });
  const parsed = await answer.json();
  const took = performance.now() - started;
  if (answer.status !== 200 || parsed.allowed !== true) {
    console.error("bare reserve", answer.status, parsed);
    process.exit(1);
  }
  return took;
}

// Which goes first is drawn per pair (a fixed-seed generator), with a pause between calls, as
// in sdk_reserve.py.
let seed = 29;
const draw = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const sdk = [];
const bare = [];
for (let index = 0; index < warmup + calls; index++) {
  const sdkFirst = draw() < 0.5;
  const first = sdkFirst ? await sdkCall() : await bareCall();
  await pause();
  const second = sdkFirst ? await bareCall() : await sdkCall();
  await pause();
  if (index >= warmup) {
    sdk.push(sdkFirst ? first : second);
    bare.push(sdkFirst ? second : first);
  }
}
await tracker.shutdown();
console.log(JSON.stringify({ sdk, bare }));
