/**
 * Verify costtrack's webhook deliveries (budget alerts): the Standard Webhooks scheme
 * (https://www.standardwebhooks.com), with node:crypto only.
 *
 * ```ts
 * import { verifyWebhook } from "costtrack";
 * app.post("/costtrack", express.raw({ type: "application/json" }), (req, res) => {
 *   const alert = verifyWebhook(req.body, req.headers, process.env.COSTTRACK_WEBHOOK_SECRET!);
 *   res.sendStatus(204);
 * });
 * ```
 *
 * A delivery carries `webhook-id` (the notification's id, `ntf_…`: drop a repeat by it),
 * `webhook-timestamp` (unix seconds) and `webhook-signature`: space-separated `v1,<base64>`
 * entries, each the HMAC-SHA256 of `"<id>.<timestamp>.<body>"` keyed with the base64 bytes of a
 * `whsec_` secret. While a secret is being rotated a delivery is signed with both the new and the
 * old one; any matching entry verifies it. Pass the raw body as received.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

const SECRET_PREFIX = "whsec_";
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The delivery is not one costtrack signed with this secret recently; the message says why. */
export class WebhookVerificationError extends Error {
  readonly code = "WEBHOOK_VERIFICATION_FAILED";

  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

export interface VerifyWebhookOptions {
  /** Seconds a delivery's timestamp may be off, either way (default 300, Standard Webhooks' five minutes). */
  tolerance?: number;
  /** The current time in milliseconds (tests); default `Date.now()`. */
  now?: number;
}

/** Request headers: Node's `IncomingHttpHeaders`, a plain object, or a fetch `Headers`. */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * The delivery's JSON body, parsed, once its signature and timestamp are checked; throws
 * {@link WebhookVerificationError} otherwise. `secret`: the endpoint's `whsec_…` secret, or
 * several (a receiver holding the old and the new one during a rotation).
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyWebhookOptions = {},
): unknown {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const read = reader(headers);
  const msgId = required(read, "webhook-id");
  const stamp = required(read, "webhook-timestamp");
  const signatures = required(read, "webhook-signature");
  if (!/^\d+$/.test(stamp.trim())) throw new WebhookVerificationError("webhook-timestamp is not a unix time in seconds");
  const timestamp = Number(stamp.trim());
  const tolerance = options.tolerance ?? 300;
  const now = (options.now ?? Date.now()) / 1000;
  if (timestamp < now - tolerance) throw new WebhookVerificationError("webhook-timestamp is too old (a replayed delivery?)");
  if (timestamp > now + tolerance) throw new WebhookVerificationError("webhook-timestamp is too far in the future");
  const given = signatures
    .split(" ")
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => Buffer.from(entry.slice(3), "utf8"));
  const secrets = typeof secret === "string" ? [secret] : [...secret];
  if (secrets.length === 0) throw new WebhookVerificationError("no secret to verify with");
  for (const one of secrets) {
    const hmac = createHmac("sha256", key(one));
    hmac.update(`${msgId}.${timestamp}.`);
    hmac.update(body);
    const expected = Buffer.from(hmac.digest("base64"), "utf8");
    let matched = false;
    for (const candidate of given) {
      // Every entry is compared, in constant time each.
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
    }
    if (matched) {
      try {
        return JSON.parse(body.toString("utf8")) as unknown;
      } catch {
        throw new WebhookVerificationError("the body is not JSON");
      }
    }
  }
  throw new WebhookVerificationError("no signature matches the secret");
}

function reader(headers: WebhookHeaders): (name: string) => string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    const fetchHeaders = headers as { get(name: string): string | null };
    return (name) => fetchHeaders.get(name) ?? undefined;
  }
  const lower = new Map<string, string>();
  for (const [name, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (value === undefined) continue;
    lower.set(name.toLowerCase(), typeof value === "string" ? value : value.join(" "));
  }
  return (name) => lower.get(name);
}

function required(read: (name: string) => string | undefined, name: string): string {
  const value = read(name);
  if (value === undefined || value === "") throw new WebhookVerificationError(`the ${name} header is missing`);
  return value;
}

function key(secret: string): Buffer {
  if (typeof secret !== "string") throw new TypeError("a webhook secret is a string (whsec_…)");
  const text = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (text === "" || !BASE64.test(text)) throw new TypeError("a webhook secret is whsec_ followed by base64");
  return Buffer.from(text, "base64");
}
