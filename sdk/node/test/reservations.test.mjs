// tracker.reserve() and release() against a canned service that answers as CONTRACT §10 says:
// the wire bytes, allowed and refused answers, expiry, onUnavailable, timeouts and retries.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { EventValidationError, Tracker, withAttributes } from "costtrack";
import { requestsOf, serviceFixtures } from "./canned-reservations.mjs";
import { closedPort, collector, sentEvents, startServer } from "./helpers.mjs";

const VERSION = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
// A reservation's key: its group (this process's instance and a counter), then a UUID.
const UUID = /^grp:[0-9a-f]{12}\.[0-9]+:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CALL = { provider: "openai", model: "gpt-5", customerId: "cus_1" };
const TOKENS = { ...CALL, estimate: { promptTokens: 1000, maxOutputTokens: 500 } };

const { cleanup, setup } = serviceFixtures();

describe("wire", () => {
  test("reservations made together share a group of at most 25 (their holds share a ledger shard)", async () => {
    const { service, tracker } = await setup();
    await Promise.all(Array.from({ length: 60 }, () => tracker.reserve({ ...CALL, estimate: { amount: "0.01" } })));
    const keys = requestsOf(service.requests, "reserve").map((r) => r.headers["idempotency-key"]);
    assert.equal(new Set(keys).size, 60);
    const sizes = new Map();
    for (const key of keys) {
      assert.match(key, UUID);
      const group = key.split(":")[1];
      sizes.set(group, (sizes.get(group) ?? 0) + 1);
    }
    // made in one tick: a group left open by an earlier test, then full groups of 25
    assert.ok(Math.max(...sizes.values()) <= 25 && sizes.size <= 4, JSON.stringify([...sizes.values()]));
    assert.ok([...sizes.values()].filter((size) => size === 25).length >= 2);
  });

  test("POST /v1/reservations: headers, snake_case body in a fixed order, one Idempotency-Key", async () => {
    const { service, tracker, warnings } = await setup({}, { environment: "staging" });
    await tracker.reserve({
      ...CALL,
      feature: " chat ",
      customerName: "Acme",
      estimate: { promptTokens: 1200, maxOutputTokens: 800, metadata: { service_tier: "flex" } },
      ttlSeconds: 60,
      timeoutMs: 3000,
      onUnavailable: "deny",
    });
    const [request] = requestsOf(service.requests, "reserve");
    assert.equal(request.headers.authorization, "Bearer ct_test");
    assert.equal(request.headers["content-type"], "application/json");
    assert.equal(request.headers["user-agent"], `costtrack-node/${VERSION}`);
    assert.match(request.headers["idempotency-key"], UUID);
    assert.equal(
      request.text,
      '{"provider":"openai","model":"gpt-5","feature":"chat","customer_id":"cus_1","customer_name":"Acme","environment":"staging",' +
        '"estimate":{"prompt_tokens":1200,"max_output_tokens":800,"metadata":{"service_tier":"flex"}},"ttl_seconds":60}',
    );
    assert.deepEqual(warnings, []);
  });

  test("an amount stays a decimal string; hold: false is sent as a dry run", async () => {
    const { service, tracker } = await setup();
    await tracker.reserve({ provider: "anthropic", model: "claude-sonnet-4-5", estimate: { amount: "0.0500" }, hold: false });
    assert.equal(
      requestsOf(service.requests, "reserve")[0].text,
      '{"provider":"anthropic","model":"claude-sonnet-4-5","environment":"production","estimate":{"amount":"0.0500"},"hold":false}',
    );
  });

  test("withAttributes() gives the attribution the options leave out; the options' own win", async () => {
    const { service, tracker } = await setup();
    await withAttributes({ customerId: "cus_ctx", feature: "ctx", traceId: "t1" }, () =>
      tracker.reserve({ provider: "openai", model: "gpt-5", feature: "own", estimate: { amount: "0.01" } }),
    );
    const body = requestsOf(service.requests, "reserve")[0].json;
    assert.equal(body.customer_id, "cus_ctx");
    assert.equal(body.feature, "own");
    assert.equal(body.trace_id, undefined); // a reservation carries attribution only
  });

  test("options that break the rules reject with every problem named, and nothing is sent", async () => {
    const { service, tracker } = await setup();
    const cases = [
      [{ ...CALL, estimate: { amount: 0.05 } }, ["estimate.amount"]],
      [{ ...CALL, estimate: { amount: "1e-3" } }, ["estimate.amount"]],
      [{ ...CALL, estimate: { promptTokens: 10, max_output_tokens: 5 } }, ["estimate.max_output_tokens", "estimate.maxOutputTokens"]],
      [{ ...CALL, estimate: { amount: "0.1", promptTokens: 10 } }, ["estimate.promptTokens"]],
      [{ provider: "openai", estimate: { amount: "0.1" }, ttlSeconds: 0 }, ["model", "ttlSeconds"]],
      [{ ...CALL, estimate: { promptTokens: 10, maxOutputTokens: 5, metadata: { service_tier: 3 } } }, ["estimate.metadata.service_tier"]],
      [{ ...CALL, estimate: { amount: "0.1" }, onUnavailable: "maybe", hold: "no" }, ["hold", "onUnavailable"]],
      [{ ...CALL }, ["estimate"]],
    ];
    for (const [options, fields] of cases) {
      await assert.rejects(tracker.reserve(options), (error) => {
        assert.ok(error instanceof EventValidationError);
        assert.deepEqual(error.fields.sort(), [...fields].sort());
        return true;
      });
    }
    const typo = await tracker.reserve({ ...CALL, estimate: { promptTokens: 1, maxOutputToken: 2 } }).catch((e) => e);
    assert.match(typo.message, /estimate\.maxOutputToken is not an estimate field; did you mean estimate\.maxOutputTokens\?/);
    assert.equal(service.requests.length, 0);
  });

  test("an unknown option is ignored and reported once as ignored_field", async () => {
    const { service, tracker, warnings } = await setup();
    await tracker.reserve({ ...CALL, customer_id: "x", estimate: { amount: "0.01" } });
    assert.equal(requestsOf(service.requests, "reserve")[0].json.customer_id, "cus_1");
    assert.deepEqual(
      warnings.map((w) => w.code),
      ["ignored_field"],
    );
    assert.match(warnings[0].message, /did you mean "customerId"/);
  });
});

