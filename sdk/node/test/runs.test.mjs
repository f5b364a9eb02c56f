// Run identity (CONTRACT §11): withAttributes() sets traceId/sessionId/parentId/runName for the
// calls inside; tracker.run() generates the trace id and ends with the run marker event; steps
// set parentId; nested and concurrent runs keep their own context.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import OpenAI from "openai";

import { EventValidationError, currentAttributes, instrument, withAttributes, withReservation } from "costtrack";
import { startProvider } from "./canned-provider.mjs";
import { requestsOf, serviceFixtures } from "./canned-reservations.mjs";
import { sentEvents } from "./helpers.mjs";

const EVENT = { provider: "openai", model: "gpt-5", promptTokens: 10, completionTokens: 5 };
const HEX32 = /^[0-9a-f]{32}$/;

let provider;
before(async () => {
  provider = await startProvider();
});
after(() => provider.close());

const fixtures = serviceFixtures();

async function setup(trackerOptions = {}) {
  const { service, tracker, ...seen } = await fixtures.setup({}, trackerOptions);
  const events = async () => {
    assert.equal(await tracker.flush(), true);
    return sentEvents(requestsOf(service.requests, "events")).map((e) => e.event);
  };
  return { service, tracker, events, ...seen };
}

const tick = (ms = 2) => new Promise((resolve) => setTimeout(resolve, ms));

test("withAttributes(): run identity goes on every event inside; the event's own fields win", async () => {
  const { tracker, events } = await setup();
  await withAttributes({ traceId: "trace-1", sessionId: "conv_7", parentId: "plan", runName: "answer-ticket" }, async () => {
    await tick();
    tracker.track(EVENT);
    tracker.track({ ...EVENT, parentId: "own", runName: "other" });
  });
  tracker.track(EVENT);
  const [inside, own, outside] = await events();
  assert.deepEqual(
    [inside.trace_id, inside.session_id, inside.parent_id, inside.run_name],
    ["trace-1", "conv_7", "plan", "answer-ticket"],
  );
  assert.deepEqual([own.trace_id, own.parent_id, own.run_name], ["trace-1", "own", "other"]);
  assert.equal(outside.trace_id, undefined);
});

