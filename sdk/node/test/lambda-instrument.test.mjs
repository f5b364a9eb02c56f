// An instrumented OpenAI client inside a handler wrapped by withFlush(): the calls' events (a
// plain call, a stream, a failed call) are delivered before the handler returns, as track()'s are.
import assert from "node:assert/strict";
import { test } from "node:test";

import OpenAI from "openai";

import { Tracker, instrument, withAttributes, withFlush } from "costtrack";
import { startProvider } from "./canned-provider.mjs";
import { accepted, perEvent, sentEvents, startServer } from "./helpers.mjs";

test("instrumented calls in a Lambda handler are flushed before it returns", async (t) => {
  const provider = await startProvider();
  // The sink answers 200 ms late: without the flush the events would still be in flight at return.
  const sink = await startServer((req) => ({ ...perEvent(() => ({ status: 200, body: accepted() }))(req), delayMs: 200 }));
  const tracker = new Tracker({ apiKey: "k", baseUrl: sink.url });
  t.after(async () => {
    await tracker.shutdown(100);
    await sink.close();
    await provider.close();
  });
  const client = instrument(new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/v1`, maxRetries: 0 }), { tracker, feature: "lambda" });
  const ask = [{ role: "user", content: "hi" }];
  const handler = withFlush((event) =>
    withAttributes({ customerId: event.customer }, async () => {
      const completion = await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask });
      let streamed = "";
      for await (const chunk of await client.chat.completions.create({ model: "gpt-4o-mini", messages: ask, stream: true })) {
        streamed += chunk.choices[0]?.delta?.content ?? "";
      }
      await client.chat.completions.create({ model: "gpt-4o-mini-fail", messages: ask }).catch(() => undefined);
      return { text: completion.choices[0].message.content, streamed };
    }),
  );
  const result = await handler({ customer: "cus_lambda" }, { getRemainingTimeInMillis: () => 30_000 });
  assert.deepEqual(result, { text: "Hello!", streamed: "w0 w1 w2 " });
  // Delivered by the time the handler resolved.
  assert.equal(tracker.stats().sent, 3);
  assert.equal(tracker.stats().queued, 0);
  const events = sentEvents(sink.requests).map(({ event }) => [event.model, event.status, event.customer_id, event.feature, event.prompt_tokens]);
  assert.deepEqual(events.sort(), [
    ["gpt-4o-mini-2024-07-18", "success", "cus_lambda", "lambda", 1200],
    ["gpt-4o-mini-2024-07-18", "success", "cus_lambda", "lambda", 50],
    ["gpt-4o-mini-fail", "error", "cus_lambda", "lambda", 0],
  ].sort());
});