describe("answers", () => {
  test("allowed: the answer in Node casing, money as decimal strings", async () => {
    const { tracker, warnings } = await setup({ budget: "1" });
    const reservation = await tracker.reserve(TOKENS);
    assert.deepEqual(reservation, {
      allowed: true,
      reservationId: "rsv_1",
      held: "0.003", // 1000 at $1/M + 500 at $4/M
      currency: "USD",
      expiresAt: "2026-11-26T10:10:00.000Z",
      budgets: [{ budgetId: "bud_cus", name: "each customer", amount: "1", spent: "0", held: "0.003", remaining: "0.997", instance: "cus_1" }],
    });
    assert.deepEqual(warnings, []);
  });

  test("refused: 429 BUDGET_EXCEEDED gives allowed false and the refusing budgets, without a warning", async () => {
    const { tracker, warnings, service } = await setup({ budget: "0.05" });
    const first = await tracker.reserve({ ...CALL, estimate: { amount: "0.03" } });
    const second = await tracker.reserve({ ...CALL, estimate: { amount: "0.03" } });
    assert.equal(first.allowed, true);
    assert.deepEqual(second, {
      allowed: false,
      reservationId: null,
      held: "0",
      currency: null,
      expiresAt: null,
      budgets: [{ budgetId: "bud_cus", instance: "cus_1", remaining: "0.02" }],
      refusedBy: [{ budgetId: "bud_cus", instance: "cus_1", remaining: "0.02" }],
    });
    assert.equal(requestsOf(service.requests, "reserve").length, 2); // a refusal is not retried
    assert.deepEqual(warnings, []);
    // Released, the hold returns and the same reservation fits.
    assert.equal(await tracker.release(first.reservationId), true);
    assert.equal(await tracker.release(first.reservationId), false); // again: 404, no warning
    assert.equal((await tracker.reserve({ ...CALL, estimate: { amount: "0.03" } })).allowed, true);
    assert.deepEqual(warnings, []);
  });

  test("refused: 429 CREDITS_EXHAUSTED gives allowed false, the refusal and what the credits have left", async () => {
    const { tracker, warnings } = await setup({ budget: "1", credits: "0.25" });
    const refused = await tracker.reserve({ ...CALL, estimate: { amount: "0.30" } });
    assert.deepEqual(refused, {
      allowed: false,
      reservationId: null,
      held: "0",
      currency: null,
      expiresAt: null,
      budgets: [],
      refusedBy: [],
      refusal: "CREDITS_EXHAUSTED",
      creditsRemaining: "0.25",
    });
    assert.equal((await tracker.reserve({ ...CALL, estimate: { amount: "0.20" } })).allowed, true);
    assert.deepEqual(warnings, []);
  });

  test("expiry: an event settling an expired reservation is accepted with reservation_unknown; a second settle warns reservation_settled", async () => {
    const { tracker, warnings, service } = await setup();
    const expiring = await tracker.reserve({ ...CALL, estimate: { amount: "0.01" }, ttlSeconds: 1 });
    const kept = await tracker.reserve({ ...CALL, estimate: { amount: "0.01" } });
    assert.equal(service.budget.held, 2n * 10n ** 8n);
    service.clock.now += 1000; // the first one's ttl passes
    tracker.track({ ...CALL, promptTokens: 10, completionTokens: 5, reservationId: expiring.reservationId });
    tracker.track({ ...CALL, promptTokens: 10, completionTokens: 5, reservationId: kept.reservationId });
    assert.equal(await tracker.flush(), true);
    tracker.track({ ...CALL, promptTokens: 10, completionTokens: 5, reservationId: kept.reservationId });
    assert.equal(await tracker.flush(), true);
    assert.deepEqual(
      warnings.map((w) => [w.code, w.status]),
      [
        ["reservation_unknown", 200],
        ["reservation_settled", 200],
      ],
    );
    assert.deepEqual(
      sentEvents(requestsOf(service.requests, "events")).map((e) => e.event.reservation_id),
      ["rsv_1", "rsv_2", "rsv_2"],
    );
    assert.equal(service.budget.held, 0n);
    assert.equal(tracker.stats().failed, 0);
  });
});

