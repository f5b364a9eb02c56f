// Batches (docs/api-rules.md#batches): how queued events are cut into requests, and how a batch answer
// reaches the callbacks, against a real local HTTP server.
import assert from "node:assert/strict";
import http from "node:http";
import { describe, test } from "node:test";

import { Tracker } from "costtrack";

import { accepted, errorBody, keysOf, nextTurn, perEvent, sentEvents, trackerFixtures, waitFor } from "./helpers.mjs";

const EVENT = { provider: "openai", model: "gpt-5", promptTokens: 10, completionTokens: 5 };
const MiB = 1_048_576;
const ok = perEvent(() => ({ status: 200, body: accepted() }));
// Concurrent requests may reach the server in any order: batch sizes largest first, and each
// batch's prompt_tokens (the order the events were tracked in), batches sorted by their first.
const batchSizes = (requests) => requests.map((r) => r.json.batch.length).sort((a, b) => b - a);
const tokensByBatch = (requests) =>
  requests.map((r) => r.json.batch.map((item) => item.event.prompt_tokens)).sort((a, b) => a[0] - b[0]);
const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

const { setup } = trackerFixtures();

describe("batches", () => {
  test("a burst of 250 events goes as batches of at most 100, each event once", async () => {
    const { server, tracker, warnings } = await setup();
    for (let i = 0; i < 250; i++) tracker.track({ ...EVENT, promptTokens: i });
    assert.equal(await tracker.flush(5000), true);
    // The oldest events first, in the order tracked.
    assert.deepEqual(tokensByBatch(server.requests), [range(0, 100), range(100, 200), range(200, 250)]);
    for (const r of server.requests) {
      assert.equal(r.headers["idempotency-key"], undefined);
      assert.ok(Buffer.byteLength(r.text) <= MiB);
    }
    const sent = sentEvents(server.requests);
    assert.equal(new Set(sent.map((e) => e.key)).size, 250);
    assert.deepEqual(warnings, []);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 250, retried: 0, dropped: 0, failed: 0 });
  });

  test("a batch never goes over 1 MiB, counted in UTF-8 bytes", async () => {
    const { server, tracker, errors } = await setup();
    // About 11.5 KB of UTF-8 in under 4,000 characters per event: 100 of them are over 1 MiB in
    // bytes but far under it in characters.
    const wide = (n) => "€".repeat(n);
    const big = {
      provider: wide(64),
      model: wide(200),
      feature: wide(200),
      customerId: wide(256),
      customerName: wide(256),
      environment: wide(64),
      metadata: { note: wide(2700) },
    };
    for (let i = 0; i < 250; i++) tracker.track({ ...big, promptTokens: i });
    assert.equal(await tracker.flush(10_000), true);
    assert.deepEqual(errors, []);
    const sizes = batchSizes(server.requests);
    for (const r of server.requests) {
      const bytes = Buffer.byteLength(r.text);
      assert.ok(bytes <= MiB, `a batch of ${r.json.batch.length} events is ${bytes} bytes`);
      assert.ok(r.json.batch.length <= 100);
    }
    // Cut by size, not by count: the largest batches are full up to the byte cap (one more
    // event, about 11.5 KB, would not fit).
    assert.ok(sizes[0] > 1 && sizes[0] < 100, JSON.stringify(sizes));
    assert.ok(Math.max(...server.requests.map((r) => Buffer.byteLength(r.text))) > MiB - 12_000);
    assert.deepEqual(tokensByBatch(server.requests).flat(), range(0, 250));
    assert.equal(tracker.stats().sent, 250);
  });

  test("a lone event goes at once; what queues while requests are in flight goes in the next batch", async () => {
    const { server, tracker } = await setup((req, i) => ({ ...ok(req), delayMs: i < 4 ? 300 : 0 }));
    const started = Date.now();
    tracker.track(EVENT);
    await waitFor(() => server.requests.length === 1);
    // Sent on the next turn of the event loop, not after waiting for more events.
    assert.ok(server.requests[0].at - started < 200, `sent after ${server.requests[0].at - started} ms`);
    assert.equal(server.requests[0].json.batch.length, 1);
    for (let i = 0; i < 3; i++) {
      await nextTurn();
      tracker.track(EVENT);
    }
    await waitFor(() => server.requests.length === 4);
    // Four requests in flight: these ten wait, then go together as soon as one answers.
    for (let i = 0; i < 10; i++) {
      tracker.track(EVENT);
      await nextTurn();
    }
    assert.equal(await tracker.flush(5000), true);
    assert.deepEqual(server.requests.map((r) => r.json.batch.length), [1, 1, 1, 1, 10]);
    assert.equal(tracker.stats().sent, 14);
  });

  test("each event's result in a 200 answer reaches the callbacks as a single-event answer would", async () => {
    const list = [{ code: "unknown_model", message: "no active pricing entry: cost is 0" }];
    const answers = [
      { status: 200, body: accepted(list) },
      { status: 400, body: errorBody("INVALID_PAYLOAD", "prompt_tokens: must be an integer") },
      { status: 422, body: errorBody("IDEMPOTENCY_KEY_REUSED", "key reused with a different event") },
      { status: 429, body: errorBody("QUOTA_EXCEEDED", "monthly allowance used up") },
      { status: 200, body: { ...accepted(), replayed: true } },
    ];
    const { server, tracker, warnings } = await setup(perEvent((_item, i) => answers[i]));
    for (let i = 0; i < answers.length; i++) tracker.track({ ...EVENT, promptTokens: i });
    assert.equal(await tracker.flush(), true);
    await new Promise((r) => setTimeout(r, 300)); // nothing is retried
    assert.equal(server.requests.length, 1);
    const keys = keysOf(server.requests[0]);
    assert.deepEqual(warnings, [
      { code: "unknown_model", message: list[0].message, idempotencyKey: keys[0], status: 200, response: accepted(list) },
      { code: "INVALID_PAYLOAD", message: "prompt_tokens: must be an integer", idempotencyKey: keys[1], status: 400, response: answers[1].body },
      { code: "IDEMPOTENCY_KEY_REUSED", message: "key reused with a different event", idempotencyKey: keys[2], status: 422, response: answers[2].body },
      { code: "QUOTA_EXCEEDED", message: "monthly allowance used up", idempotencyKey: keys[3], status: 429, response: answers[3].body },
    ]);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 2, retried: 0, dropped: 0, failed: 3 });
  });

  test("a 5xx on a batch retries the whole batch with the same keys; committed events come back as replays", async () => {
    const { server, tracker, warnings } = await setup((req, i) =>
      i === 0
        ? { status: 503, body: errorBody("UNAVAILABLE") }
        : perEvent((_item, j) => ({ status: 200, body: { ...accepted(), replayed: j < 2 } }))(req),
    );
    for (let i = 0; i < 5; i++) tracker.track({ ...EVENT, promptTokens: i });
    assert.equal(await tracker.flush(10_000), true);
    assert.equal(server.requests.length, 2);
    assert.equal(keysOf(server.requests[0]).length, 5);
    assert.deepEqual(keysOf(server.requests[1]), keysOf(server.requests[0]));
    assert.equal(server.requests[1].text, server.requests[0].text); // same events, same order
    assert.deepEqual(warnings, []);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 5, retried: 5, dropped: 0, failed: 0 });
  });

  test("when every attempt of a batch fails, each event gets its own NETWORK_ERROR", async () => {
    const { server, tracker, warnings } = await setup(() => ({ status: 500, body: errorBody("INTERNAL_ERROR") }), { maxRetries: 1 });
    for (let i = 0; i < 3; i++) tracker.track(EVENT);
    assert.equal(await tracker.flush(10_000), true);
    assert.equal(server.requests.length, 2);
    assert.deepEqual(keysOf(server.requests[1]), keysOf(server.requests[0]));
    assert.deepEqual(
      warnings.map((w) => [w.code, w.idempotencyKey, w.status]),
      keysOf(server.requests[0]).map((key) => ["NETWORK_ERROR", key, 500]),
    );
    for (const w of warnings) assert.match(w.message, /2 attempts: HTTP 500/);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 0, retried: 3, dropped: 0, failed: 3 });
  });

  test("a request-level 401 is reported for every event of the batch", async () => {
    const body = errorBody("REVOKED_API_KEY", "this key was revoked");
    const { server, tracker, warnings } = await setup(() => ({ status: 401, body }));
    for (let i = 0; i < 3; i++) tracker.track(EVENT);
    assert.equal(await tracker.flush(), true);
    await new Promise((r) => setTimeout(r, 300)); // nothing is retried
    assert.equal(server.requests.length, 1);
    assert.deepEqual(
      warnings,
      keysOf(server.requests[0]).map((key) => ({
        code: "REVOKED_API_KEY",
        message: "this key was revoked",
        idempotencyKey: key,
        status: 401,
        response: body,
      })),
    );
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 0, retried: 0, dropped: 0, failed: 3 });
  });

  test("a 200 without one result per event is retried with the same keys, then a NETWORK_ERROR", async () => {
    const { server, tracker, warnings } = await setup(
      (req, i) => (i === 0 ? { status: 200, body: accepted() } : i === 1 ? { status: 200, body: { results: [] } } : ok(req)),
      { maxRetries: 1 },
    );
    tracker.track(EVENT);
    assert.equal(await tracker.flush(10_000), true);
    assert.equal(server.requests.length, 2);
    assert.deepEqual(keysOf(server.requests[1]), keysOf(server.requests[0]));
    assert.deepEqual(warnings.map((w) => [w.code, w.status]), [["NETWORK_ERROR", 200]]);
    assert.match(warnings[0].message, /2 attempts: HTTP 200 without one result per event/);
    assert.deepEqual(warnings[0].response, { results: [] });

    tracker.track(EVENT);
    assert.equal(await tracker.flush(10_000), true);
    assert.equal(tracker.stats().sent, 1);
  });

  test("flush is bounded while the server hangs; the batches go again later with the same keys", async () => {
    let hang = true;
    const { server, tracker, warnings } = await setup((req) => (hang ? "hang" : ok(req)), { timeoutMs: 60_000 });
    for (let i = 0; i < 250; i++) tracker.track(EVENT);
    await waitFor(() => server.requests.length === 3);
    const started = Date.now();
    assert.equal(await tracker.flush(300), false);
    const took = Date.now() - started;
    assert.ok(took >= 250 && took < 3000, `flush took ${took} ms`); // not the requests' 60 s
    assert.equal(tracker.stats().queued, 250);
    hang = false;
    await waitFor(() => server.requests.length >= 6); // the aborted batches were sent again
    assert.equal(await tracker.flush(5000), true);
    const first = sentEvents(server.requests.slice(0, 3)).map((e) => e.key);
    const again = sentEvents(server.requests.slice(3)).map((e) => e.key);
    assert.equal(new Set(first).size, 250);
    assert.deepEqual(new Set(again), new Set(first));
    assert.deepEqual(warnings, []);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 250, retried: 0, dropped: 0, failed: 0 });
  });
});

test("a kept-alive connection the service closed while idle: the batch goes again at once on a new one, no retry", async () => {
  // The second request on a connection finds it closed (as when a service drops an idle
  // connection just as the request is sent): the socket is destroyed without an answer.
  const served = new WeakMap();
  let connections = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      if (served.get(req.socket)) {
        req.socket.destroy();
        return;
      }
      served.set(req.socket, true);
      const items = JSON.parse(Buffer.concat(chunks).toString("utf8")).batch;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ results: items.map(() => ({ status: 200, ...accepted() })) }));
    });
  });
  server.on("connection", () => connections++);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const warnings = [];
  const tracker = new Tracker({ apiKey: "k", baseUrl: `http://127.0.0.1:${server.address().port}`, onWarning: (w) => warnings.push(w) });
  try {
    tracker.track(EVENT);
    assert.equal(await tracker.flush(5000), true);
    tracker.track(EVENT);
    assert.equal(await tracker.flush(5000), true);
    assert.deepEqual(warnings, []);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 2, retried: 0, dropped: 0, failed: 0 });
    assert.equal(connections, 2);
  } finally {
    await tracker.shutdown(1000);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
