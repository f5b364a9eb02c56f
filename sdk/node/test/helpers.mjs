// Test support: a real local HTTP server on a free port that records every request.
import http from "node:http";
import { afterEach } from "node:test";

import { Tracker } from "costtrack";

/**
 * Starts a sink on 127.0.0.1:<free port>. `respond(request, index)` returns
 * `{ status, body, headers, delayMs }` or the string "hang" (never answer). Default: 200 with one
 * accepted result (no warnings) per event of the batch.
 */
export async function startServer(respond = perEvent(() => ({ status: 200, body: accepted() }))) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let json;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const record = { method: req.method, url: req.url, headers: req.headers, text, json, at: Date.now() };
      requests.push(record);
      const answer = state.respond(record, requests.length - 1);
      if (answer === "hang") return;
      const body = answer.body === undefined ? "" : typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body);
      const send = () => {
        res.writeHead(answer.status, { "content-type": "application/json", ...(answer.headers ?? {}) });
        res.end(body);
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  const state = { respond };
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    setRespond(fn) {
      state.respond = fn;
    },
    async close() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export function accepted(warnings = []) {
  return {
    event_id: "evt_1",
    replayed: false,
    cost: "0.0335",
    currency: "USD",
    pricing_status: "priced",
    dashboard_visible: true,
    visibility_reason: null,
    warnings,
  };
}

export function errorBody(code, message = code) {
  return { error: { code, message, details: [] }, request_id: "req_1" };
}

/** A port nothing listens on (bound then released). */
export async function closedPort() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function waitFor(predicate, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Collects what a tracker reports. */
export function collector() {
  const errors = [];
  const warnings = [];
  return { errors, warnings, onError: (e) => errors.push(e), onWarning: (w) => warnings.push(w) };
}

/**
 * A `respond` for batch requests (docs/api-rules.md#batches): 200 with one result per item, in order.
 * `answer(item, index, request)` returns the item's `{ status, body }` as a single-event request
 * would get it; the result is that body plus `status`.
 */
export function perEvent(answer) {
  return (request) => {
    // As the service would: a body that is not a batch is not answered per event.
    if (!Array.isArray(request.json?.batch)) return { status: 400, body: errorBody("INVALID_PAYLOAD", "not a batch") };
    return {
      status: 200,
      body: {
        results: request.json.batch.map((item, i) => {
          const { status, body } = answer(item, i, request);
          return { ...body, status };
        }),
      },
    };
  };
}

/** Every event the requests carried, in order: `{ key, event, request }` per batch item. */
export function sentEvents(requests) {
  return requests.flatMap((request) => request.json.batch.map((item) => ({ key: item.idempotency_key, event: item.event, request })));
}

/** The idempotency keys of one batch request, in order. */
export function keysOf(request) {
  return request.json.batch.map((item) => item.idempotency_key);
}

/**
 * The next turn of the event loop: events tracked in different turns go in different requests
 * while fewer than 4 are in flight (the tracker sends what was queued on the turn after track()).
 */
export function nextTurn() {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * For a test file: `cleanup` (functions run after each test, last first) and `setup(respond,
 * options)`, which starts a sink (or what `start(respond)` starts) and a tracker sending to it,
 * both closed after the test.
 */
export function trackerFixtures(start = startServer) {
  const cleanup = [];
  afterEach(async () => {
    while (cleanup.length) await cleanup.pop()();
  });
  async function setup(respond, options = {}) {
    const server = await start(respond);
    const seen = collector();
    const tracker = new Tracker({ apiKey: "ct_test", baseUrl: server.url, ...seen, ...options });
    cleanup.push(() => server.close(), () => tracker.shutdown(100));
    return { server, tracker, ...seen };
  }
  return { cleanup, setup };
}
