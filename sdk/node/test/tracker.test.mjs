// Tracker and delivery against a real local HTTP server.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { ConfigurationError, EventValidationError, Tracker } from "costtrack";
import { accepted, closedPort, collector, errorBody, keysOf, nextTurn, perEvent, sentEvents, startServer, trackerFixtures, waitFor } from "./helpers.mjs";

const VERSION = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
const EVENT = { provider: "openai", model: "gpt-5", promptTokens: 10, completionTokens: 5 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ok = perEvent(() => ({ status: 200, body: accepted() }));

const { cleanup, setup } = trackerFixtures();

describe("wire format", () => {
  test("POST /v1/events with the contract's headers and a batch of snake_case events", async () => {
    const { server, tracker, warnings, errors } = await setup();
    tracker.track({ ...EVENT, customerId: "c_1", latencyMs: 12, metadata: { route: "/chat" } });
    assert.equal(await tracker.flush(), true);
    assert.equal(server.requests.length, 1);
    const [req] = server.requests;
    assert.equal(req.method, "POST");
    assert.equal(req.url, "/v1/events");
    assert.equal(req.headers.authorization, "Bearer ct_test");
    assert.equal(req.headers["content-type"], "application/json");
    assert.equal(req.headers["user-agent"], `costtrack-node/${VERSION}`);
    // The key travels in the item; the header on a batch is a 400 (docs/api-rules.md#batches).
    assert.equal(req.headers["idempotency-key"], undefined);
    assert.equal(req.json.batch.length, 1);
    assert.match(req.json.batch[0].idempotency_key, UUID);
    assert.deepEqual(req.json, {
      batch: [
        {
          idempotency_key: req.json.batch[0].idempotency_key,
          event: {
            provider: "openai",
            model: "gpt-5",
            prompt_tokens: 10,
            completion_tokens: 5,
            customer_id: "c_1",
            latency_ms: 12,
            environment: "production",
            metadata: { route: "/chat" },
          },
        },
      ],
    });
    assert.deepEqual(warnings, []);
    assert.deepEqual(errors, []);
  });

  test("each event gets its own idempotency key", async () => {
    const { server, tracker } = await setup();
    for (let i = 0; i < 5; i++) tracker.track(EVENT);
    await tracker.flush();
    const sent = sentEvents(server.requests);
    assert.equal(sent.length, 5);
    const keys = new Set(sent.map((e) => e.key));
    assert.equal(keys.size, 5);
    for (const key of keys) assert.match(key, UUID);
  });

  test("environment: the event's, else the tracker's option, else production", async () => {
    const { server, tracker } = await setup(undefined, { environment: " staging " });
    tracker.track(EVENT);
    tracker.track({ ...EVENT, environment: "dev" });
    tracker.track({ ...EVENT, environment: "  " });
    await tracker.flush();
    assert.deepEqual(sentEvents(server.requests).map((e) => e.event.environment).sort(), ["dev", "staging", "staging"]);
  });

  test("baseUrl trailing slashes are tolerated; COSTTRACK_BASE_URL is the default", async () => {
    const server = await startServer();
    cleanup.push(() => server.close());
    const a = new Tracker({ apiKey: "k", baseUrl: server.url + "//", onWarning() {} });
    a.track(EVENT);
    await a.shutdown();
    const saved = process.env.COSTTRACK_BASE_URL;
    process.env.COSTTRACK_BASE_URL = server.url + "/";
    try {
      const b = new Tracker({ apiKey: "k", onWarning() {} });
      b.track(EVENT);
      await b.shutdown();
    } finally {
      if (saved === undefined) delete process.env.COSTTRACK_BASE_URL;
      else process.env.COSTTRACK_BASE_URL = saved;
    }
    assert.deepEqual(server.requests.map((r) => r.url), ["/v1/events", "/v1/events"]);
  });

  test("the body is a snapshot taken by track()", async () => {
    const { server, tracker } = await setup();
    const metadata = { step: 1 };
    const event = { ...EVENT, metadata };
    tracker.track(event);
    metadata.step = 2;
    event.model = "changed";
    await tracker.flush();
    assert.deepEqual(sentEvents(server.requests)[0].event.metadata, { step: 1 });
    assert.equal(sentEvents(server.requests)[0].event.model, "gpt-5");
  });
});

describe("retries", () => {
  test("5xx then success: same idempotency key and body on every attempt", async () => {
    const { server, tracker, warnings } = await setup((req, i) =>
      i < 2 ? { status: 503, body: errorBody("UNAVAILABLE") } : ok(req),
    );
    tracker.track(EVENT);
    assert.equal(await tracker.flush(10_000), true);
    assert.equal(server.requests.length, 3);
    const keys = new Set(sentEvents(server.requests).map((e) => e.key));
    assert.equal(keys.size, 1);
    assert.equal(new Set(server.requests.map((r) => r.text)).size, 1);
    assert.deepEqual(warnings, []);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 1, retried: 2, dropped: 0, failed: 0 });
  });

  test("Retry-After is a floor on the delay", async () => {
    const { server, tracker } = await setup((req, i) =>
      i === 0 ? { status: 503, body: errorBody("UNAVAILABLE"), headers: { "retry-after": "1" } } : ok(req),
    );
    tracker.track(EVENT);
    assert.equal(await tracker.flush(10_000), true);
    assert.equal(server.requests.length, 2);
    const gap = server.requests[1].at - server.requests[0].at;
    assert.ok(gap >= 950, `retried after ${gap} ms`);
    assert.ok(gap < 10_000, `retried after ${gap} ms`);
  });

  test("5xx on every attempt: 1 + maxRetries requests, then one NETWORK_ERROR with status and body", async () => {
    const { server, tracker, warnings } = await setup(() => ({ status: 500, body: errorBody("INTERNAL_ERROR") }), { maxRetries: 2 });
    tracker.track(EVENT);
    assert.equal(await tracker.flush(10_000), true);
    assert.equal(server.requests.length, 3);
    assert.equal(warnings.length, 1);
    const [w] = warnings;
    assert.equal(w.code, "NETWORK_ERROR");
    assert.equal(w.status, 500);
    assert.deepEqual(w.response, errorBody("INTERNAL_ERROR"));
    assert.equal(w.idempotencyKey, keysOf(server.requests[0])[0]);
    assert.match(w.message, /3 attempts/);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 0, retried: 2, dropped: 0, failed: 1 });
  });

  test("connection refused: retried, then NETWORK_ERROR without a status", async () => {
    const port = await closedPort();
    const seen = collector();
    const tracker = new Tracker({ apiKey: "k", baseUrl: `http://127.0.0.1:${port}`, maxRetries: 1, ...seen });
    tracker.track(EVENT);
    assert.equal(await tracker.flush(5000), true);
    assert.equal(seen.warnings.length, 1);
    assert.equal(seen.warnings[0].code, "NETWORK_ERROR");
    assert.equal(seen.warnings[0].status, undefined);
    assert.match(seen.warnings[0].message, /2 attempts.*ECONNREFUSED/);
    assert.match(seen.warnings[0].idempotencyKey, UUID);
    assert.equal(tracker.stats().retried, 1);
  });

  test("a timeout is retried with the same key", async () => {
    const { server, tracker, warnings } = await setup((req, i) => (i === 0 ? "hang" : ok(req)), {
      timeoutMs: 200,
    });
    tracker.track(EVENT);
    assert.equal(await tracker.flush(5000), true);
    assert.equal(server.requests.length, 2);
    assert.deepEqual(keysOf(server.requests[0]), keysOf(server.requests[1]));
    assert.equal(server.requests[0].text, server.requests[1].text);
    assert.deepEqual(warnings, []);
  });

  test("a timeout on the last attempt is a NETWORK_ERROR naming the timeout", async () => {
    const { tracker, warnings } = await setup(() => "hang", { timeoutMs: 100, maxRetries: 0 });
    tracker.track(EVENT);
    assert.equal(await tracker.flush(5000), true);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].code, "NETWORK_ERROR");
    assert.match(warnings[0].message, /1 attempt: no response within 100 ms/);
  });

  // Request-level answers (key, body shape or size, plan) are the whole batch's; per-event ones
  // come inside a 200 batch answer (docs/api-rules.md#batches). Either way the event gets the same report.
  for (const [scope, status, code] of [
    ["request", 400, "INVALID_PAYLOAD"],
    ["request", 401, "REVOKED_API_KEY"],
    ["request", 403, "PLAN_INACTIVE"],
    ["request", 413, "INVALID_PAYLOAD"],
    ["event", 400, "INVALID_PAYLOAD"],
    ["event", 422, "IDEMPOTENCY_KEY_REUSED"],
    ["event", 429, "QUOTA_EXCEEDED"],
  ]) {
    test(`${status} ${code} (${scope}) is never retried and is reported with the service's code`, async () => {
      const body = errorBody(code, `because ${code}`);
      const headers = { "retry-after": "1" };
      const { server, tracker, warnings } = await setup(
        scope === "request" ? () => ({ status, body, headers }) : (req) => ({ ...perEvent(() => ({ status, body }))(req), headers }),
      );
      tracker.track(EVENT);
      assert.equal(await tracker.flush(), true);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(server.requests.length, 1);
      assert.equal(warnings.length, 1);
      const [w] = warnings;
      assert.equal(w.code, code);
      assert.equal(w.status, status);
      assert.deepEqual(w.response, body); // the single-event body: a per-event result without its "status"
      assert.equal(w.idempotencyKey, keysOf(server.requests[0])[0]);
      assert.match(w.message, new RegExp(`because ${code}`));
      assert.deepEqual(tracker.stats(), { queued: 0, sent: 0, retried: 0, dropped: 0, failed: 1 });
    });
  }

  test("a 4xx without the error shape is HTTP_<status>; redirects are not followed", async () => {
    const { server, tracker, warnings } = await setup((_req, i) =>
      i === 0 ? { status: 404, body: "not here" } : { status: 307, headers: { location: "/elsewhere" } },
    );
    tracker.track(EVENT);
    await tracker.flush();
    tracker.track(EVENT);
    await tracker.flush();
    assert.equal(server.requests.length, 2);
    assert.deepEqual(
      warnings.map((w) => [w.code, w.status]),
      [
        ["HTTP_404", 404],
        ["HTTP_307", 307],
      ],
    );
    assert.equal(warnings[0].response, "not here");
  });

  test("while the service fails, queued events wait; a good answer resumes sending; nothing is lost", async () => {
    const { server, tracker, warnings } = await setup(
      (req, i) => (i < 6 ? { status: 503, body: errorBody("UNAVAILABLE"), delayMs: 50 } : ok(req)),
      { maxRetries: 1 },
    );
    // Four requests of one event each in flight when the failures begin, six events queued.
    for (let i = 0; i < 4; i++) {
      tracker.track({ ...EVENT, promptTokens: i });
      await nextTurn();
    }
    for (let i = 4; i < 10; i++) tracker.track({ ...EVENT, promptTokens: i });
    assert.equal(await tracker.flush(15_000), true);
    const stats = tracker.stats();
    const failed = warnings.filter((w) => w.code === "NETWORK_ERROR");
    assert.equal(stats.sent + stats.failed, 10);
    assert.equal(failed.length, stats.failed);
    // Only the first 4 (in flight when the failures began) can have started before recovery.
    assert.ok(stats.failed <= 4, JSON.stringify(stats));
    assert.deepEqual(server.requests.slice(0, 4).map((r) => r.json.batch.length), [1, 1, 1, 1]);
    const delivered = new Set(sentEvents(server.requests.slice(6)).map((e) => e.event.prompt_tokens));
    assert.equal(delivered.size, stats.sent);
  });

  test("at most 4 requests are in flight", async () => {
    let inFlight = 0;
    let peak = 0;
    const server = await startServer();
    const seen = collector();
    server.setRespond(() => "hang");
    const tracker = new Tracker({ apiKey: "k", baseUrl: server.url, timeoutMs: 300, maxRetries: 0, ...seen });
    cleanup.push(() => server.close());
    for (let i = 0; i < 10; i++) {
      tracker.track(EVENT);
      await nextTurn();
    }
    await waitFor(() => server.requests.length >= 4);
    await new Promise((r) => setTimeout(r, 100));
    peak = server.requests.length;
    inFlight = tracker.stats().queued;
    assert.equal(peak, 4);
    assert.equal(inFlight, 10);
    await tracker.shutdown(100);
  });
});

