// The usage-event rules, the one place they live in Node.
//
// They are docs/api-rules.md#event-fields, implemented exactly as sdk/python/src/costtrack/validation.py does
// (the service runs that file on every request), and spec/validation-vectors.json holds the
// cases all three implementations must agree on. Differences are only in naming: Node users
// write camelCase, so errors name camelCase fields, and the cleaned event carries wire names.

import { EventValidationError, type FieldError } from "./errors.js";
import type { TrackOptions } from "./types.js";

export const METADATA_MAX_BYTES = 8192;
export const STATUSES: readonly string[] = Object.freeze(["success", "error", "timeout", "cancelled"]);
/** How deep metadata may nest: the metadata object itself is level 1, and arrays are levels too. */
export const METADATA_MAX_DEPTH = 32;
/** Longest value of a pricing-context name, in code points. */
export const PRICING_CONTEXT_MAX = 64;

// The reserved metadata names (docs/api-rules.md#cost), as spec/pricing-names.json lists them (generated
// from genai-prices; a test keeps these equal to that file). Metadata keys are never camelCased:
// they are the same snake_case names in every SDK and on the wire.

/** Pricing context: each a string of at most 64 characters when present (null is not absent). */
export const PRICING_CONTEXT_NAMES: readonly string[] = Object.freeze(["processing", "route", "search_type", "service_tier", "speed"]);

/**
 * Extra counts: each an integer 0..Number.MAX_SAFE_INTEGER when present, and never larger than
 * any of its parents — the event's own count fields (wire names) or other reserved counts — an
 * absent parent counting as 0.
 */
