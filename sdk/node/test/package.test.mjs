// The package as published: ESM and CommonJS entry points, the public surface, typings, and no
// runtime dependencies.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

import * as esm from "costtrack";

const root = new URL("../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
const PUBLIC = [
  "BudgetExceededError",
  "ConfigurationError",
  "EventValidationError",
  "Tracker",
  "VERSION",
  "WebhookVerificationError",
  "currentAttributes",
  "fromAnthropic",
  "fromBedrockConverse",
  "fromGemini",
  "fromOpenAI",
  "fromVercelAI",
  "instrument",
  "isInstrumented",
  "uninstrument",
  "verifyWebhook",
  "withAttributes",
  "withFlush",
  "withReservation",
];

test("ESM and CommonJS expose the same small surface", () => {
  const cjs = createRequire(import.meta.url)("costtrack");
  assert.deepEqual(Object.keys(esm).sort(), PUBLIC);
  assert.deepEqual(Object.keys(cjs).filter((k) => k !== "__esModule").sort(), PUBLIC);
  const tracker = new cjs.Tracker({ enabled: false });
  tracker.track({ provider: "openai", model: "gpt-5" });
  assert.deepEqual(tracker.stats(), { queued: 0, sent: 0, retried: 0, dropped: 0, failed: 0 });
  assert.ok(new cjs.EventValidationError([{ field: "model", message: "model is required" }]) instanceof Error);
});

// Every name a consumer can import, values and types: a split of the modules behind the entry
// point must not drop (or add) one. The TypeScript compiler lists what each typings file exports.
const PUBLIC_TYPES = [
  "Attributes",
  "CallStatus",
  "FieldError",
  "HelperOptions",
  "InstrumentOptions",
  "OnUnavailable",
  "Reservation",
  "ReservationBudget",
  "ReserveEstimate",
  "ReserveOptions",
  "Reserver",
  "Run",
  "RunOptions",
  "RunStep",
  "TrackOptions",
  "TrackerLike",
  "TrackerOptions",
  "TrackerStats",
  "TrackerWarning",
  "VerifyWebhookOptions",
  "WebhookHeaders",
  "WithFlushOptions",
];

test("the export map and every exported name, values and types, are pinned", () => {
  assert.deepEqual(pkg.exports, {
    ".": {
      import: { types: "./dist/esm/index.d.ts", default: "./dist/esm/index.js" },
      require: { types: "./dist/cjs/index.d.ts", default: "./dist/cjs/index.js" },
    },
    ...Object.fromEntries(
      ["ai-sdk", "langchain", "openai-agents"].map((entry) => [
        `./${entry}`,
        {
          import: { types: `./dist/esm/${entry}.d.ts`, default: `./dist/esm/${entry}.js` },
          require: { types: `./dist/cjs/${entry}.d.ts`, default: `./dist/cjs/${entry}.js` },
        },
      ]),
    ),
    "./package.json": "./package.json",
  });
  const ts = createRequire(import.meta.url)("typescript");
  for (const typings of ["dist/esm/index.d.ts", "dist/cjs/index.d.ts"]) {
    const file = new URL(typings, root).pathname;
    const program = ts.createProgram([file], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext });
    const checker = program.getTypeChecker();
    const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file))).map((symbol) => symbol.name);
    assert.deepEqual(exported.sort(), [...PUBLIC, ...PUBLIC_TYPES].sort(), typings);
  }
});

// The framework integrations: entry points of their own, so the main one never loads them.
const ENTRIES = {
  "costtrack/ai-sdk": { values: ["costtrackMiddleware", "resultUsage"], types: ["CosttrackMiddleware"] },
  "costtrack/langchain": { values: ["CosttrackCallbackHandler", "fromLangChain", "langChainProvider"], types: [] },
  "costtrack/openai-agents": { values: ["CosttrackTracingProcessor", "agentsIdentity"], types: ["RunIdentity"] },
};

