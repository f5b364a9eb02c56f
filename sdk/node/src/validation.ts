// The usage-event rules, the one place they live in Node.
//
// They are CONTRACT.md §3, implemented exactly as sdk/python/src/costtrack/validation.py does
// (the service runs that file on every request), and spec/validation-vectors.json holds the
// cases all three implementations must agree on. Differences are only in naming: Node users
// write camelCase, so errors name camelCase fields, and the cleaned event carries wire names.

import { EventValidationError, type FieldError } from "./errors.js";

export const METADATA_MAX_BYTES = 8192;
export const STATUSES: readonly string[] = Object.freeze(["success", "error", "timeout", "cancelled"]);

type Rule =
  | { readonly kind: "string"; readonly wire: string; readonly max: number; readonly required: boolean; readonly trimmed: boolean }
  | { readonly kind: "integer"; readonly wire: string }
  | { readonly kind: "status"; readonly wire: string }
  | { readonly kind: "metadata"; readonly wire: string };

// A Map, not an object literal: event keys such as "__proto__" or "constructor" must not hit
// Object.prototype.
const RULES: ReadonlyMap<string, Rule> = new Map<string, Rule>([
  ["provider", { kind: "string", wire: "provider", max: 64, required: true, trimmed: true }],
  ["model", { kind: "string", wire: "model", max: 200, required: true, trimmed: true }],
  ["feature", { kind: "string", wire: "feature", max: 200, required: false, trimmed: true }],
  ["customerId", { kind: "string", wire: "customer_id", max: 256, required: false, trimmed: false }],
  ["customerName", { kind: "string", wire: "customer_name", max: 256, required: false, trimmed: false }],
  ["environment", { kind: "string", wire: "environment", max: 64, required: false, trimmed: true }],
  ["promptTokens", { kind: "integer", wire: "prompt_tokens" }],
  ["completionTokens", { kind: "integer", wire: "completion_tokens" }],
  ["totalTokens", { kind: "integer", wire: "total_tokens" }],
  ["reasoningTokens", { kind: "integer", wire: "reasoning_tokens" }],
  ["cachedInputTokens", { kind: "integer", wire: "cached_input_tokens" }],
  ["cacheWriteTokens", { kind: "integer", wire: "cache_write_tokens" }],
  ["latencyMs", { kind: "integer", wire: "latency_ms" }],
  ["status", { kind: "status", wire: "status" }],
  ["metadata", { kind: "metadata", wire: "metadata" }],
]);

/** Node field name → wire (snake_case) name. */
export const WIRE_NAMES: ReadonlyMap<string, string> = new Map([...RULES].map(([node, rule]) => [node, rule.wire]));

const STATUS_SET: ReadonlySet<string> = new Set(STATUSES);
const FEATURE_MAX = 200;

// Spelling-insensitive lookup for suggestions: "prompt_tokens", "PromptTokens" and
// "prompt-tokens" all point at promptTokens.
const LOOSE_NAMES: ReadonlyMap<string, string> = new Map([...RULES.keys()].map((n) => [loose(n), n]));

function loose(name: string): string {
  return name.toLowerCase().replace(/[-_\s]/g, "");
}

/** The Node field an ignored name most likely meant (`prompt_tokens` → `promptTokens`), if any. */
export function suggestField(name: string): string | undefined {
  const match = LOOSE_NAMES.get(loose(name));
  return match !== undefined && match !== name ? match : undefined;
}

/** The result of checking one event. `error` is set when any rule is broken. */
export interface CheckedEvent {
  /** Valid known fields under their wire names, trimmed, without nulls and without `metadata`. */
  readonly fields: Record<string, string | number>;
  /** The validated `metadata` object, when given. */
  readonly metadata: Record<string, unknown> | undefined;
  /** `JSON.stringify(metadata)`, measured once and reused for the request body. */
  readonly metadataJson: string | undefined;
  /** Ignored top-level names, in the order given. */
  readonly unknownFields: readonly string[];
  readonly error: EventValidationError | undefined;
}

