// Whose counting convention a call's usage follows, per client route (spec/usage-conventions.json,
// docs/api-rules.md#cost): the event says it (`metadata.usage_convention`), and where the event's
// provider is priced with other counting flags, the counts are converted to that provider's, so
// the service's price is right whichever provider the event names.

import { CONVENTIONS, ROUTES } from "./usage-conventions.js";

/** A client's method, the provider its events name and the convention its usage follows. */
export interface Route {
  readonly client: string;
  readonly method: string;
  readonly provider: string;
  readonly convention: string;
}

/** The reserved metadata name that says whose convention the counts follow. */
export const USAGE_CONVENTION = "usage_convention";

/** The route of `client`'s `method`; `fallback` (provider and convention) when the table has none. */
export function routeOf(client: string, method: string, fallback: string): Route {
  const found = ROUTES[`${client} ${method}`];
  return { client, method, provider: found?.[0] ?? fallback, convention: found?.[1] ?? fallback };
}

function count(event: Record<string, unknown>, name: string): number {
  const value = event[name];
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/**
 * Converts the counts of `event` (built by a provider helper) to the flags of the provider it
 * names, when those differ from its route's convention, and names that convention in its
 * metadata when the event has counts whose cost it decides. A provider named when instrumenting
 * that has a route of its own (`OpenAI provider=xai`) follows that route's convention.
 */
export function applyConvention(event: Record<string, unknown>, route: Route): void {
  const named = typeof event["provider"] === "string" ? event["provider"].trim().toLowerCase() : route.provider;
  const convention = named === route.provider ? route.convention : (ROUTES[`${route.client} provider=${named} ${route.method}`]?.[1] ?? route.convention);
  const from = CONVENTIONS[convention];
  const to = CONVENTIONS[named];
  if (from !== undefined && to !== undefined) {
    const cache = count(event, "cachedInputTokens") + count(event, "cacheWriteTokens");
    if (event["promptTokens"] !== undefined && from[0] !== to[0]) {
      event["promptTokens"] = from[0] ? Math.max(0, count(event, "promptTokens") - cache) : count(event, "promptTokens") + cache;
    }
    if (from[1] !== to[1] && event["reasoningTokens"] !== undefined) {
      const reasoning = count(event, "reasoningTokens");
      if (to[1]) {
        // The provider's completion count holds the reasoning: fold it in, and pass none apart.
        event["completionTokens"] = count(event, "completionTokens") + reasoning;
        delete event["reasoningTokens"];
      } else {
        event["completionTokens"] = Math.max(0, count(event, "completionTokens") - reasoning);
      }
    }
  }
  // Named where the convention decides the cost: an event without these counts costs the same under every one.
  if (!DECIDES.some((name) => count(event, name) > 0)) return;
  const metadata = event["metadata"];
  const own = typeof metadata === "object" && metadata !== null && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : {};
  event["metadata"] = { [USAGE_CONVENTION]: convention, ...own };
}

/** The counts whose meaning the convention decides. */
const DECIDES = ["cachedInputTokens", "cacheWriteTokens", "reasoningTokens"] as const;