describe("warnings routing", () => {
  test("each service warning on an accepted event is one onWarning call", async () => {
    const list = [
      { code: "unknown_model", message: "no active pricing entry: cost is 0" },
      { code: "free_source_mismatch", message: "hidden from the dashboard" },
    ];
    const { server, tracker, warnings } = await setup(perEvent(() => ({ status: 200, body: accepted(list) })));
    tracker.track(EVENT);
    await tracker.flush();
    const key = keysOf(server.requests[0])[0];
    assert.deepEqual(
      warnings.map((w) => ({ ...w, response: undefined })),
      list.map((w) => ({ ...w, idempotencyKey: key, status: 200, response: undefined })),
    );
    assert.deepEqual(warnings[0].response, accepted(list));
    assert.equal(tracker.stats().sent, 1);
  });

  test("ignored fields: never sent, reported once per name per tracker, with the camelCase suggestion", async () => {
    const { server, tracker, warnings, errors } = await setup();
    tracker.track({ ...EVENT, prompt_tokens: 99, fooBar: 1 });
    tracker.track({ ...EVENT, prompt_tokens: 99 });
    await tracker.flush();
    assert.deepEqual(errors, []);
    const sent = sentEvents(server.requests);
    assert.equal(sent.length, 2);
    for (const e of sent) assert.equal(e.event.prompt_tokens, 10);
    assert.deepEqual(
      warnings.map((w) => w.code),
      ["ignored_field", "ignored_field"],
    );
    assert.match(warnings[0].message, /"prompt_tokens".*ignored.*"promptTokens"/);
    assert.equal(warnings[0].idempotencyKey, sent[0].key);
    assert.doesNotMatch(warnings[1].message, /did you mean/);

    const other = new Tracker({ apiKey: "k", baseUrl: server.url, onWarning: (w) => warnings.push(w) });
    other.track({ ...EVENT, prompt_tokens: 1 });
    await other.shutdown();
    assert.equal(warnings.length, 3);
  });

  test("default onWarning writes console.warn", async (t) => {
    const server = await startServer(perEvent(() => ({ status: 200, body: accepted([{ code: "unknown_model", message: "cost is 0" }]) })));
    cleanup.push(() => server.close());
    const warn = t.mock.method(console, "warn", () => {});
    const tracker = new Tracker({ apiKey: "k", baseUrl: server.url });
    tracker.track(EVENT);
    await tracker.shutdown();
    assert.equal(warn.mock.callCount(), 1);
    assert.match(warn.mock.calls[0].arguments[0], /unknown_model: cost is 0/);
  });
});