// ASCII whitespace only: space, \t, \n, \v, \f, \r. String.prototype.trim() also strips Unicode
// spaces (U+00A0, U+2028, ...), which Python's rules keep; a narrow explicit set keeps the
// implementations identical.
function isAsciiSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

/** Strip leading and trailing ASCII whitespace (the contract's definition of trimming). */
export function trim(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isAsciiSpace(value.charCodeAt(start))) start++;
  while (end > start && isAsciiSpace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** Length in Unicode code points, as `[...s].length` counts (a lone surrogate counts once). */
export function codePointLength(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** True when the string has a surrogate without its pair: not valid Unicode, not encodable as UTF-8. */
export function hasLoneSurrogate(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0xd800 || code > 0xdfff) continue;
    if (code > 0xdbff) return true; // a low surrogate with no high one before it
    const next = i + 1 < value.length ? value.charCodeAt(i + 1) : 0;
    if (next < 0xdc00 || next > 0xdfff) return true;
    i++;
  }
  return false;
}

// Code points never outnumber UTF-16 units, so the common short string skips the count.
function longerThan(value: string, max: number): number | undefined {
  if (value.length <= max) return undefined;
  const length = codePointLength(value);
  return length > max ? length : undefined;
}

// JSON.stringify writes a lone surrogate as a \udXXX escape (an odd number of backslashes before
// the "u"). The service decodes it back to a lone surrogate, which is not UTF-8 encodable and so
// fails its metadata check: refuse it here rather than have the event rejected remotely.
const LONE_SURROGATE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  // Object.prototype of this realm or another one (vm contexts), or a null-prototype object.
  return proto === null || Object.getPrototypeOf(proto) === null;
}

function checkMetadata(value: unknown, errors: FieldError[]): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value) || !isPlainObject(value)) {
    errors.push({ field: "metadata", message: "metadata must be a JSON object" });
    return undefined;
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    const kind = err instanceof Error ? err.name : typeof err;
    errors.push({ field: "metadata", message: `metadata must be serializable as JSON (${kind})` });
    return undefined;
  }
  // A toJSON() member can turn the object into something else; the wire must carry an object.
  if (typeof json !== "string" || json.charCodeAt(0) !== 123 /* { */) {
    errors.push({ field: "metadata", message: "metadata must be a JSON object" });
    return undefined;
  }
  if (json.includes("\\ud") && LONE_SURROGATE_ESCAPE.test(json)) {
    errors.push({ field: "metadata", message: "metadata must be serializable as JSON (lone surrogate)" });
    return undefined;
  }
  const size = Buffer.byteLength(json, "utf8");
  if (size > METADATA_MAX_BYTES) {
    errors.push({ field: "metadata", message: `metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON (got ${size})` });
    return undefined;
  }
  // metadata.feature can become the event's feature, so it obeys the feature's length cap.
  const feature: unknown = Object.prototype.hasOwnProperty.call(value, "feature")
    ? (value as Record<string, unknown>)["feature"]
    : undefined;
  if (typeof feature === "string" && longerThan(trim(feature), FEATURE_MAX) !== undefined) {
    errors.push({ field: "metadata.feature", message: `metadata.feature must be at most ${FEATURE_MAX} characters` });
    return undefined;
  }
  return json;
}

function checkInteger(name: string, value: unknown, errors: FieldError[]): number | undefined {
  // Booleans, bigints, numeric strings, fractions, NaN and Infinity are never counts.
  if (typeof value !== "number" || !Number.isInteger(value)) {
    errors.push({ field: name, message: `${name} must be an integer` });
    return undefined;
  }
  if (value < 0) {
    errors.push({ field: name, message: `${name} must be non-negative (got ${value})` });
    return undefined;
  }
  if (!Number.isSafeInteger(value)) {
    errors.push({ field: name, message: `${name} must be at most ${Number.MAX_SAFE_INTEGER}` });
    return undefined;
  }
  return value === 0 ? 0 : value; // -0 is 0
}