test("the framework entry points (ESM and CommonJS) and their typings", async () => {
  const require = createRequire(import.meta.url);
  const ts = require("typescript");
  for (const [specifier, { values, types }] of Object.entries(ENTRIES)) {
    assert.deepEqual(Object.keys(await import(specifier)).sort(), values, specifier);
    assert.deepEqual(Object.keys(require(specifier)).filter((k) => k !== "__esModule").sort(), values, specifier);
    const entry = specifier.split("/")[1];
    for (const typings of [`dist/esm/${entry}.d.ts`, `dist/cjs/${entry}.d.ts`]) {
      const file = new URL(typings, root).pathname;
      const program = ts.createProgram([file], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext });
      const checker = program.getTypeChecker();
      const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file))).map((symbol) => symbol.name);
      assert.deepEqual(exported.sort(), [...values, ...types].sort(), typings);
    }
  }
  // The main entry point does not load them.
  assert.ok(!readFileSync(new URL("dist/esm/index.js", root), "utf8").match(/ai-sdk|langchain|openai-agents/));
});

test("the version lives in package.json only", () => {
  assert.equal(esm.VERSION, pkg.version);
  assert.match(readFileSync(new URL("dist/cjs/version.js", root), "utf8"), new RegExp(`"${pkg.version.replace(/\./g, "\\.")}"`));
});

test("no runtime dependencies; Node 18+; pinned dev dependencies", () => {
  for (const field of ["dependencies", "peerDependencies", "optionalDependencies", "bundleDependencies"]) {
    assert.equal(pkg[field], undefined, field);
  }
  assert.equal(pkg.engines.node, ">=18");
  // Exact versions; an alias (another major of a package beside the current one) names one too.
  for (const [name, range] of Object.entries(pkg.devDependencies)) assert.match(range, /^(npm:(@[\w.-]+\/)?[\w.-]+@)?\d+\.\d+\.\d+$/, name);
  // Every import in the build is relative or a node: builtin.
  for (const dir of ["dist/esm", "dist/cjs"]) {
    for (const file of readdirSync(new URL(dir, root)).filter((f) => f.endsWith(".js"))) {
      const text = readFileSync(new URL(`${dir}/${file}`, root), "utf8");
      const specifiers = [
        ...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm),
        ...text.matchAll(/^import\s*["']([^"']+)["']/gm),
        ...text.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g),
      ].map((m) => m[1]);
      assert.ok(specifiers.length > 0 || !/\b(import|require)\b/.test(text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")), file);
      for (const s of specifiers) assert.ok(s.startsWith("./") || s.startsWith("node:"), `${dir}/${file} imports ${s}`);
    }
  }
});

test("the typings work for ESM and CommonJS consumers through the exports map", () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const result = spawnSync(process.execPath, [tsc, "-p", new URL("test/types/tsconfig.json", root).pathname], { encoding: "utf8" });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test("npm pack and npm publish build first, an install from source builds, and say where the source is", () => {
  // prepack: `npm pack`/`npm publish` from a clean clone ship freshly built code; prepare: an
  // install from a folder (or a git repository) builds; `--prepare` skips right after prepack.
  assert.equal(pkg.scripts.prepack, "node scripts/build.mjs");
  assert.equal(pkg.scripts.prepare, "node scripts/build.mjs --prepare");
  assert.deepEqual(pkg.repository, { type: "git", url: pkg.repository.url, directory: "sdk/node" });
  assert.match(pkg.repository.url, /^git\+https:\/\/.+\.git$/);
  assert.equal(pkg.homepage, `${pkg.repository.url.replace(/^git\+/, "").replace(/\.git$/, "")}/tree/main/sdk/node#readme`);
});

test("the tarball holds the build, the README and the CHANGELOG, and no sources", () => {
  const result = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: new URL(".", root).pathname,
    encoding: "utf8",
  });
  assert.equal(result.status, 0, result.stderr);
  const [packed] = JSON.parse(result.stdout);
  const files = packed.files.map((file) => file.path);
  for (const path of ["package.json", "README.md", "CHANGELOG.md", "dist/esm/index.js", "dist/cjs/index.js", "dist/cjs/index.d.ts", "dist/cjs/package.json"]) {
    assert.ok(files.includes(path), path);
  }
  assert.deepEqual(files.filter((path) => !/^(dist\/|package\.json$|README\.md$|CHANGELOG\.md$)/.test(path)), []);
  assert.equal(packed.name, pkg.name);
  assert.equal(packed.version, pkg.version);
});
