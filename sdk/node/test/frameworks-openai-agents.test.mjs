// The OpenAI Agents SDK processor (costtrack/openai-agents) run by @openai/agents itself: an
// agent with a tool over two turns on the Responses API and on Chat Completions against the
// canned OpenAI server on 127.0.0.1, a failing run, the run's identity, and an instrumented
// client under the processor (each call tracked once).
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import OpenAI from "openai";
import { z } from "zod";
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, run, setTraceProcessors, tool } from "@openai/agents";

import { fromOpenAI, instrument, withAttributes } from "costtrack";
import { CosttrackTracingProcessor, agentsIdentity } from "costtrack/openai-agents";
import { checkEvent } from "../dist/esm/validation.js";
import { CHAT, RESPONSE, recorder, startProvider, toolTurn } from "./canned-provider.mjs";

let provider;
before(async () => {
  provider = await startProvider();
});
after(() => {
  setTraceProcessors([]);
  return provider.close();
});

const client = () => new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/v1`, maxRetries: 0 });
const weather = tool({
  name: "get_weather",
  description: "The weather in a city.",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `Sunny in ${city}`,
});
const agentWith = (model) => new Agent({ name: "Weather", instructions: "Answer with the weather.", model, tools: [weather] });
const identityOf = ({ traceId, sessionId, parentId, runName }) =>
  Object.fromEntries(Object.entries({ traceId, sessionId, parentId, runName }).filter(([, value]) => value !== undefined));
const withoutLatency = ({ latencyMs, ...rest }) => {
  assert.ok(Number.isInteger(latencyMs) && latencyMs >= 0, `latencyMs ${latencyMs}`);
  return rest;
};

let tracker;
beforeEach(() => {
  tracker = recorder();
  setTraceProcessors([new CosttrackTracingProcessor({ tracker, feature: "agents" })]);
});

describe("CosttrackTracingProcessor", () => {
  test("a run with a tool: each turn is one event, priced as fromOpenAI prices its response, with the run's identity", async () => {
    const model = new OpenAIResponsesModel(client(), "gpt-5-mini-tools");
    const result = await withAttributes({ customerId: "cus_1" }, () =>
      new Runner({ workflowName: "Weather desk", groupId: "conv-42" }).run(agentWith(model), "Weather in Paris?"),
    );
    assert.equal(result.finalOutput, "Hello!");
    assert.equal(tracker.events.length, 2);
    const [first, second] = tracker.events;
    for (const event of tracker.events) checkEvent(event);
    assert.match(first.traceId, /^[0-9a-f]{32}$/);
    assert.match(first.parentId, /^[0-9a-f]{24}$/);
    assert.equal(first.sessionId, "conv-42");
    assert.equal(first.runName, "Weather desk");
    assert.equal(second.traceId, first.traceId);
    assert.equal(first.metadata?.trace_id, undefined);
    const turns = [toolTurn({ tools: [{ name: "get_weather" }] }), RESPONSE];
    for (const [index, event] of tracker.events.entries()) {
      const expected = fromOpenAI(turns[index], { feature: "agents", customerId: "cus_1", ...identityOf(event), status: "success" });
      assert.deepEqual(withoutLatency(event), expected);
    }
    assert.equal(first.cachedInputTokens, 1024);
    assert.equal(
      tracker.events.reduce((sum, event) => sum + event.promptTokens, 0),
      result.state.usage.inputTokens,
    );
  });

  test("Chat Completions: the generation span's completion, priced as fromOpenAI prices it", async () => {
    const model = new OpenAIChatCompletionsModel(client(), "gpt-5-mini");
    await new Runner({ workflowName: "Chat" }).run(agentWith(model), "Hello");
    assert.equal(tracker.events.length, 1);
    const [event] = tracker.events;
    checkEvent(event);
    assert.deepEqual(withoutLatency(event), fromOpenAI(CHAT, { feature: "agents", ...identityOf(event), status: "success" }));
    assert.equal(event.runName, "Chat");
  });

  test("a failing run: the failed call is tracked with zero tokens and the error status", async () => {
    const model = new OpenAIResponsesModel(client(), "gpt-5-mini-fail");
    await assert.rejects(new Runner({ workflowName: "Failing" }).run(agentWith(model), "Weather?"));
    assert.equal(tracker.events.length, 1);
    const [event] = tracker.events;
    checkEvent(event);
    assert.equal(event.model, "unknown"); // a Responses API span names no model before the response
    assert.equal(event.status, "error");
    assert.equal(event.promptTokens, 0);
    assert.equal(event.completionTokens, 0);
    assert.equal(event.runName, "Failing");
    assert.match(event.traceId, /^[0-9a-f]{32}$/);
  });

  test("with the client instrumented too, each answered call is tracked once (the client's event, with the run's identity)", async () => {
    const instrumented = instrument(client(), { tracker, feature: "instrumented" });
    const model = new OpenAIResponsesModel(instrumented, "gpt-5-mini-tools");
    await new Runner({ workflowName: "Both on", groupId: "conv-7" }).run(agentWith(model), "Weather in Paris?");
    assert.deepEqual(
      tracker.events.map((event) => event.feature),
      ["instrumented", "instrumented"],
    );
    for (const event of tracker.events) {
      checkEvent(event);
      assert.equal(event.runName, "Both on");
      assert.equal(event.sessionId, "conv-7");
      assert.match(event.traceId, /^[0-9a-f]{32}$/);
    }
    // Outside a run, the same client's event has no run identity.
    await instrumented.responses.create({ model: "gpt-5-mini", input: "Hello" });
    assert.equal(tracker.events.length, 3);
    assert.deepEqual(identityOf(tracker.events[2]), {});
  });

  test("with the client instrumented too, a failed call is tracked once (the client's event)", async () => {
    const instrumented = instrument(client(), { tracker, feature: "instrumented" });
    const model = new OpenAIResponsesModel(instrumented, "gpt-5-mini-fail");
    await assert.rejects(new Runner({ workflowName: "Failing twice?" }).run(agentWith(model), "Weather?"));
    await new Promise((resolve) => setTimeout(resolve, 20)); // the processor's onSpanEnd is not awaited by the run
    assert.equal(tracker.events.length, 1);
    const [event] = tracker.events;
    checkEvent(event);
    assert.equal(event.feature, "instrumented");
    assert.equal(event.model, "gpt-5-mini-fail"); // the client knows the model it asked for
    assert.equal(event.status, "error");
    assert.equal(event.runName, "Failing twice?");
  });

  test("identity mapping keeps only what the contract allows", () => {
    assert.deepEqual(agentsIdentity(`trace_${"a".repeat(32)}`, "conv 42/x", `span_${"b".repeat(24)}`, "  Desk  "), {
      traceId: "a".repeat(32),
      parentId: "b".repeat(24),
      runName: "Desk",
    });
    assert.deepEqual(agentsIdentity(undefined, null, undefined, "   "), {});
    assert.throws(() => new CosttrackTracingProcessor({ tracker: {} }), /tracker must be a costtrack Tracker/);
  });
});