describe("validation routing", () => {
  test("an invalid event goes to onError, names every field, and sends nothing", async () => {
    const { server, tracker, warnings, errors } = await setup();
    tracker.track({ provider: "openai", promptTokens: -1, metadata: [] });
    tracker.track(EVENT);
    await tracker.flush();
    assert.equal(errors.length, 1);
    assert.ok(errors[0] instanceof EventValidationError);
    assert.equal(errors[0].code, "INVALID_PAYLOAD");
    assert.deepEqual(errors[0].fields, ["promptTokens", "metadata", "model"]);
    for (const f of ["promptTokens", "metadata", "model"]) assert.match(errors[0].message, new RegExp(f));
    assert.equal(server.requests.length, 1);
    assert.equal(sentEvents(server.requests).length, 1);
    assert.deepEqual(warnings, []);
  });

  test("track() never throws, whatever it is given, and can be detached", async () => {
    const { server, tracker, errors } = await setup();
    const { track } = tracker;
    const weird = [undefined, null, 0, "x", [], Symbol("s"), () => 1, new Proxy({}, { ownKeys: () => { throw new Error("x"); } })];
    for (const value of weird) assert.doesNotThrow(() => track(value));
    assert.doesNotThrow(() => track());
    track(EVENT);
    await tracker.flush();
    assert.equal(errors.length, weird.length + 1);
    assert.ok(errors.every((e) => e instanceof EventValidationError && e.fields[0] === "body"));
    assert.equal(server.requests.length, 1);
    assert.equal(sentEvents(server.requests).length, 1);
  });

  test("without onError, validation errors are written to console.error", async (t) => {
    const error = t.mock.method(console, "error", () => {});
    const tracker = new Tracker({ apiKey: "k", baseUrl: "http://127.0.0.1:9" });
    tracker.track({ provider: "openai" });
    assert.equal(error.mock.callCount(), 1);
    assert.match(error.mock.calls[0].arguments[0], /model is required/);
    await tracker.shutdown(10);
  });
});