test("tracker.run(): a 32-hex trace id and the run name on the calls inside, then the marker event (wire bytes)", async () => {
  const { tracker, service, errors } = await setup({ environment: "staging" });
  const client = instrument(new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/v1`, maxRetries: 0 }), { tracker });
  let traceId;
  const result = await withAttributes({ sessionId: "conv_7", customerId: "cus_1" }, () =>
    tracker.run("answer-ticket", async (run) => {
      traceId = run.traceId;
      assert.equal(run.runName, "answer-ticket");
      assert.equal(run.sessionId, undefined); // not given: the context's goes on the events
      assert.deepEqual(currentAttributes(), { sessionId: "conv_7", customerId: "cus_1", traceId, runName: "answer-ticket" });
      await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
      return 42;
    }),
  );
  assert.equal(result, 42);
  assert.match(traceId, HEX32);
  assert.equal(await tracker.flush(), true);
  const sent = sentEvents(requestsOf(service.requests, "events"));
  assert.equal(sent.length, 2);
  const [call, marker] = sent.map((e) => e.event);
  assert.deepEqual([call.trace_id, call.run_name, call.session_id, call.customer_id], [traceId, "answer-ticket", "conv_7", "cus_1"]);
  const latency = marker.latency_ms;
  assert.ok(Number.isInteger(latency) && latency >= 0);
  assert.equal(
    JSON.stringify(marker),
    `{"provider":"costtrack","model":"run","trace_id":"${traceId}","status":"success","latency_ms":${latency},` +
      `"run_name":"answer-ticket","customer_id":"cus_1","session_id":"conv_7","environment":"staging"}`,
  );
  assert.equal(marker.prompt_tokens, undefined);
  assert.deepEqual(errors, []);
});

test("the marker's status comes from what the run threw, and the error is rethrown", async () => {
  const { tracker, events } = await setup();
  const abort = Object.assign(new Error("This operation was aborted"), { name: "AbortError" });
  const timeout = Object.assign(new Error("request timed out"), { name: "TimeoutError" });
  const plain = new Error("bad");
  for (const error of [plain, abort, timeout]) {
    await assert.rejects(
      tracker.run("r", { sessionId: "s1" }, async () => {
        throw error;
      }),
      (thrown) => thrown === error,
    );
  }
  const markers = await events();
  assert.deepEqual(
    markers.map((m) => [m.model, m.status, m.session_id]),
    [
      ["run", "error", "s1"],
      ["run", "cancelled", "s1"],
      ["run", "timeout", "s1"],
    ],
  );
});

test("steps set parentId and nest; a step name is made an identifier", async () => {
  const { tracker, events } = await setup();
  let ids;
  await tracker.run("agent", async (run) => {
    await run.step("plan", async (step) => {
      assert.equal(step.parentId, "plan");
      tracker.track(EVENT);
      await run.step("search docs", async (inner) => {
        ids = inner;
        await tick();
        tracker.track(EVENT);
      });
      tracker.track(EVENT);
    });
    tracker.track(EVENT);
  });
  assert.deepEqual(ids, { name: "search docs", parentId: "search-docs", traceId: ids.traceId });
  const sent = await events();
  assert.deepEqual(
    sent.map((e) => [e.model, e.parent_id]),
    [
      ["gpt-5", "plan"],
      ["gpt-5", "search-docs"],
      ["gpt-5", "plan"],
      ["gpt-5", undefined],
      ["run", undefined],
    ],
  );
  assert.equal(new Set(sent.map((e) => e.trace_id)).size, 1);
});

test("a run inside a run is its own run (new trace id, same session); the outer one resumes after it", async () => {
  const { tracker, events } = await setup();
  await tracker.run("outer", { sessionId: "conv_1" }, async (outer) => {
    await outer.step("delegate", async () => {
      await tracker.run("inner", async (inner) => {
        assert.notEqual(inner.traceId, outer.traceId);
        tracker.track({ ...EVENT, feature: "inner" });
      });
      tracker.track({ ...EVENT, feature: "outer" });
    });
  });
  const sent = await events();
  const find = (pred) => sent.find(pred);
  const inner = find((e) => e.run_name === "inner" && e.model === "run");
  const outer = find((e) => e.run_name === "outer" && e.model === "run");
  assert.equal(find((e) => e.feature === "inner").trace_id, inner.trace_id);
  assert.equal(find((e) => e.feature === "inner").parent_id, undefined);
  assert.equal(find((e) => e.feature === "outer").trace_id, outer.trace_id);
  assert.equal(find((e) => e.feature === "outer").parent_id, "delegate");
  assert.deepEqual([inner.session_id, outer.session_id], ["conv_1", "conv_1"]);
});

test("concurrent runs keep their own context across interleaved awaits", async () => {
  const { tracker, events } = await setup();
  const traces = await Promise.all(
    ["a", "b", "c", "d"].map((name, i) =>
      tracker.run(name, async (run) => {
        for (let step = 0; step < 3; step++) {
          await tick((i * 7 + step * 3) % 5);
          tracker.track({ ...EVENT, feature: name });
        }
        return run.traceId;
      }),
    ),
  );
  assert.equal(new Set(traces).size, 4);
  for (const event of await events()) {
    const name = event.model === "run" ? event.run_name : event.feature;
    assert.equal(event.trace_id, traces["abcd".indexOf(name)]);
    assert.equal(event.run_name, name);
  }
});

test("the marker never settles a reservation: a run with no call inside withReservation releases the hold", async () => {
  const { tracker, service, events } = await setup();
  await withReservation(tracker, { provider: "openai", model: "gpt-5", estimate: { amount: "0.01" } }, () => tracker.run("cached", () => "hit"));
  const [marker] = await events();
  assert.equal(marker.model, "run");
  assert.equal(marker.reservation_id, undefined);
  assert.deepEqual(
    requestsOf(service.requests, "release").map((r) => r.url),
    ["/v1/reservations/rsv_1"],
  );
});

test("an invalid run name or session id is reported and left out; the run still runs", async () => {
  const { tracker, events, errors } = await setup();
  const result = await tracker.run("  ", { sessionId: "has space" }, () => {
    tracker.track(EVENT);
    return "ran";
  });
  assert.equal(result, "ran");
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof EventValidationError);
  assert.deepEqual(errors[0].fields.sort(), ["runName", "sessionId"]);
  const [call, marker] = await events();
  assert.equal(call.run_name, undefined);
  assert.match(call.trace_id, HEX32);
  assert.deepEqual([marker.model, marker.run_name, marker.trace_id], ["run", undefined, call.trace_id]);
  await assert.rejects(tracker.run("x"), TypeError);
});
