// withAttributes(): the defaults of every event tracked inside it (instrumented calls and
// track()), across await and timers; explicit fields win; nesting adds up. And the Express and Hono
// middleware of the README, which set the customer from the request, run for real.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import express from "express";
import { Hono } from "hono";
import OpenAI from "openai";

import { Tracker, currentAttributes, instrument, withAttributes } from "costtrack";
import { recorder, startProvider } from "./canned-provider.mjs";
import { collector, sentEvents, startServer } from "./helpers.mjs";

let provider;
before(async () => {
  provider = await startProvider();
});
after(() => provider.close());

const openai = (tracker, defaults = {}) =>
  instrument(new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/v1`, maxRetries: 0 }), { tracker, ...defaults });
const ask = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };

test("instrumented calls take the context's fields; instrument()'s own defaults win", async () => {
  const tracker = recorder();
  const client = openai(tracker, { feature: "explicit" });
  await withAttributes({ feature: "ctx", customerId: "cus_1", customerName: "Acme", environment: "staging", metadata: { plan: "pro" } }, async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    await client.chat.completions.create(ask);
  });
  await client.chat.completions.create(ask); // outside: nothing from the context
  const [inside, outside] = tracker.events;
  assert.equal(inside.feature, "explicit");
  assert.equal(inside.customerId, "cus_1");
  assert.equal(inside.customerName, "Acme");
  assert.equal(inside.environment, "staging");
  assert.deepEqual(inside.metadata, { plan: "pro", service_tier: "default", usage_convention: "openai" });
  assert.equal(outside.customerId, undefined);
  assert.deepEqual(outside.metadata, { service_tier: "default", usage_convention: "openai" });
});

test("nested contexts add up, the inner one winning; currentAttributes() reads them", () => {
  withAttributes({ customerId: "outer", feature: "a", metadata: { x: 1, y: 1 } }, () => {
    withAttributes({ feature: "b", metadata: { y: 2 } }, () => {
      assert.deepEqual(currentAttributes(), { customerId: "outer", feature: "b", metadata: { x: 1, y: 2 } });
    });
    assert.equal(currentAttributes().feature, "a");
  });
  assert.equal(currentAttributes(), undefined);
});

test("track() inside a context: the event's fields win, metadata merged; it goes out that way", async () => {
  const sink = await startServer();
  const seen = collector();
  const tracker = new Tracker({ apiKey: "ct_test", baseUrl: sink.url, ...seen });
  try {
    withAttributes({ customerId: "cus_ctx", feature: "ctx", metadata: { region: "eu" } }, () => {
      tracker.track({ provider: "openai", model: "gpt-5", promptTokens: 1, completionTokens: 1, feature: "own", metadata: { route: "/a" } });
    });
    assert.equal(await tracker.flush(5000), true);
    const [{ event }] = sentEvents(sink.requests);
    assert.equal(event.customer_id, "cus_ctx");
    assert.equal(event.feature, "own");
    assert.deepEqual(event.metadata, { region: "eu", route: "/a" });
    assert.deepEqual(seen.errors, []);
  } finally {
    await tracker.shutdown(100);
    await sink.close();
  }
});

test("Express: a middleware sets the customer from the request", async () => {
  const tracker = recorder();
  const client = openai(tracker);
  const app = express();
  // The README's middleware: every call made while handling the request is the caller's.
  app.use((req, res, next) => withAttributes({ customerId: req.get("x-customer-id"), feature: req.path }, next));
  app.get("/chat", async (req, res) => {
    const completion = await client.chat.completions.create(ask);
    res.json({ text: completion.choices[0].message.content });
  });
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  try {
    const response = await fetch(`http://127.0.0.1:${server.address().port}/chat`, { headers: { "x-customer-id": "cus_express" } });
    assert.deepEqual(await response.json(), { text: "Hello!" });
    assert.equal(tracker.events.length, 1);
    assert.equal(tracker.events[0].customerId, "cus_express");
    assert.equal(tracker.events[0].feature, "/chat");
  } finally {
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("Hono: a middleware sets the customer from the request", async () => {
  const tracker = recorder();
  const client = openai(tracker);
  const app = new Hono();
  app.use((c, next) => withAttributes({ customerId: c.req.header("x-customer-id"), feature: c.req.path }, next));
  app.get("/chat", async (c) => {
    const completion = await client.chat.completions.create(ask);
    return c.json({ text: completion.choices[0].message.content });
  });
  const response = await app.request("/chat", { headers: { "x-customer-id": "cus_hono" } });
  assert.deepEqual(await response.json(), { text: "Hello!" });
  assert.deepEqual(
    tracker.events.map((e) => [e.customerId, e.feature]),
    [["cus_hono", "/chat"]],
  );
});