describe("configuration", () => {
  test("enabled: false does nothing at all", async () => {
    const server = await startServer();
    cleanup.push(() => server.close());
    const seen = collector();
    const resources = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout" || r === "Immediate").length;
    const before = resources();
    const tracker = new Tracker({ enabled: false, baseUrl: server.url, ...seen });
    for (let i = 0; i < 20; i++) tracker.track(EVENT);
    tracker.track({ nonsense: true });
    assert.equal(resources(), before);
    assert.equal(await tracker.flush(), true);
    assert.equal(await tracker.shutdown(), true);
    tracker.track(EVENT);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(server.requests.length, 0);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(seen.warnings, []);
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 0, retried: 0, dropped: 0, failed: 0 });
  });

  test("a missing apiKey is one ConfigurationError and a no-op tracker; nothing throws", async (t) => {
    const server = await startServer();
    cleanup.push(() => server.close());
    for (const apiKey of [undefined, null, "", "  \n", 42]) {
      const seen = collector();
      const tracker = new Tracker({ apiKey, baseUrl: server.url, ...seen });
      tracker.track(EVENT);
      tracker.track({});
      assert.equal(await tracker.shutdown(), true);
      assert.equal(seen.errors.length, 1, String(apiKey));
      assert.ok(seen.errors[0] instanceof ConfigurationError);
      assert.match(seen.errors[0].message, /apiKey is required/);
    }
    const error = t.mock.method(console, "error", () => {});
    assert.doesNotThrow(() => new Tracker());
    assert.doesNotThrow(() => new Tracker(null));
    assert.equal(error.mock.callCount(), 2);
    assert.doesNotThrow(() => new Tracker({ onError() { throw new Error("x"); } }));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(server.requests.length, 0);
  });

  test("an unusable baseUrl turns tracking off with a ConfigurationError", async () => {
    for (const baseUrl of ["not a url", "ftp://x", 5]) {
      const seen = collector();
      const tracker = new Tracker({ apiKey: "k", baseUrl, ...seen });
      tracker.track(EVENT);
      assert.equal(seen.errors.length, 1, String(baseUrl));
      assert.ok(seen.errors[0] instanceof ConfigurationError);
      assert.equal(tracker.stats().queued, 0);
    }
  });

  test("an unusable environment option is reported and production used", async () => {
    const server = await startServer();
    cleanup.push(() => server.close());
    for (const environment of ["e".repeat(65), 5]) {
      const seen = collector();
      const tracker = new Tracker({ apiKey: "k", baseUrl: server.url, environment, ...seen });
      tracker.track(EVENT);
      await tracker.shutdown();
      assert.equal(seen.errors.length, 1);
      assert.ok(seen.errors[0] instanceof ConfigurationError);
    }
    assert.deepEqual(sentEvents(server.requests).map((e) => e.event.environment), ["production", "production"]);
  });

  test("a bad numeric option is reported and its default used", async () => {
    const { server, tracker, errors } = await setup(undefined, { timeoutMs: -5, maxRetries: 1.5, maxQueueSize: "big" });
    assert.deepEqual(
      errors.map((e) => e.message.split(" ")[0]),
      ["timeoutMs", "maxRetries", "maxQueueSize"],
    );
    tracker.track(EVENT);
    await tracker.flush();
    assert.equal(server.requests.length, 1);
    assert.equal(tracker.stats().sent, 1);
  });
});

