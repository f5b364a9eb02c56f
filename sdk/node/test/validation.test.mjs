// The shared validation vectors (spec/validation-vectors.json) through the validator and through
// track(), plus the Node-only cases (types JSON cannot express).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import vm from "node:vm";

import { EventValidationError, Tracker } from "costtrack";
import {
  METADATA_MAX_DEPTH,
  PRICING_CONTEXT_NAMES,
  PRICING_COUNT_PARENTS,
  WIRE_NAMES,
  checkEvent,
  suggestField,
  trim,
} from "../dist/esm/validation.js";
import { collector, sentEvents, startServer } from "./helpers.mjs";

const vectors = JSON.parse(readFileSync(new URL("../../../spec/validation-vectors.json", import.meta.url), "utf8"));
const cases = vectors.cases.filter((c) => !c.only || c.only.includes("node"));
const NODE_NAMES = new Map([...WIRE_NAMES].map(([node, wire]) => [wire, node]));
const TRIMMED = new Set(["provider", "model", "feature", "environment", "run_name"]);

/** The vector's wire-named event with known fields renamed to Node casing. */
function toNode(event) {
  if (typeof event !== "object" || event === null || Array.isArray(event)) return event;
  return Object.fromEntries(Object.entries(event).map(([k, v]) => [NODE_NAMES.get(k) ?? k, v]));
}

const toWire = (field) => WIRE_NAMES.get(field) ?? field;

/** Independent statement of what must go on the wire for a valid vector event. */
function expectedBody(event) {
  const out = {};
  for (const [k, v] of Object.entries(event)) {
    if (!NODE_NAMES.has(k) || v === null) continue;
    out[k] = TRIMMED.has(k) ? v.replace(/^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g, "") : v;
  }
  if (out.environment === undefined || out.environment === "") out.environment = "production";
  return out;
}