function checkString(
  name: string,
  rule: { max: number; required: boolean; trimmed: boolean },
  value: unknown,
  errors: FieldError[],
): string | undefined {
  if (typeof value !== "string") {
    errors.push({ field: name, message: `${name} must be a string` });
    return undefined;
  }
  // A lone surrogate cannot be encoded as UTF-8: the service would fail on it later.
  if (hasLoneSurrogate(value)) {
    errors.push({ field: name, message: `${name} must be valid Unicode text (no lone surrogates)` });
    return undefined;
  }
  const text = rule.trimmed ? trim(value) : value;
  if (rule.required && text.length === 0) {
    errors.push({ field: name, message: `${name} must not be empty` });
    return undefined;
  }
  const length = longerThan(text, rule.max);
  if (length !== undefined) {
    errors.push({ field: name, message: `${name} must be at most ${rule.max} characters (got ${length})` });
    return undefined;
  }
  return text;
}

function invalidBody(message: string): CheckedEvent {
  return {
    fields: {},
    metadata: undefined,
    metadataJson: undefined,
    unknownFields: [],
    error: new EventValidationError([{ field: "body", message }]),
  };
}

/**
 * Check one usage event (Node field names) against CONTRACT.md §3. Never throws, whatever it is
 * given: a getter or proxy that throws makes the event invalid (`body`).
 */
export function checkEvent(raw: unknown): CheckedEvent {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    const kind = raw === null ? "null" : Array.isArray(raw) ? "an array" : typeof raw;
    return invalidBody(`the event (body) must be an object (got ${kind})`);
  }
  try {
    return checkObject(raw as Record<string, unknown>);
  } catch (err) {
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    return invalidBody(`the event (body) could not be read (${reason})`);
  }
}

function checkObject(raw: Record<string, unknown>): CheckedEvent {
  const errors: FieldError[] = [];
  const fields: Record<string, string | number> = {};
  const unknownFields: string[] = [];
  let metadata: Record<string, unknown> | undefined;
  let metadataJson: string | undefined;
  let hasProvider = false;
  let hasModel = false;

  for (const name of Object.keys(raw)) {
    const rule = RULES.get(name);
    if (rule === undefined) {
      unknownFields.push(name);
      continue;
    }
    const value = raw[name];
    if (value === null || value === undefined) continue;
    switch (rule.kind) {
      case "string": {
        // Required means "given and not null"; a given but invalid value gets its own message.
        if (name === "provider") hasProvider = true;
        else if (name === "model") hasModel = true;
        const text = checkString(name, rule, value, errors);
        if (text !== undefined) fields[rule.wire] = text;
        break;
      }
      case "integer": {
        const number = checkInteger(name, value, errors);
        if (number !== undefined) fields[rule.wire] = number;
        break;
      }
      case "status":
        if (typeof value === "string" && STATUS_SET.has(value)) fields[rule.wire] = value;
        else errors.push({ field: name, message: `${name} must be one of ${STATUSES.join(", ")}` });
        break;
      case "metadata": {
        const json = checkMetadata(value, errors);
        if (json !== undefined) {
          metadata = value as Record<string, unknown>;
          metadataJson = json;
        }
        break;
      }
    }
  }

  if (!hasProvider) errors.push({ field: "provider", message: "provider is required" });
  if (!hasModel) errors.push({ field: "model", message: "model is required" });

  return {
    fields,
    metadata,
    metadataJson,
    unknownFields,
    error: errors.length > 0 ? new EventValidationError(errors) : undefined,
  };
}

/**
 * The request body: the cleaned fields in wire casing, `environment` filled from the tracker
 * when the event names none, and the already serialized metadata spliced in (serialized once,
 * and a snapshot: later changes to the caller's object cannot alter a queued event).
 * Consumes `event` (fills its `environment`).
 */
export function wireBody(event: CheckedEvent, defaultEnvironment: string): string {
  const fields = event.fields;
  if (fields["environment"] === undefined || fields["environment"] === "") fields["environment"] = defaultEnvironment;
  const json = JSON.stringify(fields);
  if (event.metadataJson === undefined) return json;
  return json.slice(0, -1) + ',"metadata":' + event.metadataJson + "}";
}
