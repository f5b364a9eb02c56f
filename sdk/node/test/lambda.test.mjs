// withFlush(): the Lambda wrapper awaits delivery before handing back the result.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Tracker, withFlush } from "costtrack";
import { accepted, perEvent, startServer } from "./helpers.mjs";

const EVENT = { provider: "anthropic", model: "claude-sonnet-4-5", promptTokens: 1000, completionTokens: 500 };
let hung;
before(async () => {
  hung = await startServer(() => "hang");
});
after(() => hung.close());

test("the wrapped handler resolves only after its events are delivered, with the handler's result", async (t) => {
  // Answers 200 ms late: without the flush the event would still be in flight at return.
  const server = await startServer((req) => ({ ...perEvent(() => ({ status: 200, body: accepted() }))(req), delayMs: 200 }));
  const tracker = new Tracker({ apiKey: "k", baseUrl: server.url });
  // Also when an assertion fails: an open server would keep the test process from ending.
  t.after(async () => {
    await tracker.shutdown();
    await server.close();
  });
  const handler = withFlush(async (event) => {
    tracker.track({ ...EVENT, feature: event.feature });
    return { ok: true };
  });
  const result = await handler({ feature: "summarize" }, { getRemainingTimeInMillis: () => 30_000 });
  assert.deepEqual(result, { ok: true });
  assert.equal(server.requests.length, 1);
  assert.equal(tracker.stats().sent, 1);
  assert.equal(tracker.stats().queued, 0);
});

test("errors from the handler pass through after the flush", async (t) => {
  const server = await startServer();
  const tracker = new Tracker({ apiKey: "k", baseUrl: server.url });
  t.after(async () => {
    await tracker.shutdown();
    await server.close();
  });
  const handler = withFlush(
    async () => {
      tracker.track(EVENT);
      throw new Error("handler failed");
    },
    { tracker },
  );
  await assert.rejects(handler({}, {}), /handler failed/);
  assert.equal(tracker.stats().sent, 1);
});

test("the flush never runs past the invocation's remaining time", async () => {
  const tracker = new Tracker({ apiKey: "k", baseUrl: hung.url, timeoutMs: 60_000, onWarning() {} });
  const handler = withFlush(async () => {
    tracker.track(EVENT);
    return 1;
  });
  const started = Date.now();
  // 800 ms left, minus the 500 ms margin kept for the runtime.
  assert.equal(await handler({}, { getRemainingTimeInMillis: () => 800 }), 1);
  const took = Date.now() - started;
  // Bounded by the invocation's time left (the hung request alone would take 60 s); the
  // ceiling is generous so a loaded CI machine does not fail it.
  assert.ok(took >= 250 && took < 5000, `took ${took} ms`);
  await tracker.shutdown(10);
});

test("timeoutMs bounds the flush; this is passed through; sync handlers work", async () => {
  const tracker = new Tracker({ apiKey: "k", baseUrl: hung.url, timeoutMs: 60_000, onWarning() {} });
  const handler = withFlush(
    function (x) {
      tracker.track(EVENT);
      return this.base + x;
    },
    { tracker: [tracker], timeoutMs: 100 },
  );
  const started = Date.now();
  assert.equal(await handler.call({ base: 40 }, 2), 42);
  assert.ok(Date.now() - started < 5000); // not the hung request's 60 s
  await tracker.shutdown(10);
});
