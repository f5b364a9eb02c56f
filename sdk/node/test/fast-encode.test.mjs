// track()'s one-pass encoder (src/fast-encode.ts) against the full check (checkEvent): for every
// event it accepts, the body and the ignored names are checkEvent()'s exactly, and it never
// accepts what checkEvent() refuses. Events: the shared vectors, each valid one mutated field by
// field, and many generated from a seeded generator (reproducible; the seed is in each message).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { batchItem } from "../dist/esm/batch.js";
import { encodeEvent } from "../dist/esm/fast-encode.js";
import { METADATA_MAX_DEPTH, PRICING_CONTEXT_NAMES, PRICING_COUNT_PARENTS, WIRE_NAMES, checkEvent } from "../dist/esm/validation.js";

const vectors = JSON.parse(readFileSync(new URL("../../../spec/validation-vectors.json", import.meta.url), "utf8"));
const cases = vectors.cases.filter((c) => !c.only || c.only.includes("node"));
const NODE_NAMES = new Map([...WIRE_NAMES].map(([node, wire]) => [wire, node]));
const toNode = (event) =>
  typeof event !== "object" || event === null || Array.isArray(event)
    ? event
    : Object.fromEntries(Object.entries(event).map(([k, v]) => [NODE_NAMES.get(k) ?? k, v]));

const KEY = "3b241101-e2bb-4255-8caf-4136c566a962";

/** Asserts the two paths agree on `event`; returns whether the fast path accepted it. */
function agree(event, environment, label) {
  let fast;
  assert.doesNotThrow(() => {
    fast = encodeEvent(event, environment);
  }, label);
  const full = checkEvent(event, environment);
  if (fast === undefined) return false;
  assert.equal(full.error, undefined, `${label}: the fast path accepted what checkEvent refuses (${full.error?.message})`);
  assert.equal(fast.body, full.body, label);
  assert.deepEqual([...fast.unknownFields], [...full.unknownFields], label);
  // Given the key, the same pass writes the whole batch item, as batchItem() writes it.
  const item = encodeEvent(event, environment, KEY);
  assert.equal(item?.body, batchItem(KEY, full.body), label);
  assert.deepEqual([...item.unknownFields], [...full.unknownFields], label);
  return true;
}

// A small seeded generator (mulberry32), so a failure names a reproducible case.
function generator(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (list) => list[Math.floor(next() * list.length)];
  return { next, pick };
}

const TEXTS = [
  "openai", "gpt-5", "", " ", "  padded  ", "\tx", "x\n", "a\u00a0", "\u2028", 'quo"te', "back\\slash", "ctl\u0001",
  "caf\u00e9", "emoji \ud83d\ude00", "lone \ud800", "\udc00 low", "x".repeat(64), "x".repeat(65), "x".repeat(200),
  "x".repeat(201), "\ud83d\ude00".repeat(64), "x".repeat(256), "x".repeat(257), "\\ud800 escaped", "</script>",
];
const NUMBERS = [0, -0, 1, 1200, -1, 1.5, NaN, Infinity, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, 1e21];
const OTHERS = [null, undefined, true, false, "5", 5n, {}, [], () => 1, Symbol("s"), new Date(0)];

// Most values are ones the fast path takes; `wild` ones (about one in ten) are anything at all.
const PLAIN_TEXTS = ["openai", "gpt-5", "", "caf\u00e9", 'quo"te', "emoji \ud83d\ude00", "x".repeat(64)];
const PLAIN_NUMBERS = [0, -0, 1, 1200, Number.MAX_SAFE_INTEGER];
const wild = (g) => g.next() < 0.1;

function metadataValue(g, depth) {
  const r = g.next();
  if (r < 0.35) return wild(g) ? g.pick(TEXTS) : g.pick(PLAIN_TEXTS);
  if (r < 0.6) return wild(g) ? g.pick(NUMBERS) : g.pick([...PLAIN_NUMBERS, 1.5, -3]);
  if (r < 0.7) return wild(g) ? g.pick(OTHERS) : g.pick([null, true, false, undefined]);
  if (depth > METADATA_MAX_DEPTH + 1) return 1;
  if (r < 0.85) return Array.from({ length: Math.floor(g.next() * 4) }, () => metadataValue(g, depth + 1));
  return metadataObject(g, depth + 1);
}

const RESERVED = [...PRICING_CONTEXT_NAMES, ...[...PRICING_COUNT_PARENTS.keys()].slice(0, 6), "feature"];
function metadataObject(g, depth) {
  const object = {};
  const size = Math.floor(g.next() * 5);
  for (let i = 0; i < size; i++) {
    const key = wild(g) ? g.pick([...RESERVED, ...TEXTS]) : `k${i}`;
    object[key] = metadataValue(g, depth);
  }
  return object;
}

function deep(levels) {
  let value = 1;
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { v: value };
  return value;
}

