// Test support: a canned costtrack service on 127.0.0.1 that answers reservations exactly as
// CONTRACT §10 says. One enforced budget (money in units of 1e-10, as BigInt); reserve holds the
// estimate (an amount, or tokens at $1/M input and $4/M output), refuses with 429
// BUDGET_EXCEEDED once spend + held would pass the budget; DELETE releases (204, again 404); an
// event with `reservation_id` settles it (the real cost is spent), a second settle warns
// `reservation_settled`, an unknown or expired id warns `reservation_unknown`. Time is `clock.now`,
// which a test can move forward to expire holds.
import { startServer, trackerFixtures } from "./helpers.mjs";

const SCALE = 10n ** 10n;

export function toUnits(decimal) {
  const [whole, fraction = ""] = decimal.split(".");
  return BigInt(whole) * SCALE + BigInt((fraction + "0000000000").slice(0, 10));
}

export function toDecimal(units) {
  const whole = units / SCALE;
  const fraction = (units % SCALE).toString().padStart(10, "0").replace(/0+$/, "");
  return fraction === "" ? whole.toString() : `${whole}.${fraction}`;
}

function errorBody(status, code, message, details = []) {
  return { status, body: { error: { code, message, details }, request_id: "req_1" } };
}

/**
 * `options.budget` (decimal string, default "1"), `options.eventCost` (what a settled event
 * costs, default "0.001"), `options.credits` (the customer's enforced credits: a larger estimate
 * is 429 CREDITS_EXHAUSTED). `options.before(request)` may answer first (a 503, "hang", a delay).
 */
export async function startCannedService(options = {}) {
  const clock = { now: Date.parse("2026-11-26T10:00:00.000Z") };
  const budget = { budget_id: "bud_cus", name: "each customer", amount: toUnits(options.budget ?? "1"), spent: 0n, held: 0n };
  const reservations = new Map(); // id -> { held, expiresAt, state: "open" | "settled" | "released" }
  const byKey = new Map(); // Idempotency-Key -> the stored answer
  let next = 1;
  const eventCost = toUnits(options.eventCost ?? "0.001");

  const expire = () => {
    for (const r of reservations.values()) {
      if (r.state === "open" && r.expiresAt <= clock.now) {
        r.state = "expired";
        budget.held -= r.held;
      }
    }
  };
  const budgetView = () => ({
    budget_id: budget.budget_id,
    name: budget.name,
    amount: toDecimal(budget.amount),
    spent: toDecimal(budget.spent),
    held: toDecimal(budget.held),
    remaining: toDecimal(budget.amount - budget.spent - budget.held),
  });

  function reserve(request) {
    const key = request.headers["idempotency-key"];
    if (key !== undefined && byKey.has(key)) return byKey.get(key);
    const body = request.json;
    const estimate = body?.estimate ?? {};
    const held =
      typeof estimate.amount === "string"
        ? toUnits(estimate.amount)
        : (BigInt(estimate.prompt_tokens) * SCALE) / 1_000_000n + (BigInt(estimate.max_output_tokens) * 4n * SCALE) / 1_000_000n;
    expire();
    let answer;
    if (options.credits !== undefined && held > toUnits(options.credits)) {
      answer = errorBody(429, "CREDITS_EXHAUSTED", "not enough credits left for this call", [
        { field: "customer_id", remaining: options.credits, message: "not enough credits" },
      ]);
    } else if (budget.spent + budget.held + held > budget.amount) {
      answer = errorBody(429, "BUDGET_EXCEEDED", "budget bud_cus refused the reservation", [
        { budget_id: budget.budget_id, instance: body.customer_id, remaining: toDecimal(budget.amount - budget.spent - budget.held) },
      ]);
    } else {
      const id = `rsv_${next++}`;
      const hold = body.hold !== false;
      const expiresAt = clock.now + (body.ttl_seconds ?? 600) * 1000;
      if (hold) {
        reservations.set(id, { held, expiresAt, state: "open" });
        budget.held += held;
      }
      answer = {
        status: 200,
        body: {
          reservation_id: id,
          allowed: true,
          held: hold ? toDecimal(held) : "0",
          currency: "USD",
          expires_at: new Date(expiresAt).toISOString(),
          budgets: [{ ...budgetView(), instance: body.customer_id }],
        },
      };
    }
    if (key !== undefined) byKey.set(key, answer);
    return answer;
  }

  function settle(event) {
    const warnings = [];
    const id = event.reservation_id;
    if (typeof id === "string") {
      expire();
      const r = reservations.get(id);
      if (r === undefined || r.state === "expired" || r.state === "released") {
        warnings.push({ code: "reservation_unknown", message: `reservation ${id} is unknown or expired` });
      } else if (r.state === "settled") {
        warnings.push({ code: "reservation_settled", message: `reservation ${id} was settled already` });
      } else {
        r.state = "settled";
        budget.held -= r.held;
      }
    }
    budget.spent += eventCost;
    return { status: 200, body: { event_id: "evt_1", replayed: false, cost: toDecimal(eventCost), currency: "USD", warnings } };
  }

  const service = await startServer((request) => {
    const early = options.before?.(request);
    if (early !== undefined) return early;
    if (request.method === "POST" && request.url === "/v1/reservations") return reserve(request);
    const release = request.url.match(/^\/v1\/reservations\/([^/]+)$/);
    if (request.method === "DELETE" && release) {
      expire();
      const r = reservations.get(release[1]);
      if (r === undefined || r.state !== "open") return errorBody(404, "NOT_FOUND", "no open reservation");
      r.state = "released";
      budget.held -= r.held;
      return { status: 204 };
    }
    if (request.method === "POST" && request.url === "/v1/events") {
      return { status: 200, body: { results: request.json.batch.map((item) => ({ ...settle(item.event).body, status: 200 })) } };
    }
    return errorBody(404, "NOT_FOUND", "no such route");
  });
  return { ...service, clock, budget, reservations, budgetView };
}

/** The requests of one kind: `"reserve"`, `"release"` or `"events"`. */
export function requestsOf(requests, kind) {
  if (kind === "reserve") return requests.filter((r) => r.method === "POST" && r.url === "/v1/reservations");
  if (kind === "release") return requests.filter((r) => r.method === "DELETE");
  return requests.filter((r) => r.url === "/v1/events");
}

/**
 * For a test file: `cleanup` (functions run after each test, last first) and
 * `setup(serviceOptions, trackerOptions)`, which starts a canned service and a tracker sending to
 * it, both closed after the test.
 */
export function serviceFixtures() {
  const { cleanup, setup } = trackerFixtures(startCannedService);
  return {
    cleanup,
    async setup(serviceOptions = {}, trackerOptions = {}) {
      const { server, ...rest } = await setup(serviceOptions, trackerOptions);
      return { service: server, ...rest };
    },
  };
}
