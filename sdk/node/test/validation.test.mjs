// The shared validation vectors (spec/validation-vectors.json) through the validator and through
// track(), plus the Node-only cases (types JSON cannot express).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import vm from "node:vm";

import { EventValidationError, Tracker } from "costtrack";
import { WIRE_NAMES, checkEvent, suggestField, trim } from "../dist/esm/validation.js";
import { collector, startServer } from "./helpers.mjs";

const vectors = JSON.parse(readFileSync(new URL("../../../spec/validation-vectors.json", import.meta.url), "utf8"));
const cases = vectors.cases.filter((c) => !c.only || c.only.includes("node"));
const NODE_NAMES = new Map([...WIRE_NAMES].map(([node, wire]) => [wire, node]));
const TRIMMED = new Set(["provider", "model", "feature", "environment"]);

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
      const sent = server.requests.slice(before);
      assert.deepEqual(ignoredNames(seen.warnings), c.unknown ?? []);
      if (c.valid) {
        assert.deepEqual(seen.errors, []);
        assert.equal(sent.length, 1);
        assert.deepEqual(sent[0].json, expectedBody(c.event));
        for (const [k, v] of Object.entries(c.expect ?? {})) assert.deepEqual(sent[0].json[k], v, k);
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