function generatedEvent(g) {
  const event = {};
  const names = [...WIRE_NAMES.keys(), "prompt_tokens", "extra", "__proto__"];
  for (const name of names) {
    if (g.next() < 0.4 && name !== "provider" && name !== "model") continue;
    const anything = wild(g);
    if (name === "metadata") {
      const m = g.next();
      event.metadata = m < 0.8 ? metadataObject(g, 1) : m < 0.9 ? { d: deep(METADATA_MAX_DEPTH - 3 + Math.floor(g.next() * 4)) } : g.pick([...OTHERS, "x"]);
    } else if (name === "status") {
      event.status = anything ? g.pick(["done", "", 1, null, "Success"]) : g.pick(["success", "error", "timeout", "cancelled"]);
    } else if (/Tokens$|Ms$/.test(name)) {
      event[name] = anything ? g.pick([...NUMBERS, ...OTHERS]) : g.pick(PLAIN_NUMBERS);
    } else if (name === "__proto__") {
      Object.defineProperty(event, "__proto__", { value: 1, enumerable: true });
    } else if (name === "provider" || name === "model") {
      event[name] = anything ? g.pick([...TEXTS, ...OTHERS]) : g.pick(["openai", "gpt-5", "caf\u00e9"]);
    } else {
      event[name] = anything ? g.pick([...TEXTS, ...OTHERS]) : g.pick(PLAIN_TEXTS);
    }
  }
  return event;
}

describe("the fast path writes what checkEvent writes, and refuses what it refuses", () => {
  test("the shared vectors, and each valid one mutated field by field", () => {
    let accepted = 0;
    const mutations = [null, undefined, "", " x ", "\ud800", 'q"', -1, 1.5, 7, 5n, {}, [], { route: 5 }, { input_audio_tokens: 1 }];
    for (const c of cases) {
      const event = toNode(c.event);
      if (agree(event, "production", c.name)) accepted++;
      if (!c.valid) continue;
      for (const name of Object.keys(event)) {
        for (const [i, value] of mutations.entries()) agree({ ...event, [name]: value }, "staging", `${c.name}, ${name} = mutation ${i}`);
      }
    }
    // The plain valid vectors take the fast path (the test would pass vacuously otherwise).
    assert.ok(accepted >= 10, `only ${accepted} vectors took the fast path`);
  });

  test("generated events (seeded)", () => {
    const seed = 20261124;
    const g = generator(seed);
    let accepted = 0;
    let valid = 0;
    const count = 5000;
    for (let i = 0; i < count; i++) {
      const event = generatedEvent(g);
      const environment = g.pick(["production", "staging", 'we"ird']);
      if (agree(event, environment, `seed ${seed}, event ${i}`)) accepted++;
      if (checkEvent(event, environment).error === undefined) valid++;
    }
    // Both paths are exercised: the fast path takes most valid events, and refuses many.
    assert.ok(accepted > valid / 2 && valid < count * 0.9, `${accepted} of ${valid} valid events (of ${count}) took the fast path`);
  });

  test("the typical event takes the fast path, non-ASCII and escaped text included", () => {
    const event = {
      provider: "openai",
      model: "gpt-5",
      feature: "chat",
      customerId: 'cus_"42"\n',
      customerName: "Zoë \ud83d\ude00",
      promptTokens: 1200,
      completionTokens: 300,
      cachedInputTokens: 1024,
      latencyMs: 840,
      environment: "",
      metadata: { route: "/v1/chat", requestId: "req_7f3a9c", tags: ["beta", "eu", null, undefined], skip: undefined, n: 1.5, nested: { ok: true } },
    };
    assert.ok(agree(event, "production", "typical"));
  });

  test("what JSON.stringify treats specially, cycles and over-deep metadata go to the full check", () => {
    const base = { provider: "openai", model: "gpt-5" };
    const cycle = { a: 1 };
    cycle.self = cycle;
    const wide = {};
    for (let i = 0; i < 30; i++) wide[`k${i}`] = wide; // a cycle that would be exponential to expand
    const shared = { x: 1 };
    let dag = shared;
    for (let i = 0; i < 40; i++) dag = { a: dag, b: dag }; // acyclic, 2^40 paths
    const metadatas = [
      { when: new Date(0) },
      { m: new Map() },
      { j: { toJSON: () => "x" } },
      { toJSON: () => ({}) },
      cycle,
      wide,
      { d: dag },
      deep(METADATA_MAX_DEPTH),
      { d: deep(METADATA_MAX_DEPTH) },
      Object.create(null),
      { big: 1n },
      { long: "x".repeat(9000) },
      { arr: new Array(5000).fill(0) },
      { input_audio_tokens: 1 },
      { feature: "x".repeat(201) },
      { feature: ` ${"x".repeat(200)} ` },
    ];
    for (const [i, metadata] of metadatas.entries()) {
      assert.equal(encodeEvent({ ...base, metadata }, "production"), undefined, `metadata ${i}`);
      agree({ ...base, metadata }, "production", `metadata ${i}`);
    }
  });

  test("events it cannot read safely are left to the full check, never thrown", () => {
    const getter = { provider: "openai", get model() { throw new Error("boom"); } };
    const proxy = new Proxy({}, { ownKeys() { throw new Error("trap"); } });
    const metadataGetter = { provider: "openai", model: "m", metadata: { get x() { throw new Error("boom"); } } };
    class Event {
      provider = "openai";
      model = "gpt-5";
    }
    for (const event of [getter, proxy, metadataGetter, new Event(), Object.create(null), [], null, "x", 1]) {
      assert.equal(encodeEvent(event, "production"), undefined);
    }
  });

  test("a name added to Object.prototype is not read as a field or an ignored name", () => {
    Object.defineProperty(Object.prototype, "feature", { value: "polluted", enumerable: true, configurable: true });
    try {
      agree({ provider: "openai", model: "gpt-5", metadata: { a: 1 } }, "production", "polluted prototype");
    } finally {
      delete Object.prototype.feature;
    }
  });
});