describe("when the service cannot answer", () => {
  const unavailable = { allowed: true, reservationId: null, held: "0", currency: null, expiresAt: null, budgets: [], unavailable: true };

  test("503: retried with the same Idempotency-Key, then onUnavailable (allow by default) with a warning", async () => {
    const { tracker, service, warnings } = await setup(
      { before: () => ({ status: 503, body: { error: { code: "UNAVAILABLE", message: "down" } } }) },
      { maxRetries: 2 },
    );
    assert.deepEqual(await tracker.reserve(TOKENS), unavailable);
    const sent = requestsOf(service.requests, "reserve");
    assert.equal(sent.length, 3);
    assert.equal(new Set(sent.map((r) => r.headers["idempotency-key"])).size, 1);
    assert.equal(new Set(sent.map((r) => r.text)).size, 1);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].code, "reservation_unavailable");
    assert.equal(warnings[0].status, 503);
    assert.equal(warnings[0].idempotencyKey, sent[0].headers["idempotency-key"]);
    assert.match(warnings[0].message, /UNAVAILABLE \(HTTP 503\).*onUnavailable is "allow"/);
  });

  test("onUnavailable: deny as the tracker's option, and overridden per call", async () => {
    const port = await closedPort();
    const seen = collector();
    const tracker = new Tracker({ apiKey: "ct_test", baseUrl: `http://127.0.0.1:${port}`, onUnavailable: "deny", maxRetries: 0, ...seen });
    cleanup.push(() => tracker.shutdown(100));
    assert.deepEqual(await tracker.reserve(TOKENS), { ...unavailable, allowed: false, refusedBy: [] });
    assert.deepEqual(await tracker.reserve({ ...TOKENS, onUnavailable: "allow" }), unavailable);
    assert.deepEqual(
      seen.warnings.map((w) => w.code),
      ["reservation_unavailable", "reservation_unavailable"],
    );
    assert.match(seen.warnings[0].message, /ECONNREFUSED.*the call is denied/);
  });

  test("a slow answer: reserve() gives up at timeoutMs, retries included", async () => {
    const { tracker, service, warnings } = await setup({ before: (request) => (request.method === "POST" && request.url === "/v1/reservations" ? { status: 200, body: {}, delayMs: 3000 } : undefined) });
    const started = Date.now();
    assert.deepEqual(await tracker.reserve({ ...TOKENS, timeoutMs: 300 }), unavailable);
    const took = Date.now() - started;
    assert.ok(took >= 290 && took < 1500, `took ${took} ms`);
    assert.equal(warnings[0].code, "reservation_unavailable");
    assert.match(warnings[0].message, /no response within/);
    assert.ok(requestsOf(service.requests, "reserve").length >= 1);
  });

  test("a 503 then an answer: allowed, both attempts with one key", async () => {
    let calls = 0;
    const { tracker, service, warnings } = await setup({
      before: (request) => (request.url === "/v1/reservations" && calls++ === 0 ? { status: 503, body: {}, headers: { "retry-after": "0" } } : undefined),
    });
    const reservation = await tracker.reserve(TOKENS);
    assert.equal(reservation.allowed, true);
    assert.equal(reservation.reservationId, "rsv_1");
    const keys = requestsOf(service.requests, "reserve").map((r) => r.headers["idempotency-key"]);
    assert.equal(keys.length, 2);
    assert.equal(keys[0], keys[1]);
    assert.deepEqual(warnings, []);
  });

  test("an answer that is neither allowed nor refused (401, a 200 without allowed) follows onUnavailable", async () => {
    const server = await startServer((request) =>
      request.headers.authorization === "Bearer ct_revoked"
        ? { status: 401, body: { error: { code: "REVOKED_API_KEY", message: "revoked" } } }
        : { status: 200, body: { ok: true } },
    );
    cleanup.push(() => server.close());
    const seen = collector();
    const revoked = new Tracker({ apiKey: "ct_revoked", baseUrl: server.url, ...seen });
    const odd = new Tracker({ apiKey: "ct_ok", baseUrl: server.url, onUnavailable: "deny", ...seen });
    cleanup.push(() => revoked.shutdown(100), () => odd.shutdown(100));
    assert.equal((await revoked.reserve(TOKENS)).allowed, true);
    assert.equal((await odd.reserve(TOKENS)).allowed, false);
    assert.deepEqual(
      seen.warnings.map((w) => [w.code, w.status]),
      [
        ["reservation_unavailable", 401],
        ["reservation_unavailable", 200],
      ],
    );
    assert.equal(server.requests.length, 2); // 4xx is never retried
  });

  test("a disabled tracker allows without a request; a misconfigured one follows onUnavailable", async () => {
    const off = new Tracker({ enabled: false, onUnavailable: "deny" });
    assert.deepEqual(await off.reserve(TOKENS), { allowed: true, reservationId: null, held: "0", currency: null, expiresAt: null, budgets: [] });
    const seen = collector();
    const noKey = new Tracker({ onUnavailable: "deny", ...seen });
    assert.equal((await noKey.reserve(TOKENS)).allowed, false);
    assert.equal((await noKey.reserve({ ...TOKENS, onUnavailable: "allow" })).allowed, true);
    assert.equal(await noKey.release("rsv_1"), false);
    assert.equal(seen.errors.length, 1); // the missing apiKey, once
  });
});
