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
  /** The run (trace) the calls belong to (CONTRACT §11); `tracker.run()` sets it. */
  traceId?: string | null | undefined;
  /** The conversation or user session. */
  sessionId?: string | null | undefined;
  /** The step within the run; `run.step()` sets it. */
  parentId?: string | null | undefined;
  /** What the run is (`answer-ticket`); `tracker.run()` sets it. */
  runName?: string | null | undefined;
  /** Merged with the event's own metadata (the event's keys win) and with an outer context's. */
  metadata?: Record<string, unknown> | null | undefined;
}

const NAMES = ["feature", "customerId", "customerName", "environment", "traceId", "sessionId", "parentId", "runName"] as const;

/**
 * A reservation open inside withReservation(): the first event tracked there carries its id
 * (claims it). A claimed event that is never sent (invalid, dropped) gives the claim back.
 */
export interface ReservationSlot {
  readonly id: string;
  claimed: boolean;
}

/** What the context holds: the attributes, and the open reservation (internal, never copied out). */
interface Store extends Attributes {
  reservation?: ReservationSlot;
}

const storage = new AsyncLocalStorage<Store>();
// The open slots by id, so track() can give back a claim whose event it could not send.
const openSlots = new Map<string, ReservationSlot>();

function isPlain(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

/** `inner` over `outer`: fields given (not null/undefined) win; metadata merged key by key. */
function merge(outer: Store | undefined, inner: Attributes): Store {
  const merged: Store = { ...outer };
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
  let store: Store;
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
  if (store === undefined) return undefined;
  const copy: Store = { ...store };
  delete copy.reservation;
  return copy;
}

/** The store itself, read-only by convention (internal: no copy on the hot path). */
export function activeAttributes(): Attributes | undefined {
  return storage.getStore();
}

/** Runs `fn` in the context of a run: its trace and name, the session given or the outer one, no step. */
export function runContext<Result>(fields: { traceId: string; runName?: string | undefined; sessionId?: string | undefined }, fn: () => Result): Result {
  const store: Store = { ...storage.getStore() };
  delete store.parentId;
  delete store.runName;
  store.traceId = fields.traceId;
  if (fields.runName !== undefined) store.runName = fields.runName;
  if (fields.sessionId !== undefined) store.sessionId = fields.sessionId;
  return storage.run(store, fn);
}

/**
 * Takes the open reservation of `context` for a call that starts now (an instrumented call): its
 * event, tracked when the call ends, perhaps after the block, settles it, so the block does not
 * give the hold back. Returns the id, or undefined when there is none to take.
 */
export function claimReservation(context: Attributes | undefined): string | undefined {
  const slot = (context as Store | undefined)?.reservation;
  if (slot === undefined || slot.claimed) return undefined;
  slot.claimed = true;
  return slot.id;
}

/** Runs `fn` with the open reservation `slot` (withReservation). */
export function reservationContext<Result>(slot: ReservationSlot, fn: () => Result): Result {
  openSlots.set(slot.id, slot);
  return storage.run({ ...storage.getStore(), reservation: slot }, fn);
}

/** Runs `fn` with no open reservation (what it tracks never settles one: the run's marker). */
export function withoutReservation<Result>(fn: () => Result): Result {
  const store = storage.getStore();
  if (store?.reservation === undefined) return fn();
  const rest: Store = { ...store };
  delete rest.reservation;
  return storage.run(rest, fn);
}

/** The reservation's slot is closed: a late give-back no longer reopens it. */
export function closeReservation(slot: ReservationSlot): void {
  if (openSlots.get(slot.id) === slot) openSlots.delete(slot.id);
}

/** An event (`options`) carrying a `reservationId` was not sent (invalid or dropped): its open slot is free again. */
export function unclaimReservation(options: unknown): void {
  if (openSlots.size === 0 || typeof options !== "object" || options === null) return;
  let id: unknown;
  try {
    id = (options as { reservationId?: unknown }).reservationId;
  } catch {
    return; // a getter that throws: nothing to give back
  }
  const slot = typeof id === "string" ? openSlots.get(id) : undefined;
  if (slot !== undefined) slot.claimed = false;
}

/**
 * `options` with the context's attributes as defaults: a field the options leave absent
 * (undefined or null) takes the context's; metadata is merged when both are plain objects (the
 * options' keys win); the first event inside withReservation() takes its `reservationId`.
 * Returns `options` itself when there is nothing to add.
 */
export function withContext<T extends object>(options: T, context: Attributes | undefined): T {
  if (context === undefined) return options;
  const given = options as Record<string, unknown>;
  let result: Record<string, unknown> | undefined;
  // An open reservation goes to the first event tracked inside withReservation() (CONTRACT §10).
  const slot = (context as Store).reservation;
  if (slot !== undefined) {
    const own = given["reservationId"];
    if (own === undefined || own === null) {
      if (!slot.claimed) {
        slot.claimed = true;
        result = { ...given, reservationId: slot.id };
      }
    } else if (own === slot.id) {
      slot.claimed = true;
    }
  }
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
