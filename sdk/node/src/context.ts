// Attribution without threading arguments through the app: the fields set by withAttributes() are
// the defaults of every event tracked inside it (instrumented calls and track() alike), across
// `await`, timers and callbacks, through node:async_hooks' AsyncLocalStorage.

import { AsyncLocalStorage } from "node:async_hooks";

/** The fields withAttributes() sets for the calls made inside it. */
export interface Attributes {
  feature?: string | null | undefined;
  customerId?: string | null | undefined;
  customerName?: string | null | undefined;
  environment?: string | null | undefined;
  /** Merged with the event's own metadata (the event's keys win) and with an outer context's. */
  metadata?: Record<string, unknown> | null | undefined;
}

const NAMES = ["feature", "customerId", "customerName", "environment"] as const;

const storage = new AsyncLocalStorage<Attributes>();

function isPlain(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

/** `inner` over `outer`: fields given (not null/undefined) win; metadata merged key by key. */
function merge(outer: Attributes | undefined, inner: Attributes): Attributes {
  const merged: Attributes = { ...outer };
  for (const name of NAMES) {
    const value = inner[name];
    if (value !== undefined && value !== null) merged[name] = value;
  }
  const metadata = inner.metadata;
  if (isPlain(metadata)) merged.metadata = isPlain(outer?.metadata) ? { ...outer.metadata, ...metadata } : { ...metadata };
  return merged;
}

/**
 * Runs `fn` with `attributes` as the defaults of every event tracked inside it, and returns what
 * `fn` returns (its promise, for an async function). Nested calls add to the outer attributes
 * (the inner ones win); fields given explicitly to `track()` or `instrument()` win over both.
 *
 * ```ts
 * await withAttributes({ customerId: "cus_42", feature: "chat" }, () => handleRequest(req));
 * ```
 */
export function withAttributes<Result>(attributes: Attributes, fn: () => Result): Result {
  let store: Attributes;
  try {
    store = merge(storage.getStore(), typeof attributes === "object" && attributes !== null ? attributes : {});
  } catch {
    store = storage.getStore() ?? {}; // attributes whose getters throw: the outer context only
  }
  return storage.run(store, fn);
}

/** The attributes in force here (a copy), or undefined outside any withAttributes(). */
export function currentAttributes(): Attributes | undefined {
  const store = storage.getStore();
  return store === undefined ? undefined : { ...store };
}

/** The store itself, read-only by convention (internal: no copy on the hot path). */
export function activeAttributes(): Attributes | undefined {
  return storage.getStore();
}

/**
 * `options` with the context's attributes as defaults: a field the options leave absent
 * (undefined or null) takes the context's; metadata is merged when both are plain objects (the
 * options' keys win). Returns `options` itself when there is nothing to add.
 */
export function withContext<T extends object>(options: T, context: Attributes | undefined): T {
  if (context === undefined) return options;
  const given = options as Record<string, unknown>;
  let result: Record<string, unknown> | undefined;
  for (const name of NAMES) {
    const value = context[name];
    if (value === undefined || value === null) continue;
    if (given[name] !== undefined && given[name] !== null) continue;
    result ??= { ...given };
    result[name] = value;
  }
  const metadata = context.metadata;
  if (isPlain(metadata) && Object.keys(metadata).length > 0) {
    const own = given["metadata"];
    if (own === undefined || own === null) {
      result ??= { ...given };
      result["metadata"] = { ...metadata };
    } else if (isPlain(own)) {
      result ??= { ...given };
      result["metadata"] = { ...metadata, ...own };
    }
  }
  return (result ?? options) as T;
}
