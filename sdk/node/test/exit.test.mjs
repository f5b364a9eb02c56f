// The SDK never keeps a process alive on its own: a script that calls track() and never calls
// shutdown() still exits by itself (run as a child process against a local server).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";

import { closedPort, startServer } from "./helpers.mjs";

const entry = new URL("../dist/esm/index.js", import.meta.url).href;

function runChild(body, timeoutMs = 15_000) {
  const source = `import { Tracker } from ${JSON.stringify(entry)};\n${body}`;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, ["--input-type=module", "-e", source], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    const killer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`child still running after ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

let ok;
let hung;
before(async () => {
  ok = await startServer();
  hung = await startServer(() => "hang");
});
after(async () => {
  await ok.close();
  await hung.close();
});

test("exits by itself after track() without shutdown(), having sent the event", async () => {
  const before = ok.requests.length;
  const result = await runChild(`
    const tracker = new Tracker({ apiKey: "ct_k", baseUrl: ${JSON.stringify(ok.url)} });
    tracker.track({ provider: "openai", model: "gpt-5", promptTokens: 1 });
    console.log("tracked");
  `);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.trim(), "tracked");
  assert.equal(ok.requests.length - before, 1);
  assert.ok(result.ms < 10_000, `took ${result.ms} ms`);
});

test("a hung server holds the process only for the attempts already under way, not the backlog", async () => {
  // Four requests of one event in flight, then 2,000 events queued behind them: 20 batches, at 4
  // in flight 5 more rounds of timeouts. Queued events do not start while others wait to retry,
  // so the process lives at most (1 + maxRetries) request timeouts.
  const result = await runChild(`
    const tracker = new Tracker({ apiKey: "ct_k", baseUrl: ${JSON.stringify(hung.url)}, timeoutMs: 500, maxRetries: 1, onWarning() {} });
    for (let i = 0; i < 4; i++) {
      tracker.track({ provider: "openai", model: "gpt-5" });
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (let i = 0; i < 2000; i++) tracker.track({ provider: "openai", model: "gpt-5" });
  `);
  assert.equal(result.code, 0, result.stderr);
  // Waiting for the whole backlog would take 5 rounds of 1 s; under 4.5 s proves it did not.
  assert.ok(result.ms < 4500, `took ${result.ms} ms`);
});

test("an unreachable server does not keep the process alive", async () => {
  const port = await closedPort();
  const result = await runChild(`
    const tracker = new Tracker({ apiKey: "ct_k", baseUrl: "http://127.0.0.1:${port}", maxRetries: 5 });
    tracker.track({ provider: "openai", model: "gpt-5" });
  `);
  assert.equal(result.code, 0, result.stderr);
  // Six attempts with backoff would take several seconds; the process must not wait for them.
  assert.ok(result.ms < 6000, `took ${result.ms} ms`);
});

test("awaiting shutdown() at top level always settles, even against a hung server", async () => {
  const result = await runChild(`
    const tracker = new Tracker({ apiKey: "ct_k", baseUrl: ${JSON.stringify(hung.url)}, onWarning: (w) => console.log(w.code, w.count) });
    tracker.track({ provider: "openai", model: "gpt-5" });
    console.log(await tracker.shutdown(500));
  `);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.trim(), "after_shutdown 1\nfalse");
});

test("enabled: false leaves nothing behind", async () => {
  const result = await runChild(`
    const tracker = new Tracker({ enabled: false });
    tracker.track({ provider: "openai", model: "gpt-5" });
    console.log(process.getActiveResourcesInfo().filter((r) => r === "Timeout" || r === "Immediate").join(","));
  `);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.trim(), "");
});