export const PRICING_COUNT_PARENTS: ReadonlyMap<string, readonly string[]> = new Map(
  (
    [
      ["cache_write_5m_tokens", ["cache_write_tokens"]],
      ["cache_write_1h_tokens", ["cache_write_tokens"]],
      ["input_text_tokens", ["prompt_tokens"]],
      ["output_text_tokens", ["completion_tokens"]],
      ["cache_text_read_tokens", ["cached_input_tokens", "input_text_tokens"]],
      ["cache_text_write_tokens", ["cache_write_tokens", "input_text_tokens"]],
      ["cache_text_write_5m_tokens", ["cache_write_tokens", "cache_write_5m_tokens", "input_text_tokens", "cache_text_write_tokens"]],
      ["cache_text_write_1h_tokens", ["cache_write_tokens", "cache_write_1h_tokens", "input_text_tokens", "cache_text_write_tokens"]],
      ["input_audio_tokens", ["prompt_tokens"]],
      ["output_audio_tokens", ["completion_tokens"]],
      ["cache_audio_read_tokens", ["cached_input_tokens", "input_audio_tokens"]],
      ["cache_audio_write_tokens", ["cache_write_tokens", "input_audio_tokens"]],
      ["cache_audio_write_5m_tokens", ["cache_write_tokens", "cache_write_5m_tokens", "input_audio_tokens", "cache_audio_write_tokens"]],
      ["cache_audio_write_1h_tokens", ["cache_write_tokens", "cache_write_1h_tokens", "input_audio_tokens", "cache_audio_write_tokens"]],
      ["input_image_tokens", ["prompt_tokens"]],
      ["output_image_tokens", ["completion_tokens"]],
      ["cache_image_read_tokens", ["cached_input_tokens", "input_image_tokens"]],
      ["cache_image_write_tokens", ["cache_write_tokens", "input_image_tokens"]],
      ["cache_image_write_5m_tokens", ["cache_write_tokens", "cache_write_5m_tokens", "input_image_tokens", "cache_image_write_tokens"]],
      ["cache_image_write_1h_tokens", ["cache_write_tokens", "cache_write_1h_tokens", "input_image_tokens", "cache_image_write_tokens"]],
      ["input_video_tokens", ["prompt_tokens"]],
      ["output_video_tokens", ["completion_tokens"]],
      ["cache_video_read_tokens", ["cached_input_tokens", "input_video_tokens"]],
      ["cache_video_write_tokens", ["cache_write_tokens", "input_video_tokens"]],
      ["cache_video_write_5m_tokens", ["cache_write_tokens", "cache_write_5m_tokens", "input_video_tokens", "cache_video_write_tokens"]],
      ["cache_video_write_1h_tokens", ["cache_write_tokens", "cache_write_1h_tokens", "input_video_tokens", "cache_video_write_tokens"]],
      ["input_tool_tokens", ["prompt_tokens"]],
      ["input_text_tool_tokens", ["prompt_tokens", "input_text_tokens", "input_tool_tokens"]],
      ["input_audio_tool_tokens", ["prompt_tokens", "input_audio_tokens", "input_tool_tokens"]],
      ["input_image_tool_tokens", ["prompt_tokens", "input_image_tokens", "input_tool_tokens"]],
      ["input_video_tool_tokens", ["prompt_tokens", "input_video_tokens", "input_tool_tokens"]],
      ["output_text_reasoning_tokens", ["output_text_tokens", "reasoning_tokens"]],
      ["output_audio_reasoning_tokens", ["output_audio_tokens", "reasoning_tokens"]],
      ["output_image_reasoning_tokens", ["output_image_tokens", "reasoning_tokens"]],
      ["output_video_reasoning_tokens", ["output_video_tokens", "reasoning_tokens"]],
      ["output_citation_tokens", ["completion_tokens"]],
      ["output_text_citation_tokens", ["completion_tokens", "output_text_tokens", "output_citation_tokens"]],
      ["output_audio_citation_tokens", ["completion_tokens", "output_audio_tokens", "output_citation_tokens"]],
      ["output_image_citation_tokens", ["completion_tokens", "output_image_tokens", "output_citation_tokens"]],
      ["output_video_citation_tokens", ["completion_tokens", "output_video_tokens", "output_citation_tokens"]],
      ["input_characters", []],
      ["input_text_messages", []],
      ["audio_seconds", []],
      ["input_audio_seconds", ["audio_seconds"]],
      ["output_audio_seconds", ["audio_seconds"]],
      ["input_pixels", []],
      ["input_document_pages", []],
      ["input_annotated_document_pages", ["input_document_pages"]],
      ["rerank_searches", []],
      ["web_searches", []],
      ["social_searches", []],
      ["storage_searches", []],
      ["code_executions", []],
      ["requests", []],
    ] as [string, string[]][]
  ).map(([name, parents]) => [name, Object.freeze(parents)]),
);
type Rule =
  | { readonly kind: "string"; readonly wire: string; readonly max: number; readonly required: boolean; readonly trimmed: boolean }
  | { readonly kind: "integer"; readonly wire: string }
  | { readonly kind: "status"; readonly wire: string }
  | { readonly kind: "metadata"; readonly wire: string };

// The event's fields, the one place Node lists them: keyed by `TrackOptions`' own property
// names, so the compiler rejects a field that the type has and this table lacks, or the reverse.
const FIELD_RULES: { readonly [Field in keyof TrackOptions]-?: Rule } = {
  provider: { kind: "string", wire: "provider", max: 64, required: true, trimmed: true },
  model: { kind: "string", wire: "model", max: 200, required: true, trimmed: true },
  feature: { kind: "string", wire: "feature", max: 200, required: false, trimmed: true },
  customerId: { kind: "string", wire: "customer_id", max: 256, required: false, trimmed: false },
  customerName: { kind: "string", wire: "customer_name", max: 256, required: false, trimmed: false },
  environment: { kind: "string", wire: "environment", max: 64, required: false, trimmed: true },
  promptTokens: { kind: "integer", wire: "prompt_tokens" },
  completionTokens: { kind: "integer", wire: "completion_tokens" },
  totalTokens: { kind: "integer", wire: "total_tokens" },
  reasoningTokens: { kind: "integer", wire: "reasoning_tokens" },
  cachedInputTokens: { kind: "integer", wire: "cached_input_tokens" },
  cacheWriteTokens: { kind: "integer", wire: "cache_write_tokens" },
  latencyMs: { kind: "integer", wire: "latency_ms" },
  status: { kind: "status", wire: "status" },
  metadata: { kind: "metadata", wire: "metadata" },
};

