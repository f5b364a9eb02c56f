// What the provider helpers share: reading a provider's result without ever throwing, and
// building the event from what was read and what the caller gave (docs/api-rules.md#cost). Behind
// providers.ts.

import type { TrackOptions } from "./types.js";
import { PRICING_CONTEXT_MAX, NODE_NAMES, PRICING_COUNT_PARENTS, codePointLength, exceededParent, hasLoneSurrogate } from "./validation.js";

export type Count = number | null | undefined;
export type Text = string | null | undefined;

/**
 * The second argument of every helper: any event field, which wins over what the helper read
 * from the response (`metadata` is merged, the caller's keys winning), and `processing`.
 */
export type HelperOptions = Partial<TrackOptions> & {
  /**
   * `"batch"` for a result obtained through the provider's batch API (OpenAI's Batch API, Message
   * Batches, ...): sent as `metadata.processing`, which prices the batch discount.
   */
  processing?: string | null | undefined;
  /**
   * The reservation this call was made under (`tracker.reserve()`'s answer, or its id): the event
   * carries its `reservationId` and settles it. An explicit `reservationId` wins.
   */
  reservation?: { readonly reservationId: string | null } | string | null | undefined;
};

/** The id a helper's `reservation` option names, if any. */
export function reservationIdOf(reservation: unknown): string | undefined {
  if (typeof reservation === "string") return reservation;
  const id = record(reservation)?.["reservationId"];
  return typeof id === "string" ? id : undefined;
}

// What a helper read from the response; a field it could not find is undefined.
export type Fields = { [K in keyof TrackOptions]?: TrackOptions[K] | undefined };
// Reserved metadata names read from the response (validated and merged by `finish`).
export type Found = Record<string, unknown>;

export function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
}

export function read(source: unknown, ...path: string[]): unknown {
  let value: unknown = source;
  for (const key of path) {
    const object = record(value);
    if (object === undefined) return undefined;
    value = object[key];
  }
  return value;
}

export function count(source: unknown, ...path: string[]): number | undefined {
  const value = read(source, ...path);
  return typeof value === "number" ? value : undefined;
}

/** A count usable in arithmetic: a safe non-negative integer, else undefined. */
export function exact(source: unknown, ...path: string[]): number | undefined {
  const value = count(source, ...path);
  return value !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

export function text(source: unknown, ...path: string[]): string | undefined {
  const value = read(source, ...path);
  return typeof value === "string" ? value : undefined;
}

export function sum(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : a + b;
}

export function items(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A response header kept by the provider's SDK, in any casing (a plain object or a `Headers`). */
export function header(headers: unknown, name: string): string | undefined {
  if (typeof (headers as { get?: unknown } | undefined)?.get === "function") {
    const value: unknown = (headers as { get(name: string): unknown }).get(name);
    return typeof value === "string" ? value : undefined;
  }
  const object = record(headers);
  if (object === undefined) return undefined;
  for (const key of Object.keys(object)) {
    if (key.toLowerCase() === name) return typeof object[key] === "string" ? (object[key] as string) : undefined;
  }
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

export function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isContext(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && !hasLoneSurrogate(value) && codePointLength(value) <= PRICING_CONTEXT_MAX;
}

/** Adds `value` to the count `name` of `found` (modalities can be reported in several entries). */
export function add(found: Found, name: string, value: number | undefined): void {
  if (value === undefined) return;
  const before = found[name];
  found[name] = typeof before === "number" ? before + value : value;
}

// Undefined entries are left out, so `extra` can override anything and add the rest
// (feature, customerId, latencyMs, metadata, ...), and an explicit `undefined` overrides nothing.
function build(base: Fields, found: Found, extra: HelperOptions | undefined): TrackOptions {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) if (value !== undefined) result[key] = value;
  let given: unknown;
  let processing: unknown;
  if (extra !== undefined && extra !== null) {
    for (const [key, value] of Object.entries(extra)) {
      if (key === "processing") processing = value;
      else if (key === "reservation") {
        const id = reservationIdOf(value);
        if (id !== undefined) result["reservationId"] ??= id;
      }
      else if (key === "metadata") given = value;
      else if (value !== undefined) result[key] = value;
    }
  }
  const hasGiven = given !== undefined && given !== null;
  if (hasGiven && (!isPlainObject(given) || typeof (given as Record<string, unknown>)["toJSON"] === "function")) {
    result["metadata"] = given; // not a plain object: sent (or reported by track()) exactly as given
    return result as unknown as TrackOptions;
  }
  // The caller's metadata (and `processing`) as given; what the response says, where valid.
  const callers: Record<string, unknown> = {};
  if (processing !== undefined && processing !== null) callers["processing"] = processing;
  if (hasGiven) Object.assign(callers, given);
  const merged: Record<string, unknown> = {};
  const derived = new Set<string>();
  for (const [name, value] of Object.entries(found)) {
    if (Object.prototype.hasOwnProperty.call(callers, name)) continue;
    const valid = PRICING_COUNT_PARENTS.has(name) ? isCount(value) && value > 0 : isContext(value);
    if (!valid) continue;
    merged[name] = value;
    derived.add(name);
  }
  Object.assign(merged, callers);
  // A count from the response that a parent contradicts is left out (and then so is any count
  // of its own), rather than making the whole event invalid. The caller's are kept as given.
  const event = (wire: string): unknown => result[NODE_NAMES.get(wire) ?? wire];
  for (let dropped = true; dropped; ) {
    dropped = false;
    for (const name of derived) {
      if (exceededParent(name, merged[name] as number, merged, event) !== undefined) {
        delete merged[name];
        derived.delete(name);
        dropped = true;
      }
    }
  }
  if (derived.size === 0 && (processing === undefined || processing === null)) {
    if (hasGiven) result["metadata"] = given; // nothing to add: the caller's object itself
  } else {
    result["metadata"] = merged;
  }
  return result as unknown as TrackOptions;
}

export function safely(provider: string | undefined, base: () => [Fields, Found], extra: HelperOptions | undefined): TrackOptions {
  let fields: Fields;
  let found: Found;
  try {
    [fields, found] = base();
    fields = { provider, ...fields };
  } catch {
    // A response object whose getters throw: keep what is certain.
    fields = { provider };
    found = {};
  }
  try {
    return build(fields, found, extra);
  } catch {
    return build(fields, {}, undefined);
  }
}

/** The provider the caller named (for conventions that depend on it), lower-case. */
export function namedProvider(extra: HelperOptions | undefined, fallback: string): string {
  try {
    const given: unknown = extra?.provider;
    return typeof given === "string" ? given.trim().toLowerCase() : fallback;
  } catch {
    return fallback;
  }
}

/** The counts named in `table` (event field → the provider's name for it), read from `source`. */
export function readCounts(source: unknown, table: Readonly<Record<string, string>>): Fields {
  const fields: Record<string, number | undefined> = {};
  for (const [field, name] of Object.entries(table)) fields[field] = count(source, name);
  return fields as Fields;
}