describe("flush and shutdown", () => {
  test("a hung server does not hang shutdown(1000); in-flight requests are aborted", async () => {
    const { server, tracker, warnings } = await setup(() => "hang", { timeoutMs: 60_000 });
    // Four requests in flight, two events queued behind them.
    for (let i = 0; i < 6; i++) {
      tracker.track(EVENT);
      await nextTurn();
    }
    await waitFor(() => server.requests.length === 4);
    const started = Date.now();
    const result = await tracker.shutdown(1000);
    const took = Date.now() - started;
    assert.equal(result, false);
    assert.ok(took >= 950 && took < 5000, `shutdown took ${took} ms`); // not the requests' 60 s
    assert.deepEqual(
      warnings.map((w) => [w.code, w.count]),
      [["after_shutdown", 6]],
    );
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 0, retried: 0, dropped: 6, failed: 0 });
    assert.equal(server.requests.length, 4);
    assert.equal(sentEvents(server.requests).length, 4);
  });

  test("track() after shutdown is dropped and reported, rate-limited, with counts", async () => {
    const { server, tracker, warnings } = await setup();
    assert.equal(await tracker.shutdown(), true);
    assert.equal(await tracker.shutdown(), true); // the same promise again
    for (let i = 0; i < 5; i++) tracker.track(EVENT);
    await waitFor(() => warnings.reduce((n, w) => n + w.count, 0) === 5, 3000);
    assert.deepEqual(
      warnings.map((w) => [w.code, w.count]),
      [
        ["after_shutdown", 1],
        ["after_shutdown", 4],
      ],
    );
    assert.equal(server.requests.length, 0);
    assert.equal(tracker.stats().dropped, 5);
  });

  test("at flush's deadline, requests in flight are aborted and sent again with the same key", async () => {
    const { server, tracker, warnings } = await setup((req, i) => (i === 0 ? "hang" : ok(req)), {
      timeoutMs: 60_000,
    });
    tracker.track(EVENT);
    const started = Date.now();
    assert.equal(await tracker.flush(100), false);
    assert.ok(Date.now() - started < 5000); // not the hung request's 60 s
    assert.equal(await tracker.flush(2000), true);
    assert.equal(server.requests.length, 2);
    assert.deepEqual(keysOf(server.requests[0]), keysOf(server.requests[1]));
    assert.equal(server.requests[0].text, server.requests[1].text);
    // The aborted attempt was ours, not a failure: no retry counted, no warning.
    assert.deepEqual(tracker.stats(), { queued: 0, sent: 1, retried: 0, dropped: 0, failed: 0 });
    assert.deepEqual(warnings, []);
  });

  test("flush waits only for events queued before it; odd timeouts are tolerated", async () => {
    // The first answer comes late, so the second event is tracked while the first is in flight.
    const { server, tracker } = await setup((req, i) => (i === 0 ? { ...ok(req), delayMs: 100 } : "hang"), {
      timeoutMs: 60_000,
    });
    tracker.track(EVENT);
    const first = tracker.flush(2000);
    await waitFor(() => server.requests.length === 1);
    tracker.track(EVENT);
    assert.equal(await first, true);
    const started = Date.now();
    assert.equal(await tracker.flush(-1), false); // negative: no wait
    assert.equal(await tracker.flush(0), false);
    assert.ok(Date.now() - started < 2000);
    await waitFor(() => server.requests.length >= 2);
    assert.equal(server.requests[0].json.batch.length, 1);
    const later = sentEvents(server.requests.slice(1)).map((e) => e.key);
    assert.equal(new Set(later).size, 1);
    assert.notEqual(later[0], keysOf(server.requests[0])[0]);
    const idle = new Tracker({ apiKey: "k", baseUrl: server.url });
    for (const odd of [NaN, "x", null, {}, Infinity]) assert.equal(await idle.flush(odd), true);
    assert.equal(await idle.shutdown(NaN), true);
  });

  test("a throwing or rejecting callback does not break delivery", async () => {
    const rejections = [];
    const onRejection = (r) => rejections.push(r);
    process.on("unhandledRejection", onRejection);
    cleanup.push(() => process.off("unhandledRejection", onRejection));
    const server = await startServer(
      perEvent((_item, i) =>
        i % 2 === 0 ? { status: 200, body: accepted([{ code: "unknown_model", message: "m" }]) } : { status: 200, body: accepted() },
      ),
    );
    cleanup.push(() => server.close());
    let warningCalls = 0;
    let errorCalls = 0;
    const tracker = new Tracker({
      apiKey: "k",
      baseUrl: server.url,
      onWarning: () => {
        warningCalls++;
        if (warningCalls % 2) throw new Error("user bug");
        return Promise.reject(new Error("async user bug"));
      },
      onError: () => {
        errorCalls++;
        throw new Error("user bug");
      },
    });
    for (let i = 0; i < 6; i++) {
      tracker.track({ ...EVENT, prompt_tokens: 1, [`extra${i}`]: 1 });
      tracker.track({ provider: "x" });
    }
    assert.equal(await tracker.shutdown(5000), true);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sentEvents(server.requests).length, 6);
    assert.equal(tracker.stats().sent, 6);
    assert.equal(errorCalls, 6);
    assert.equal(warningCalls, 7 + 3); // ignored fields + unknown_model on every other event
    assert.deepEqual(rejections, []);
  });

  test("queue_full: the new event is dropped, at most one warning per second, with counts", async () => {
    const { server, tracker, warnings } = await setup(() => "hang", { maxQueueSize: 3, timeoutMs: 60_000 });
    for (let i = 0; i < 10; i++) tracker.track(EVENT);
    assert.deepEqual(
      warnings.map((w) => [w.code, w.count]),
      [["queue_full", 1]],
    );
    await waitFor(() => warnings.length === 2, 3000);
    assert.deepEqual(warnings[1].code, "queue_full");
    assert.deepEqual(warnings[1].count, 6);
    assert.equal(tracker.stats().dropped, 7);
    assert.equal(tracker.stats().queued, 3);
    await waitFor(() => sentEvents(server.requests).length === 3);
    const keys = new Set(sentEvents(server.requests).map((e) => e.key));
    assert.equal(keys.size, 3);
  });
});
