// src/usage-conventions.ts is generated from spec/usage-conventions.json: it must say what the
// spec says (node scripts/generate-conventions.mjs writes it again).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { MODULE, SPEC, render } from "../scripts/generate-conventions.mjs";
import { CONVENTIONS, ROUTES } from "../dist/esm/usage-conventions.js";

test("the Node SDK's table is the one generated from spec/usage-conventions.json", () => {
  const spec = JSON.parse(readFileSync(SPEC, "utf8"));
  assert.equal(readFileSync(MODULE, "utf8"), render(spec), "run: node sdk/node/scripts/generate-conventions.mjs");
  for (const route of spec.routes.filter((r) => r.sdk !== "python")) {
    assert.deepEqual(ROUTES[`${route.client} ${route.method}`], [route.provider, route.convention]);
    assert.ok(CONVENTIONS[route.convention], `${route.convention} has counting flags`);
  }
});

test("the contract's flags: Anthropic and Bedrock keep the cache apart from the prompt, Gemini the reasoning apart", () => {
  assert.deepEqual(CONVENTIONS.openai, [true, true]);
  assert.deepEqual(CONVENTIONS.anthropic, [false, true]);
  assert.deepEqual(CONVENTIONS.bedrock, [false, true]);
  assert.deepEqual(CONVENTIONS.google, [true, false]);
});
