// A CommonJS consumer: resolves the "require" condition and its .d.ts.
import { Tracker, verifyWebhook, withFlush, type TrackOptions } from "costtrack";

const tracker = new Tracker({ apiKey: "ct_x", enabled: false });
const event: TrackOptions = { provider: "openai", model: "gpt-5", promptTokens: 1 };
tracker.track(event);
export const handler = withFlush(async () => 1, { tracker, timeoutMs: 100 });
export const verify = (body: Buffer, headers: Record<string, string>): unknown => verifyWebhook(body, headers, "whsec_c2VjcmV0");