function ignoredNames(warnings) {
  return warnings.filter((w) => w.code === "ignored_field").map((w) => JSON.parse(w.message.match(/^("(?:[^"\\]|\\.)*")/)[1]));
}

test("each event field's Node name is its wire name in camelCase, and the names are one-to-one", () => {
  // TrackOptions and the validator's table are held together by the compiler; this holds the
  // table's two spellings of each name to each other.
  const camel = (wire) => wire.replace(/_([a-z])/g, (_, letter) => letter.toUpperCase());
  for (const [node, wire] of WIRE_NAMES) assert.equal(node, camel(wire));
  assert.equal(new Set(WIRE_NAMES.values()).size, WIRE_NAMES.size);
  assert.equal(WIRE_NAMES.size, 20);
});

test("the vectors file has cases for node", () => {
  assert.ok(cases.length >= 60, `only ${cases.length} applicable cases`);
  assert.equal(vectors.cases.length - cases.length, vectors.cases.filter((c) => c.only && !c.only.includes("node")).length);
});

describe("validation vectors through the validator", () => {
  for (const c of cases) {
    test(c.name, () => {
      const result = checkEvent(toNode(c.event));
      if (c.valid) {
        assert.equal(result.error, undefined, result.error?.message);
        const wire = { ...result.fields };
        if (result.metadata !== undefined) wire.metadata = result.metadata;
        const expected = expectedBody(c.event);
        if (!("environment" in wire)) delete expected.environment; // the tracker fills it, not the validator
        else if (wire.environment === "" && expected.environment === "production") expected.environment = "";
        assert.deepEqual(wire, expected);
        for (const [k, v] of Object.entries(c.expect ?? {})) assert.deepEqual(wire[k], v, k);
        assert.deepEqual(result.unknownFields, c.unknown ?? []);
        // The body written while checking is, byte for byte, the cleaned fields serialized (with
        // the default environment where the event names none), then the metadata.
        const fields = { ...result.fields };
        if (fields.environment === undefined || fields.environment === "") fields.environment = "staging";
        const json = JSON.stringify(fields);
        const body = result.metadataJson === undefined ? json : json.slice(0, -1) + ',"metadata":' + result.metadataJson + "}";
        assert.equal(checkEvent(toNode(c.event), "staging").body, body);
      } else {
        assert.ok(result.error instanceof EventValidationError);
        assert.equal(result.error.code, "INVALID_PAYLOAD");
        assert.deepEqual(result.error.fields.map(toWire).sort(), [...c.fields].sort());
      }
    });
  }
});

describe("validation vectors through track()", () => {
  let server;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  for (const c of cases) {
    test(c.name, async () => {
      const seen = collector();
      const tracker = new Tracker({ apiKey: "ct_test", baseUrl: server.url, ...seen });
      const before = server.requests.length;
      assert.doesNotThrow(() => tracker.track(toNode(c.event)));
      assert.equal(await tracker.shutdown(5000), true);
      const sent = sentEvents(server.requests.slice(before));
      assert.deepEqual(ignoredNames(seen.warnings), c.unknown ?? []);
      if (c.valid) {
        assert.deepEqual(seen.errors, []);
        assert.equal(sent.length, 1);
        assert.deepEqual(sent[0].event, expectedBody(c.event));
        for (const [k, v] of Object.entries(c.expect ?? {})) assert.deepEqual(sent[0].event[k], v, k);
      } else {
        assert.equal(sent.length, 0);
        assert.equal(seen.errors.length, 1);
        const [error] = seen.errors;
        assert.ok(error instanceof EventValidationError);
        assert.deepEqual(error.details.map((d) => toWire(d.field)).sort(), [...c.fields].sort());
        for (const d of error.details) assert.ok(error.message.includes(d.field), `${error.message} names ${d.field}`);
      }
    });
  }
});

describe("Node-only validation rules", () => {
  const base = { provider: "openai", model: "gpt-5" };
  const fieldsOf = (event) => checkEvent(event).error?.fields ?? [];

  test("integers: Number.isSafeInteger and >= 0, nothing else", () => {
    for (const bad of [1n, NaN, Infinity, -Infinity, 1.5, "5", true, false, {}, [], Number.MAX_SAFE_INTEGER + 1, -1]) {
      assert.deepEqual(fieldsOf({ ...base, promptTokens: bad }), ["promptTokens"], String(bad));
    }
    assert.deepEqual(checkEvent({ ...base, latencyMs: -0 }).fields.latency_ms, 0);
    assert.ok(Object.is(checkEvent({ ...base, latencyMs: -0 }).fields.latency_ms, 0));
    assert.deepEqual(fieldsOf({ ...base, totalTokens: Number.MAX_SAFE_INTEGER }), []);
  });

  test("undefined means absent, like null", () => {
    const result = checkEvent({ ...base, feature: undefined, promptTokens: undefined, metadata: undefined });
    assert.equal(result.error, undefined);
    assert.deepEqual(result.fields, { provider: "openai", model: "gpt-5" });
  });

  test("trimming removes ASCII whitespace only", () => {
    assert.equal(trim(" \t\n\r\f\va\v\f\r\n\t "), "a");
    for (const unicodeSpace of ["\u00a0", "\u2028", "\u3000", "\ufeff", "\u1680", "\u2003"]) {
      assert.equal(trim(`${unicodeSpace}x${unicodeSpace}`), `${unicodeSpace}x${unicodeSpace}`);
      // A Unicode space alone is not empty, unlike with String.prototype.trim().
      assert.deepEqual(fieldsOf({ provider: unicodeSpace, model: "m" }), []);
    }
    assert.deepEqual(fieldsOf({ provider: "\v\f", model: "m" }), ["provider"]);
  });

  test("lengths are code points after trimming", () => {
    assert.deepEqual(fieldsOf({ ...base, provider: "p".repeat(64) + "   " }), []);
    assert.deepEqual(fieldsOf({ ...base, provider: "😀".repeat(64) }), []);
    assert.deepEqual(fieldsOf({ ...base, provider: "😀".repeat(65) }), ["provider"]);
    // customerId is not trimmed, so its spaces count.
    assert.deepEqual(fieldsOf({ ...base, customerId: "c".repeat(256) + " " }), ["customerId"]);
    assert.deepEqual(fieldsOf({ ...base, metadata: { feature: " " + "f".repeat(200) + " " } }), []);
  });

  test("metadata must be a plain object that JSON.stringify serializes", () => {
    const circular = {};
    circular.self = circular;
    class Meta {
      constructor() {
        this.a = 1;
      }
    }
    const bad = [new Map([["a", 1]]), new Date(0), new Meta(), circular, { n: 1n }, { toJSON: () => "text" }, [1], () => 1, "x", 1, true];
    for (const metadata of bad) assert.deepEqual(fieldsOf({ ...base, metadata }), ["metadata"], String(metadata));
    const good = [Object.assign(Object.create(null), { a: 1 }), vm.runInNewContext("({ a: [1, 'b'] })"), { skipped: undefined }];
    for (const metadata of good) assert.deepEqual(fieldsOf({ ...base, metadata }), [], JSON.stringify(metadata));
  });

  test("metadata with a lone surrogate is refused (the service cannot encode it); escaped text is not", () => {
    assert.deepEqual(fieldsOf({ ...base, metadata: { s: "a\ud800b" } }), ["metadata"]);
    assert.deepEqual(fieldsOf({ ...base, metadata: { s: "\udc00" } }), ["metadata"]);
    assert.deepEqual(fieldsOf({ ...base, metadata: { s: "\\ud800 is text" } }), []);
    assert.deepEqual(fieldsOf({ ...base, metadata: { s: "\\\\\ud800" } }), ["metadata"]);
    assert.deepEqual(fieldsOf({ ...base, metadata: { s: "😀" } }), []);
  });

  test("strings with a lone surrogate are refused, like the Python validator does", () => {
    for (const bad of ["\ud800", "a\udc00", "x\ud83d", "\ude00\ud83d"]) {
      assert.deepEqual(fieldsOf({ provider: bad, model: "m", customerName: bad }), ["provider", "customerName"], JSON.stringify(bad));
    }
    assert.deepEqual(fieldsOf({ provider: "😀", model: "m\u00e9", customerName: "ok😀ok" }), []);
    assert.match(checkEvent({ provider: "\ud800", model: "m" }).error.message, /provider must be valid Unicode text/);
  });

  test("an event that cannot be read is a body error, never a throw", () => {
    const throwing = Object.defineProperty({ provider: "p" }, "model", {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    });
    const proxy = new Proxy({}, { ownKeys() { throw new Error("nope"); } });
    for (const event of [throwing, proxy, undefined, null, "x", 1, [], () => 1, Symbol("s")]) {
      assert.deepEqual(fieldsOf(event), ["body"]);
    }
  });

  test("every offending field is reported at once, in Node names", () => {
    const error = checkEvent({ promptTokens: -1, cachedInputTokens: 1.5, customerId: 3, status: "done" }).error;
    assert.deepEqual(error.fields, ["promptTokens", "cachedInputTokens", "customerId", "status", "provider", "model"]);
    assert.match(error.message, /^Invalid event: promptTokens must be non-negative \(got -1\); cachedInputTokens must be an integer;/);
  });

  test("a given but invalid required field is not also 'required'", () => {
    assert.deepEqual(checkEvent({ provider: 5, model: "m" }).error.details, [{ field: "provider", message: "provider must be a string" }]);
  });

  test("unknown names are listed; snake_case and other spellings get a camelCase suggestion", () => {
    const result = checkEvent({ ...base, prompt_tokens: 5, PromptTokens: 1, promptTokens: 2, foo: 1, __proto__: 9, constructor: 1 });
    assert.deepEqual(result.fields.prompt_tokens, 2);
    assert.deepEqual(result.unknownFields, ["prompt_tokens", "PromptTokens", "foo", "constructor"]);
    assert.equal(suggestField("prompt_tokens"), "promptTokens");
    assert.equal(suggestField("customer_id"), "customerId");
    assert.equal(suggestField("latency-ms"), "latencyMs");
    assert.equal(suggestField("foo"), undefined);
    assert.equal(suggestField("promptTokens"), undefined);
  });
});

describe("reserved metadata names (docs/api-rules.md#cost)", () => {
  const base = { provider: "openai", model: "gpt-5" };
  const details = (event) => checkEvent(event).error?.details ?? [];
  const fieldsOf = (event) => details(event).map((d) => d.field);

  test("the names equal spec/pricing-names.json (generated from genai-prices), so they cannot drift", () => {
    const spec = JSON.parse(readFileSync(new URL("../../../spec/pricing-names.json", import.meta.url), "utf8"));
    assert.deepEqual([...PRICING_CONTEXT_NAMES], spec.context);
    assert.deepEqual(Object.fromEntries([...PRICING_COUNT_PARENTS].map(([k, v]) => [k, [...v]])), spec.counts);
    assert.deepEqual([...PRICING_COUNT_PARENTS.keys()], Object.keys(spec.counts));
    assert.equal(METADATA_MAX_DEPTH, 32);
    // Every parent is an event count (wire name) or another reserved count.
    const eventCounts = new Set(["prompt_tokens", "completion_tokens", "cached_input_tokens", "cache_write_tokens", "reasoning_tokens"]);
    for (const parents of PRICING_COUNT_PARENTS.values()) {
      for (const parent of parents) assert.ok(eventCounts.has(parent) || PRICING_COUNT_PARENTS.has(parent), parent);
    }
    assert.ok(Object.isFrozen(PRICING_CONTEXT_NAMES) && Object.isFrozen(PRICING_COUNT_PARENTS.get("cache_write_1h_tokens")));
  });

  test("messages name the count, its parent (in Node casing) and both values", () => {
    assert.deepEqual(details({ ...base, cacheWriteTokens: 100, metadata: { cache_write_1h_tokens: 101 } }), [
      { field: "metadata.cache_write_1h_tokens", message: "metadata.cache_write_1h_tokens (101) must not exceed cacheWriteTokens (100)" },
    ]);
    assert.deepEqual(details({ ...base, metadata: { input_audio_tokens: 1 } }), [
      { field: "metadata.input_audio_tokens", message: "metadata.input_audio_tokens (1) must not exceed promptTokens (absent, so 0)" },
    ]);
    assert.deepEqual(details({ ...base, promptTokens: 9, cachedInputTokens: 9, metadata: { input_audio_tokens: 1, cache_audio_read_tokens: 2 } }), [
      {
        field: "metadata.cache_audio_read_tokens",
        message: "metadata.cache_audio_read_tokens (2) must not exceed metadata.input_audio_tokens (1)",
      },
    ]);
    assert.deepEqual(details({ ...base, metadata: { service_tier: null, speed: "f".repeat(65), web_searches: "2" } }), [
      { field: "metadata.service_tier", message: "metadata.service_tier must be a string (got null)" },
      { field: "metadata.speed", message: "metadata.speed must be at most 64 characters (got 65)" },
      { field: "metadata.web_searches", message: "metadata.web_searches must be an integer" },
    ]);
  });

  test("counts follow the token-field rules: no boolean, fraction, string, NaN or unsafe integer", () => {
    // A bigint is not JSON at all: the whole metadata is refused.
    assert.deepEqual(fieldsOf({ ...base, metadata: { requests: 1n } }), ["metadata"]);
    for (const bad of [true, 1.5, "1", NaN, Infinity, -1, Number.MAX_SAFE_INTEGER + 1, null, {}, [1]]) {
      assert.deepEqual(fieldsOf({ ...base, metadata: { requests: bad } }), ["metadata.requests"], String(bad));
    }
    assert.deepEqual(fieldsOf({ ...base, metadata: { requests: -0, code_executions: Number.MAX_SAFE_INTEGER } }), []);
  });

  test("context values are strings of at most 64 code points, empty allowed, not trimmed", () => {
    assert.deepEqual(fieldsOf({ ...base, metadata: { route: "😀".repeat(64), search_type: "", processing: " batch " } }), []);
    assert.deepEqual(fieldsOf({ ...base, metadata: { route: "😀".repeat(65) } }), ["metadata.route"]);
    for (const bad of [1, true, ["flex"], { tier: "flex" }, new String("flex")]) {
      assert.deepEqual(fieldsOf({ ...base, metadata: { service_tier: bad } }), ["metadata.service_tier"], String(bad));
    }
  });

  test("parents: only checked when both values are valid; every reserved error is reported with the others", () => {
    // The event's own field is invalid: its error alone, no parent error on top.
    assert.deepEqual(fieldsOf({ ...base, cacheWriteTokens: -1, metadata: { cache_write_1h_tokens: 5 } }), ["cacheWriteTokens"]);
    assert.deepEqual(fieldsOf({ ...base, cacheWriteTokens: null, metadata: { cache_write_1h_tokens: 5 } }), ["metadata.cache_write_1h_tokens"]);
    // A reserved parent that is invalid: no second error for the child.
    assert.deepEqual(fieldsOf({ ...base, promptTokens: 10, cachedInputTokens: 5, metadata: { input_audio_tokens: "x", cache_audio_read_tokens: 5 } }), [
      "metadata.input_audio_tokens",
    ]);
    // Metadata before the counts it depends on (key order does not matter).
    assert.deepEqual(fieldsOf({ metadata: { output_audio_tokens: 5 }, completionTokens: 5, ...base }), []);
    assert.deepEqual(fieldsOf({ metadata: { output_audio_tokens: 5, feature: "f".repeat(201) }, completionTokens: 4, ...base }), [
      "metadata.feature",
      "metadata.output_audio_tokens",
    ]);
    // Reasoning parents, and counts with no parents at all.
    assert.deepEqual(fieldsOf({ ...base, reasoningTokens: 3, metadata: { output_text_tokens: 0, output_text_reasoning_tokens: 1 } }), [
      "metadata.output_text_reasoning_tokens",
    ]);
    assert.deepEqual(fieldsOf({ ...base, metadata: { web_searches: 7, input_pixels: 1e6, audio_seconds: 3, input_audio_seconds: 3 } }), []);
  });

  test("names are exact and snake_case: other spellings are free-form", () => {
    assert.deepEqual(fieldsOf({ ...base, metadata: { serviceTier: 5, cacheWrite1hTokens: "x", SERVICE_TIER: 1, nested: { service_tier: 2 } } }), []);
    const inherited = Object.create({ service_tier: 5 });
    assert.deepEqual(fieldsOf({ ...base, metadata: Object.assign(Object.create(null), { service_tier: "flex" }) }), []);
    assert.deepEqual(fieldsOf({ ...base, metadata: { ...inherited } }), []);
  });

  test("a toJSON() member is checked as what it sends", () => {
    assert.deepEqual(fieldsOf({ ...base, metadata: { toJSON: () => ({ service_tier: 5 }) } }), ["metadata.service_tier"]);
    assert.deepEqual(fieldsOf({ ...base, metadata: { service_tier: 5, toJSON: () => ({ service_tier: "flex" }) } }), []);
  });

  test("the valid reserved names go out unchanged, under their own names", async () => {
    const server = await startServer();
    try {
      const seen = collector();
      const tracker = new Tracker({ apiKey: "ct_test", baseUrl: server.url, ...seen });
      const metadata = { service_tier: "flex", cache_write_1h_tokens: 300, web_searches: 2, route: "/chat" };
      tracker.track({ ...base, promptTokens: 10, cacheWriteTokens: 300, metadata });
      tracker.track({ ...base, metadata: { input_audio_tokens: 1 } });
      assert.equal(await tracker.shutdown(5000), true);
      assert.equal(server.requests.length, 1);
      assert.deepEqual(sentEvents(server.requests).map((e) => e.event.metadata), [metadata]);
      assert.deepEqual(seen.errors.map((e) => e.fields), [["metadata.input_audio_tokens"]]);
      assert.deepEqual(seen.warnings, []);
    } finally {
      await server.close();
    }
  });

  describe("nesting", () => {
    // `depth` counts metadata's own level: chain(1) is {}, chain(2) is { a: {} }, ...
    const chain = (depth) => {
      let value = {};
      for (let i = 1; i < depth; i++) value = { a: value };
      return value;
    };
    const arrays = (depth) => {
      let value = [];
      for (let i = 2; i < depth; i++) value = [value];
      return { a: value };
    };

    test("at most 32 levels, objects and arrays alike, scalars not counted", () => {
      assert.deepEqual(fieldsOf({ ...base, metadata: chain(32) }), []);
      assert.deepEqual(details({ ...base, metadata: chain(33) }), [{ field: "metadata", message: "metadata must nest at most 32 levels" }]);
      assert.deepEqual(fieldsOf({ ...base, metadata: arrays(32) }), []);
      assert.deepEqual(fieldsOf({ ...base, metadata: arrays(33) }), ["metadata"]);
      assert.deepEqual(fieldsOf({ ...base, metadata: { ...chain(31), b: [1, "x", null, true] } }), []);
    });

    test("a very deep object is refused without a stack overflow", () => {
      let deep = {};
      for (let i = 0; i < 200000; i++) deep = { a: deep };
      assert.deepEqual(details({ ...base, metadata: deep }), [{ field: "metadata", message: "metadata must nest at most 32 levels" }]);
      let deepArray = [];
      for (let i = 0; i < 200000; i++) deepArray = [deepArray];
      assert.deepEqual(fieldsOf({ ...base, metadata: { a: deepArray } }), ["metadata"]);
    });

    test("cycles end the walk at once, however wide; shared (acyclic) objects are fine", () => {
      const wide = {};
      for (let i = 0; i < 20; i++) wide[`k${i}`] = wide;
      const started = Date.now();
      assert.deepEqual(details({ ...base, metadata: wide }), [{ field: "metadata", message: "metadata must be serializable as JSON (circular structure)" }]);
      assert.ok(Date.now() - started < 1000);
      const shared = { x: 1 };
      assert.deepEqual(fieldsOf({ ...base, metadata: { a: shared, b: shared, c: [shared, shared] } }), []);
    });

    test("a huge array is too large before it is walked or serialized", () => {
      const started = Date.now();
      assert.deepEqual(fieldsOf({ ...base, metadata: { a: new Array(1e8) } }), ["metadata"]);
      assert.ok(Date.now() - started < 1000);
    });

    test("a getter that throws while walking is a metadata error, not a throw", () => {
      const metadata = { a: Object.defineProperty({}, "b", { enumerable: true, get() { throw new TypeError("no"); } }) };
      assert.deepEqual(details({ ...base, metadata }), [{ field: "metadata", message: "metadata must be serializable as JSON (TypeError)" }]);
    });
  });
});