// Looked up in a Map, not in the object above: event keys such as "__proto__" or "constructor"
// must not hit Object.prototype.
const RULES: ReadonlyMap<string, Rule> = new Map<string, Rule>(Object.entries(FIELD_RULES));

/** Node field name → wire (snake_case) name. */
export const WIRE_NAMES: ReadonlyMap<string, string> = new Map([...RULES].map(([node, rule]) => [node, rule.wire]));
/** Wire (snake_case) name → Node field name. */
export const NODE_NAMES: ReadonlyMap<string, string> = new Map([...RULES].map(([node, rule]) => [rule.wire, node]));

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

// Walks metadata without recursion (a deep object must not overflow the stack, and JSON.stringify
// would), tracking the objects on the current path so that a cycle ends the walk at once.
function nestingProblem(root: object): string | undefined {
  type Step = { readonly value: object; readonly depth: number; readonly leave: boolean };
  const path = new Set<object>();
  const stack: Step[] = [{ value: root, depth: 1, leave: false }];
  for (let step = stack.pop(); step !== undefined; step = stack.pop()) {
    const { value, depth } = step;
    if (step.leave) {
      path.delete(value);
      continue;
    }
    if (path.has(value)) return "metadata must be serializable as JSON (circular structure)";
    if (depth > METADATA_MAX_DEPTH) return `metadata must nest at most ${METADATA_MAX_DEPTH} levels`;
    path.add(value);
    stack.push({ value, depth, leave: true });
    if (Array.isArray(value)) {
      // Every element takes at least one byte and a comma: a longer array is too large anyway.
      if (value.length > METADATA_MAX_BYTES / 2) {
        return `metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON (an array of ${value.length} items)`;
      }
      for (let i = value.length - 1; i >= 0; i--) {
        const child: unknown = value[i];
        if (typeof child === "object" && child !== null) stack.push({ value: child, depth: depth + 1, leave: false });
      }
    } else {
      const object = value as Record<string, unknown>;
      const keys = Object.keys(object);
      for (let i = keys.length - 1; i >= 0; i--) {
        const child = object[keys[i] as string];
        if (typeof child === "object" && child !== null) stack.push({ value: child, depth: depth + 1, leave: false });
      }
    }
  }
  return undefined;
}

/**
 * Checks the shape of `metadata` and returns its JSON when it is an object that serializes, even
 * if a rule about its content fails (so the reserved names can still be checked and reported).
 */
function checkMetadata(value: unknown, errors: FieldError[]): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value) || !isPlainObject(value)) {
    errors.push({ field: "metadata", message: "metadata must be a JSON object" });
    return undefined;
  }
  let json: string | undefined;
  try {
    const problem = nestingProblem(value);
    if (problem !== undefined) {
      errors.push({ field: "metadata", message: problem });
      return undefined;
    }
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
  }
  // metadata.feature can become the event's feature, so it obeys the feature's length cap.
  const feature: unknown = Object.prototype.hasOwnProperty.call(value, "feature")
    ? (value as Record<string, unknown>)["feature"]
    : undefined;
  if (typeof feature === "string" && longerThan(trim(feature), FEATURE_MAX) !== undefined) {
    errors.push({ field: "metadata.feature", message: `metadata.feature must be at most ${FEATURE_MAX} characters` });
  }
  return json;
}

const CONTEXT_SET: ReadonlySet<string> = new Set(PRICING_CONTEXT_NAMES);

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** What `exceededParent` found: the parent (a wire name or a reserved count) and its value. */
export interface ExceededParent {
  readonly parent: string;
  readonly limit: number;
  readonly absent: boolean;
}

