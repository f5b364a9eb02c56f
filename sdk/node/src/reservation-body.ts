// A reservation's request and answer (CONTRACT §10): reserve()'s options checked with the event's
// rules and written as the body of `POST /v1/reservations`, and the service's answer read back in
// Node casing. No network here (see reservations.ts).

import type { Attributes } from "./context.js";
import { EventValidationError, type FieldError } from "./errors.js";
import { checkInteger, checkString } from "./field-checks.js";
import { checkMetadata, checkReservedNames } from "./metadata.js";
import { RULES } from "./rules.js";
import { isRecord } from "./transport.js";
import type { OnUnavailable, Reservation, ReservationBudget } from "./types.js";

/** The attribution, as an event carries it: Node name → wire name. */
const ATTRIBUTION = ["provider", "model", "feature", "customerId", "customerName", "environment"] as const;
const CONTEXT_NAMES = ["feature", "customerId", "customerName", "environment"] as const;
/** reserve()'s own options, never sent as such. */
const OWN = new Set(["estimate", "hold", "ttlSeconds", "timeoutMs", "onUnavailable"]);
const ESTIMATE_WIRE: ReadonlyMap<string, string> = new Map([
  ["amount", "amount"],
  ["promptTokens", "prompt_tokens"],
  ["maxOutputTokens", "max_output_tokens"],
  ["metadata", "metadata"],
]);
/** A decimal string: digits, optionally a point and more digits (no sign, exponent or spaces). */
const DECIMAL = /^\d{1,20}(\.\d{1,20})?$/;
export const TTL_MAX_SECONDS = 86_400;

/** reserve()'s options, checked: the request body, or every problem at once. */
export interface PreparedReservation {
  readonly body: string;
  readonly hold: boolean;
  readonly timeoutMs: number | undefined;
  readonly onUnavailable: OnUnavailable | undefined;
  readonly unknownFields: readonly string[];
  readonly error: EventValidationError | undefined;
}

function loose(name: string): string {
  return name.toLowerCase().replace(/[-_\s]/g, "");
}

function estimateBody(raw: unknown, errors: FieldError[]): Record<string, unknown> | undefined {
  if (!isRecord(raw)) {
    errors.push({ field: "estimate", message: "estimate must be an object: { amount } or { promptTokens, maxOutputTokens, metadata? }" });
    return undefined;
  }
  const given = new Set<string>();
  for (const name of Object.keys(raw)) {
    if (raw[name] === undefined || raw[name] === null) continue;
    if (ESTIMATE_WIRE.has(name)) {
      given.add(name);
      continue;
    }
    // A typo here would change the hold, so it is an error (the service refuses it too).
    const meant = [...ESTIMATE_WIRE.keys()].find((known) => loose(known) === loose(name) || loose(known) === loose(name) + "s");
    const field = `estimate.${name}`;
    errors.push({ field, message: `${field} is not an estimate field${meant === undefined ? "" : `; did you mean estimate.${meant}?`}` });
  }
  const body: Record<string, unknown> = {};
  if (given.has("amount")) {
    const amount = raw["amount"];
    if (typeof amount !== "string" || !DECIMAL.test(amount)) {
      errors.push({ field: "estimate.amount", message: 'estimate.amount must be a decimal string such as "0.05" (never a number)' });
    } else body["amount"] = amount;
    for (const name of ["promptTokens", "maxOutputTokens", "metadata"]) {
      if (given.has(name)) errors.push({ field: `estimate.${name}`, message: `estimate.${name} goes with token counts, not with estimate.amount` });
    }
    return body;
  }
  for (const name of ["promptTokens", "maxOutputTokens"] as const) {
    const field = `estimate.${name}`;
    if (!given.has(name)) {
      errors.push({ field, message: `${field} is required (or give estimate.amount instead)` });
      continue;
    }
    const count = checkInteger(field, raw[name], errors);
    if (count !== undefined) body[ESTIMATE_WIRE.get(name) as string] = count;
  }
  if (given.has("metadata")) {
    const found: FieldError[] = [];
    const json = checkMetadata(raw["metadata"], found);
    if (json !== undefined) {
      const counts = { prompt_tokens: body["prompt_tokens"] as number, completion_tokens: body["max_output_tokens"] as number };
      checkReservedNames(JSON.parse(json) as Record<string, unknown>, counts, undefined, found);
      body["metadata"] = JSON.parse(json) as unknown;
    }
    for (const e of found) {
      errors.push({ field: `estimate.${e.field}`, message: e.message.replace(/\bmetadata\b/g, "estimate.metadata").replace("completionTokens", "estimate.maxOutputTokens") });
    }
  }
  return body;
}

/**
 * Checks reserve()'s options (Node names) and writes the request body (wire names): the
 * attribution by the event's rules, attribution the options leave absent from `context`
 * (withAttributes), `environment` defaulting to `defaultEnvironment`. Never throws.
 */
