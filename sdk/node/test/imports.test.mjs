// No import circles in the SDK's sources: no module imports one that (directly or not) imports
// it back. Type-only imports count too: they tie the two modules together all the same.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

const SRC = new URL("../src/", import.meta.url);

// `import … from "./x.js"`, `export … from "./x.js"`, `import "./x.js"` and `import("./x.js")`.
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']\.\/([\w.-]+)\.js["']/g;

/** Each module's local imports, by file stem. */
function importGraph(sources) {
  const graph = new Map();
  for (const [name, text] of sources) {
    const targets = new Set([...text.matchAll(RELATIVE_IMPORT)].map((match) => match[1]));
    graph.set(name, targets);
  }
  return graph;
}

/** The modules on a circle, one list per circle found from each module (empty when none). */
function cycles(graph) {
  const found = [];
  for (const start of [...graph.keys()].sort()) {
    const walk = (path) => {
      for (const target of [...(graph.get(path.at(-1)) ?? [])].sort()) {
        if (target === start) return [...path, target];
        if (!path.includes(target)) {
          const circle = walk([...path, target]);
          if (circle) return circle;
        }
      }
      return undefined;
    };
    const circle = walk([start]);
    if (circle) found.push(circle);
  }
  return found;
}

function sdkSources() {
  const files = readdirSync(SRC).filter((file) => file.endsWith(".ts"));
  return new Map(files.map((file) => [file.slice(0, -3), readFileSync(new URL(file, SRC), "utf8")]));
}

test("the SDK's modules import one another without a circle", () => {
  const graph = importGraph(sdkSources());
  assert.ok(graph.get("tracker").has("delivery") && graph.get("index").has("tracker")); // the walk found imports
  for (const targets of graph.values()) for (const target of targets) assert.ok(graph.has(target), target);
  assert.deepEqual(cycles(graph), []);
});

test("the walk finds a circle, whatever the import's form", () => {
  const graph = importGraph(
    new Map([
      ["a", 'import { b } from "./b.js";'],
      ["b", 'import type { C } from "./c.js";\nexport { x } from "./d.js";'],
      ["c", 'const a = await import("./a.js");'],
      ["d", 'import "node:fs";'],
    ]),
  );
  assert.deepEqual(graph.get("b"), new Set(["c", "d"]));
  assert.deepEqual(cycles(graph), [["a", "b", "c", "a"], ["b", "c", "a", "b"], ["c", "a", "b", "c"]]);
});
