// Writes src/usage-conventions.ts from spec/usage-conventions.json (the SDK reads no data file at
// run time). test/conventions.test.mjs fails when the two differ.
//
//   node sdk/node/scripts/generate-conventions.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const SPEC = join(root, "..", "..", "spec", "usage-conventions.json");
export const MODULE = join(root, "src", "usage-conventions.ts");

/** The module's text for `spec` (the parsed JSON). */
export function render(spec) {
  const quote = JSON.stringify;
  const lines = [
    "// Generated from spec/usage-conventions.json by scripts/generate-conventions.mjs; do not edit.",
    "// Whose counting convention each route's usage follows (docs/api-rules.md#cost).",
    "",
    "/** convention → [prompt_includes_cached, completion_includes_reasoning] */",
    "export const CONVENTIONS: Readonly<Record<string, readonly [boolean, boolean]>> = {",
  ];
  for (const name of Object.keys(spec.conventions).sort()) {
    const flags = spec.conventions[name];
    lines.push(`  ${quote(name)}: [${flags.prompt_includes_cached}, ${flags.completion_includes_reasoning}],`);
  }
  lines.push("};", "", "/** `client method` → [provider, convention]: the Node SDK's routes */");
  lines.push("export const ROUTES: Readonly<Record<string, readonly [string, string]>> = {");
  for (const route of spec.routes) {
    if (route.sdk === "node" || route.sdk === "both") {
      lines.push(`  ${quote(`${route.client} ${route.method}`)}: [${quote(route.provider)}, ${quote(route.convention)}],`);
    }
  }
  lines.push("};", "");
  return lines.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(MODULE, render(JSON.parse(readFileSync(SPEC, "utf8"))));
}
