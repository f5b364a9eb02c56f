// verifyWebhook() against the Standard Webhooks reference library (npm standardwebhooks, a dev
// dependency only), both ways: what the library signs, verifyWebhook accepts; what verifyWebhook
// accepts is exactly what the library's verify accepts, tampering and stale timestamps refused.
// A delivery from the local stack is verified by both in tests/integration/test_budget_alerts.py.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";

import { Webhook, WebhookVerificationError as ReferenceError } from "standardwebhooks";

import { WebhookVerificationError, verifyWebhook } from "costtrack";

const secret = "whsec_" + randomBytes(32).toString("base64");
const other = "whsec_" + randomBytes(32).toString("base64");
const body = JSON.stringify({ id: "ntf_0123", type: "budget.threshold_crossed", threshold: 80, spend: "201.3" });
const nowMs = Date.now();

function signed(secrets, { id = "ntf_0123", at = nowMs, payload = body } = {}) {
  const timestamp = new Date(at);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at / 1000)),
    "webhook-signature": secrets.map((one) => new Webhook(one).sign(id, timestamp, payload)).join(" "),
  };
}

function referenceAccepts(key, payload, headers) {
  try {
    new Webhook(key).verify(payload, headers);
    return true;
  } catch (error) {
    assert.ok(error instanceof ReferenceError, String(error));
    return false;
  }
}

function oursAccepts(key, payload, headers, options) {
  try {
    verifyWebhook(payload, headers, key, options);
    return true;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    return false;
  }
}

test("a delivery the reference library signs verifies, as text, bytes or fetch Headers", () => {
  const headers = signed([secret]);
  assert.deepEqual(verifyWebhook(body, headers, secret), JSON.parse(body));
  assert.deepEqual(verifyWebhook(Buffer.from(body), headers, secret), JSON.parse(body));
  assert.deepEqual(verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret), JSON.parse(body));
  const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
  assert.deepEqual(verifyWebhook(body, upper, secret), JSON.parse(body));
});

test("both accept and refuse the same deliveries", () => {
  const good = signed([secret]);
  const cases = [
    ["as signed", body, good, true],
    ["body changed", body + " ", good, false],
    ["id changed (it is signed)", body, { ...good, "webhook-id": "ntf_other" }, false],
    ["timestamp changed", body, { ...good, "webhook-timestamp": String(Number(good["webhook-timestamp"]) + 1) }, false],
    ["another secret", body, signed([other]), false],
    ["rotation: new and old", body, signed([other, secret]), true],
    ["ten minutes old", body, signed([secret], { at: nowMs - 600_000 }), false],
    ["ten minutes ahead", body, signed([secret], { at: nowMs + 600_000 }), false],
    ["no v1 entry", body, { ...good, "webhook-signature": good["webhook-signature"].replace("v1,", "v2,") }, false],
    ["signature missing", body, { "webhook-id": good["webhook-id"], "webhook-timestamp": good["webhook-timestamp"] }, false],
  ];
  for (const [name, payload, headers, valid] of cases) {
    assert.equal(referenceAccepts(secret, payload, headers), valid, `reference: ${name}`);
    assert.equal(oursAccepts(secret, payload, headers), valid, `verifyWebhook: ${name}`);
  }
});

test("a receiver may hold several secrets; the tolerance and the clock are options", () => {
  const headers = signed([secret], { at: nowMs - 120_000 });
  assert.equal(oursAccepts([other, secret], body, headers), true);
  assert.equal(oursAccepts([other], body, headers), false);
  assert.equal(oursAccepts(secret, body, headers, { tolerance: 60 }), false);
  assert.equal(oursAccepts(secret, body, headers, { now: nowMs - 120_000, tolerance: 1 }), true);
  assert.throws(() => verifyWebhook(body, headers, []), WebhookVerificationError);
  assert.throws(() => verifyWebhook(body, headers, "whsec_not base64!"), TypeError);
});

test("a body that is not JSON is refused even when signed", () => {
  const headers = signed([secret], { payload: "not json" });
  assert.doesNotThrow(() => new Webhook(secret).verify("not json", headers, { jsonParse: false }));
  assert.throws(() => verifyWebhook("not json", headers, secret), /not JSON/);
});