/**
 * The first parent (docs/api-rules.md#cost) that the reserved count `name` = `value` exceeds, or
 * undefined when it fits in all of them. A parent is one of the event's counts, read through
 * `event(wireName)`, or another reserved count in `metadata`. An absent parent counts as 0; a
 * parent that is present but not a valid count is skipped (its own error says so). The provider
 * helpers use this too, so they never build an event that breaks the rule.
 */
export function exceededParent(
  name: string,
  value: number,
  metadata: Record<string, unknown>,
  event: (wire: string) => unknown,
): ExceededParent | undefined {
  for (const parent of PRICING_COUNT_PARENTS.get(name) ?? []) {
    const reserved = PRICING_COUNT_PARENTS.has(parent);
    const given: unknown = reserved
      ? Object.prototype.hasOwnProperty.call(metadata, parent)
        ? metadata[parent]
        : undefined
      : event(parent);
    // Inside metadata only undefined is absent (JSON leaves it out); null is sent, and invalid.
    const absent = given === undefined || (!reserved && given === null);
    if (!absent && !isCount(given)) continue;
    const limit = absent ? 0 : (given as number);
    if (value > limit) return { parent, limit, absent };
  }
  return undefined;
}

const NOT_A_COUNT = Symbol("invalid");

/**
 * The reserved names of docs/api-rules.md#cost inside `metadata`. `fields` holds the event's valid values
 * (wire names) and `invalid` the wire names of given but invalid ones, whose parent checks are
 * skipped (their own error is reported already). A reserved name whose value is `undefined` is
 * absent: `JSON.stringify` leaves it out.
 */
function checkReservedNames(
  metadata: Record<string, unknown>,
  fields: Record<string, string | number>,
  invalid: ReadonlySet<string>,
  errors: FieldError[],
): void {
  const counts: [string, number][] = [];
  for (const name of Object.keys(metadata)) {
    const value = metadata[name];
    if (value === undefined) continue;
    const field = `metadata.${name}`;
    if (CONTEXT_SET.has(name)) {
      if (typeof value !== "string") {
        const kind = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
        errors.push({ field, message: `${field} must be a string (got ${kind})` });
      } else {
        const length = longerThan(value, PRICING_CONTEXT_MAX);
        if (length !== undefined) {
          errors.push({ field, message: `${field} must be at most ${PRICING_CONTEXT_MAX} characters (got ${length})` });
        }
      }
    } else if (PRICING_COUNT_PARENTS.has(name)) {
      const number = checkInteger(field, value, errors);
      if (number !== undefined) counts.push([name, number]);
    }
  }
  const event = (wire: string): unknown => (invalid.has(wire) ? NOT_A_COUNT : fields[wire]);
  for (const [name, value] of counts) {
    const exceeded = exceededParent(name, value, metadata, event);
    if (exceeded === undefined) continue;
    const field = `metadata.${name}`;
    const label = PRICING_COUNT_PARENTS.has(exceeded.parent) ? `metadata.${exceeded.parent}` : NODE_NAMES.get(exceeded.parent) ?? exceeded.parent;
    const limit = exceeded.absent ? "absent, so 0" : String(exceeded.limit);
    errors.push({ field, message: `${field} (${value}) must not exceed ${label} (${limit})` });
  }
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
 * Check one usage event (Node field names) against docs/api-rules.md#event-fields. Never throws, whatever it is
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
  const invalidIntegers = new Set<string>();
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
        else invalidIntegers.add(rule.wire);
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

  // After the loop: the parent checks need the event's counts, wherever metadata stood.
  if (metadata !== undefined && metadataJson !== undefined) {
    // A toJSON() member sends something else than the object itself: check what is sent.
    const sent = typeof metadata["toJSON"] === "function" ? (JSON.parse(metadataJson) as Record<string, unknown>) : metadata;
    checkReservedNames(sent, fields, invalidIntegers, errors);
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