export function prepareReservation(raw: unknown, defaultEnvironment: string, context: Attributes | undefined): PreparedReservation {
  const errors: FieldError[] = [];
  const unknownFields: string[] = [];
  const failed = (): PreparedReservation => ({
    body: "",
    hold: true,
    timeoutMs: undefined,
    onUnavailable: undefined,
    unknownFields,
    error: new EventValidationError(errors),
  });
  if (!isRecord(raw)) {
    errors.push({ field: "body", message: "reserve() takes an object: { provider, model, estimate, ... }" });
    return failed();
  }
  try {
    const options: Record<string, unknown> = { ...raw };
    for (const name of CONTEXT_NAMES) {
      const value = context?.[name];
      if ((options[name] === undefined || options[name] === null) && value !== undefined && value !== null) options[name] = value;
    }
    for (const name of Object.keys(options)) {
      if (!OWN.has(name) && !(ATTRIBUTION as readonly string[]).includes(name)) unknownFields.push(name);
    }
    const body: Record<string, unknown> = {};
    for (const name of ATTRIBUTION) {
      const rule = RULES.get(name);
      const value = options[name];
      if (rule === undefined || rule.kind !== "string") continue;
      if (value === undefined || value === null) {
        if (rule.required) errors.push({ field: name, message: `${name} is required` });
        continue;
      }
      const text = checkString(name, rule, value, errors);
      if (text !== undefined && !(name === "environment" && text === "")) body[rule.wire] = text;
    }
    body["environment"] ??= defaultEnvironment;
    const estimate = estimateBody(options["estimate"], errors);
    if (estimate !== undefined) body["estimate"] = estimate;

    const hold = options["hold"];
    if (hold !== undefined && hold !== null) {
      if (typeof hold !== "boolean") errors.push({ field: "hold", message: "hold must be true or false" });
      else body["hold"] = hold;
    }
    const ttl = options["ttlSeconds"];
    if (ttl !== undefined && ttl !== null) {
      const seconds = checkInteger("ttlSeconds", ttl, errors);
      if (seconds !== undefined && (seconds < 1 || seconds > TTL_MAX_SECONDS)) {
        errors.push({ field: "ttlSeconds", message: `ttlSeconds must be 1 to ${TTL_MAX_SECONDS} (got ${seconds})` });
      } else if (seconds !== undefined) body["ttl_seconds"] = seconds;
    }
    let timeoutMs: number | undefined;
    const timeout = options["timeoutMs"];
    if (timeout !== undefined && timeout !== null) {
      if (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout <= 0) {
        errors.push({ field: "timeoutMs", message: "timeoutMs must be a number of milliseconds > 0" });
      } else timeoutMs = timeout;
    }
    let onUnavailable: OnUnavailable | undefined;
    const policy = options["onUnavailable"];
    if (policy !== undefined && policy !== null) {
      if (policy !== "allow" && policy !== "deny") errors.push({ field: "onUnavailable", message: 'onUnavailable must be "allow" or "deny"' });
      else onUnavailable = policy;
    }
    if (errors.length > 0) return failed();
    return { body: JSON.stringify(body), hold: hold !== false, timeoutMs, onUnavailable, unknownFields, error: undefined };
  } catch (err) {
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    errors.push({ field: "body", message: `reserve()'s options could not be read (${reason})` });
    return failed();
  }
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** A budget entry of the answer in Node casing (`budget_id` → `budgetId`), every field kept. */
function budget(entry: unknown): ReservationBudget {
  const result: ReservationBudget = {};
  if (isRecord(entry)) for (const [name, value] of Object.entries(entry)) result[camel(name)] = value;
  return result;
}

function text(body: Record<string, unknown>, name: string): string | null {
  const value = body[name];
  return typeof value === "string" ? value : null;
}

/** A `200` answer (allowed, or a dry run's verdict); undefined when it is not one. */
export function readAnswer(body: unknown): Reservation | undefined {
  if (!isRecord(body) || typeof body["allowed"] !== "boolean") return undefined;
  const budgets = Array.isArray(body["budgets"]) ? body["budgets"].map(budget) : [];
  const reservation: Reservation = {
    allowed: body["allowed"],
    reservationId: text(body, "reservation_id"),
    held: text(body, "held") ?? "0",
    currency: text(body, "currency"),
    expiresAt: text(body, "expires_at"),
    budgets,
  };
  if (!reservation.allowed) reservation.refusedBy = Array.isArray(body["refused_by"]) ? body["refused_by"].map(budget) : [];
  return reservation;
}

/**
 * A `429` refusal: `BUDGET_EXCEEDED` (`details` naming each budget) or `CREDITS_EXHAUSTED` (the
 * customer's enforced credits cannot cover the call's charge: `creditsRemaining`); undefined for
 * any other answer.
 */
export function readRefusal(body: unknown): Reservation | undefined {
  const error = isRecord(body) ? body["error"] : undefined;
  if (isRecord(error) && error["code"] === "CREDITS_EXHAUSTED") {
    const first = Array.isArray(error["details"]) && isRecord(error["details"][0]) ? error["details"][0] : {};
    const remaining = text(first, "remaining");
    return { allowed: false, reservationId: null, held: "0", currency: null, expiresAt: null, budgets: [], refusedBy: [], refusal: "CREDITS_EXHAUSTED", ...(remaining !== null ? { creditsRemaining: remaining } : {}) };
  }
  if (!isRecord(error) || error["code"] !== "BUDGET_EXCEEDED") return undefined;
  const refusedBy = Array.isArray(error["details"]) ? error["details"].map(budget) : [];
  const budgets = isRecord(body) && Array.isArray(body["budgets"]) ? body["budgets"].map(budget) : refusedBy;
  return { allowed: false, reservationId: null, held: "0", currency: null, expiresAt: null, budgets, refusedBy };
}

/** The answer when the service gave none: `onUnavailable` decides. */
export function unavailable(policy: OnUnavailable): Reservation {
  const reservation: Reservation = { allowed: policy === "allow", reservationId: null, held: "0", currency: null, expiresAt: null, budgets: [], unavailable: true };
  if (policy === "deny") reservation.refusedBy = [];
  return reservation;
}
