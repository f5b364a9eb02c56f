// withReservation(): refused calls are not made, the first event tracked inside settles the hold
// (track(), provider helpers, instrumented clients), and a block that ends without one releases it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import OpenAI from "openai";

import { BudgetExceededError, fromOpenAI, instrument, withReservation } from "costtrack";
import { CHAT, startProvider } from "./canned-provider.mjs";
import { requestsOf, serviceFixtures } from "./canned-reservations.mjs";
import { sentEvents } from "./helpers.mjs";

const CALL = { provider: "openai", model: "gpt-4o-mini", customerId: "cus_1" };
const RESERVE = { ...CALL, estimate: { amount: "0.01" } };
const EVENT = { ...CALL, promptTokens: 10, completionTokens: 5 };

let provider;
before(async () => {
  provider = await startProvider();
});
after(() => provider.close());

const { setup } = serviceFixtures();

const reservationIds = (service) => sentEvents(requestsOf(service.requests, "events")).map((e) => e.event.reservation_id);

test("allowed: the first event tracked inside carries the reservation id, the next one does not; nothing is released", async () => {
  const { service, tracker, warnings } = await setup();
  const result = await withReservation(tracker, RESERVE, async (reservation) => {
    assert.equal(reservation.reservationId, "rsv_1");
    await new Promise((resolve) => setTimeout(resolve, 5));
    tracker.track(EVENT);
    tracker.track(EVENT);
    return "answer";
  });
  assert.equal(result, "answer");
  assert.equal(await tracker.flush(), true);
  assert.deepEqual(reservationIds(service), ["rsv_1", undefined]);
  assert.equal(requestsOf(service.requests, "release").length, 0);
  assert.equal(service.budget.held, 0n);
  assert.deepEqual(warnings, []);
});

test("an instrumented client's call settles the reservation it was made under", async () => {
  const { service, tracker } = await setup();
  const client = instrument(new OpenAI({ apiKey: "sk-test", baseURL: `${provider.url}/v1`, maxRetries: 0 }), { tracker, feature: "chat" });
  await withReservation(tracker, RESERVE, () => client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }));
  await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }); // outside
  assert.equal(await tracker.flush(), true);
  assert.deepEqual(reservationIds(service), ["rsv_1", undefined]);
  assert.equal(requestsOf(service.requests, "release").length, 0);
});

test("provider helpers take a reservation (its answer or its id); an explicit reservationId wins", async () => {
  const { service, tracker } = await setup();
  const reservation = await tracker.reserve(RESERVE);
  tracker.track(fromOpenAI(CHAT, { reservation, customerId: "cus_1" }));
  tracker.track(fromOpenAI(CHAT, { reservation: "rsv_9", reservationId: "rsv_8" }));
  assert.equal(await tracker.flush(), true);
  assert.deepEqual(reservationIds(service), ["rsv_1", "rsv_8"]);
});

test("refused: BudgetExceededError names the budget, the call is not made, nothing to release", async () => {
  const { service, tracker } = await setup({ budget: "0.005" });
  let called = false;
  await assert.rejects(
    withReservation(tracker, RESERVE, () => {
      called = true;
    }),
    (error) => {
      assert.ok(error instanceof BudgetExceededError);
      assert.equal(error.code, "BUDGET_EXCEEDED");
      assert.equal(error.reason, "budget");
      assert.deepEqual(error.reservation.refusedBy, [{ budgetId: "bud_cus", instance: "cus_1", remaining: "0.005" }]);
      assert.match(error.message, /bud_cus/);
      return true;
    },
  );
  assert.equal(called, false);
  assert.equal(requestsOf(service.requests, "release").length, 0);
});

test("unavailable with onUnavailable deny: BudgetExceededError with reason unavailable; with allow the call runs unreserved", async () => {
  const down = () => ({ status: 503, body: {} });
  const { tracker } = await setup({ before: down }, { maxRetries: 0, onUnavailable: "deny" });
  await assert.rejects(withReservation(tracker, RESERVE, () => 1), (error) => error instanceof BudgetExceededError && error.reason === "unavailable");
  const { service, tracker: lenient } = await setup({ before: (r) => (r.url === "/v1/reservations" ? down() : undefined) }, { maxRetries: 0 });
  assert.equal(await withReservation(lenient, RESERVE, () => lenient.track(EVENT) ?? 2), 2);
  assert.equal(await lenient.flush(), true);
  assert.deepEqual(reservationIds(service), [undefined]);
  assert.equal(requestsOf(service.requests, "release").length, 0);
});

test("a block that throws before any event releases the hold and rethrows", async () => {
  const { service, tracker } = await setup();
  const boom = new Error("provider down");
  await assert.rejects(
    withReservation(tracker, RESERVE, async () => {
      throw boom;
    }),
    (error) => error === boom,
  );
  const [release] = requestsOf(service.requests, "release");
  assert.equal(release.url, "/v1/reservations/rsv_1");
  assert.equal(release.headers.authorization, "Bearer ct_test");
  assert.equal(release.headers["idempotency-key"], undefined);
  assert.equal(service.budget.held, 0n);
});

test("a block that ends without an event, or whose event is invalid, releases the hold", async () => {
  const { service, tracker, errors } = await setup();
  await withReservation(tracker, RESERVE, () => "cached answer");
  await withReservation(tracker, RESERVE, () => tracker.track({ ...EVENT, promptTokens: -1 }));
  assert.equal(errors.length, 1);
  assert.deepEqual(
    requestsOf(service.requests, "release").map((r) => r.url),
    ["/v1/reservations/rsv_1", "/v1/reservations/rsv_2"],
  );
  assert.equal(service.budget.held, 0n);
});

test("a dry run (hold: false) never puts its id on an event", async () => {
  const { service, tracker } = await setup();
  await withReservation(tracker, { ...RESERVE, hold: false }, () => tracker.track(EVENT));
  assert.equal(await tracker.flush(), true);
  assert.deepEqual(reservationIds(service), [undefined]);
  assert.equal(requestsOf(service.requests, "release").length, 0);
});

test("concurrent reservations each settle with their own call's event", async () => {
  const { service, tracker } = await setup();
  await Promise.all(
    [30, 10, 20].map((delay, i) =>
      withReservation(tracker, RESERVE, async () => {
        await new Promise((resolve) => setTimeout(resolve, delay));
        tracker.track({ ...EVENT, feature: `f${i}` });
      }),
    ),
  );
  assert.equal(await tracker.flush(), true);
  const byFeature = Object.fromEntries(sentEvents(requestsOf(service.requests, "events")).map((e) => [e.event.feature, e.event.reservation_id]));
  assert.deepEqual(byFeature, { f0: "rsv_1", f1: "rsv_2", f2: "rsv_3" });
  assert.equal(requestsOf(service.requests, "release").length, 0);
});
