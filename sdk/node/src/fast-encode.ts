// track()'s one pass for the common event: checked and written as its request body at once.
//
// checkEvent() (validation.ts) builds what every caller may need: the cleaned `fields`, the
// error list, the metadata's parent checks against those fields. track() needs only the body
// and the ignored names, and most events are plain and valid: an object literal of short
// strings, counts and a small metadata object. For them this module checks and writes in one
// loop, allocating little more than the body. It only ever accepts: anything it is not sure of
// (a wrong type, a limit reached, a lone surrogate, a reserved count in metadata, a getter that
// throws) makes it answer undefined, and track() then runs checkEvent(), which reports the error
// or accepts the event exactly as before. For what it accepts it writes checkEvent()'s body
// byte for byte (test/fast-encode.test.mjs holds the two equal), so the wire does not depend on
// the path taken. The Python SDK does the same in costtrack/_fast_encode.py.

import { ITEM_CLOSE, ITEM_EVENT, ITEM_OPEN } from "./batch.js";
import { IDENTIFIER, METADATA_MAX_BYTES, METADATA_MAX_DEPTH, PRICING_CONTEXT_MAX, PRICING_CONTEXT_NAMES, PRICING_COUNT_PARENTS, RULES, STATUSES, FEATURE_MAX } from "./rules.js";

/** What track() sends: the body (the whole batch item, given the key), and the top-level names it ignored (in the order given). */
export interface EncodedEvent {
  readonly body: string;
  readonly unknownFields: readonly string[];
}

const NO_NAMES: readonly string[] = Object.freeze([]);
const STATUS_SET: ReadonlySet<string> = new Set(STATUSES);
const CONTEXT_SET: ReadonlySet<string> = new Set(PRICING_CONTEXT_NAMES);

// RULES again, every entry of one shape, so the loop's reads of a rule stay monomorphic.
const STRING = 1;
const INTEGER = 2;
const STATUS = 3;
const METADATA = 4;
const IDENTIFIER_KIND = 5;
interface FastRule {
  readonly kind: number;
  /** `"wire":`, and `,"wire":` for every field after the first. */
  readonly name: string;
  readonly prefix: string;
  /** The same with the opening quote of a plain text value, saving a concatenation. */
  readonly nameOpen: string;
  readonly prefixOpen: string;
  readonly max: number;
  readonly required: boolean;
  readonly trimmed: boolean;
  readonly nonEmpty: boolean;
}
const KINDS = { string: STRING, integer: INTEGER, status: STATUS, metadata: METADATA, identifier: IDENTIFIER_KIND } as const;
const FAST_RULES: ReadonlyMap<string, FastRule> = new Map(
  [...RULES].map(([name, rule]): [string, FastRule] => {
    const names = { name: rule.prefix.slice(1), prefix: rule.prefix, nameOpen: rule.prefix.slice(1) + '"', prefixOpen: rule.prefix + '"' };
    return [
      name,
      rule.kind === "string"
        ? { kind: STRING, ...names, max: rule.max, required: rule.required, trimmed: rule.trimmed, nonEmpty: rule.nonEmpty === true }
        : { kind: KINDS[rule.kind], ...names, max: 0, required: false, trimmed: false, nonEmpty: false },
    ];
  }),
);

// How JSON.stringify writes a text: PLAIN, between quotes as it is (a well-formed surrogate
// pair included), the usual case, written without calling it; ESCAPED, with an escape JSON.stringify
// writes; LONE_SURROGATE, which checkEvent() refuses (the service could not encode it).
const PLAIN = 0;
const ESCAPED = 1;
const LONE_SURROGATE = 2;

function textKind(text: string): number {
  let kind = PLAIN;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 34 /* " */ || code === 92 /* \ */) kind = ESCAPED;
    else if (code >= 0xd800 && code <= 0xdfff) {
      const next = code <= 0xdbff && i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (next < 0xdc00 || next > 0xdfff) return LONE_SURROGATE;
      i++;
    }
  }
  return kind;
}

/** `text` as JSON.stringify writes it; undefined for a lone surrogate. */
function quote(text: string): string | undefined {
  const kind = textKind(text);
  return kind === PLAIN ? '"' + text + '"' : kind === ESCAPED ? JSON.stringify(text) : undefined;
}

/**
 * `text` made one flat string now. Concatenation builds a tree of the pieces, which V8 copies
 * into one string the first time the characters are read: reading one here does that on
 * track()'s time (about 0.3 µs) instead of later in the batch, because a queue of trees costs
 * more than the copy: their nodes survive garbage collections while events wait (measured with
 * 20,000 events queued: track() plus batching took twice as long with trees as with flat bodies).
 */
function flat(text: string): string {
  text.charCodeAt(0);
  return text;
}

// The contract's whitespace (field-checks.ts): ASCII space, \t, \n, \v, \f, \r.
function isAsciiSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

// What valueJson answers for a value JSON.stringify leaves out of an object (and writes as null
// in an array): no JSON text is empty.
const OMITTED = "";

/** A metadata value's JSON as JSON.stringify writes it; OMITTED; undefined to give up. */
function valueJson(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case "string":
      return quote(value);
    case "number":
      return Number.isFinite(value) ? "" + value : "null";
    case "boolean":
      return value ? "true" : "false";
    case "object":
      return value === null ? "null" : containerJson(value, depth);
    case "bigint":
      return undefined; // JSON.stringify throws: checkEvent() reports it
    default:
      return OMITTED; // undefined, a function or a symbol
  }
}

/**
 * A plain object's or array's JSON (at nesting level `depth`), written in the walk that checks
 * its nesting; undefined to give up: anything JSON.stringify treats specially (toJSON, a class
 * instance, a Map), a lone surrogate, more than METADATA_MAX_DEPTH levels (a cycle ends there),
 * or more text than the byte cap (UTF-8 never takes fewer bytes than UTF-16 units), which also
 * bounds the work on a large or repetitive structure. At level 1 (metadata itself) it checks
 * the reserved names too: one walk does all of metadata's checks.
 */
function containerJson(value: object, depth: number): string | undefined {
  if (depth > METADATA_MAX_DEPTH) return undefined;
  const array = Array.isArray(value);
  if (Object.getPrototypeOf(value) !== (array ? Array.prototype : Object.prototype) || typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return undefined;
  }
  // Separators are written before each item, never sliced off: a slice copies the text so far,
  // and the body is copied once, when it is complete (flat()).
  let json = "";
  let separator = "";
  if (array) {
    // As checkMetadata: every element takes a byte and a comma, so a longer array is too large.
    if (value.length > METADATA_MAX_BYTES / 2) return undefined;
    for (let i = 0; i < value.length; i++) {
      const text = valueJson(value[i], depth + 1);
      if (text === undefined) return undefined;
      json += separator + (text === OMITTED ? "null" : text);
      separator = ",";
      if (json.length > METADATA_MAX_BYTES) return undefined;
    }
    return "[" + json + "]";
  }
  const object = value as Record<string, unknown>;
  for (const key in object) {
    if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
    const item = object[key];
    if (depth === 1 && !reservedNameFits(key, item)) return undefined;
    const text = valueJson(item, depth + 1);
    if (text === undefined) return undefined;
    if (text === OMITTED) continue;
    const kind = textKind(key);
    if (kind === LONE_SURROGATE) return undefined;
    json += kind === PLAIN ? (separator === "" ? '"' : ',"') + key + '":' + text : separator + JSON.stringify(key) + ":" + text;
    separator = ",";
    if (json.length > METADATA_MAX_BYTES) return undefined;
  }
  return "{" + json + "}";
}

/**
 * Whether a name at metadata's top level and its value obey the rules on reserved names
 * (checkReservedNames) and on metadata.feature (checkMetadata), or need checkEvent() to decide.
 */
function reservedNameFits(key: string, value: unknown): boolean {
  if (CONTEXT_SET.has(key)) return value === undefined || (typeof value === "string" && value.length <= PRICING_CONTEXT_MAX);
  // A reserved count's parents are the event's counts: checkEvent() compares them.
  if (PRICING_COUNT_PARENTS.has(key)) return false;
  // metadata.feature may become the event's feature, so it has the feature's cap (after trimming).
  return key !== "feature" || typeof value !== "string" || value.length <= FEATURE_MAX;
}

/** `metadata`'s JSON when it is a plain object within every rule checkMetadata and checkReservedNames apply. */
function metadataJson(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const json = containerJson(value, 1);
  if (json === undefined || (json.length * 3 > METADATA_MAX_BYTES && Buffer.byteLength(json, "utf8") > METADATA_MAX_BYTES)) return undefined;
  return json;
}

/**
 * The event's request body, `defaultEnvironment` filled in when it names none, and the names it
 * ignored; undefined when checkEvent() must decide. Never throws. With `idempotencyKey`, the body
 * is the event's whole batch item (batchItem()), made flat once with it: the batch then joins
 * the items as they are.
 */
export function encodeEvent(raw: unknown, defaultEnvironment: string, idempotencyKey?: string): EncodedEvent | undefined {
  try {
    if (typeof raw !== "object" || raw === null || Object.getPrototypeOf(raw) !== Object.prototype) return undefined;
    return encode(raw as Record<string, unknown>, defaultEnvironment, idempotencyKey);
  } catch {
    return undefined;
  }
}

function encode(raw: Record<string, unknown>, defaultEnvironment: string, idempotencyKey: string | undefined): EncodedEvent | undefined {
  // Each accepted field as `"wire":value`, in the order given (no separator to slice off: a
  // slice copies, and the body is copied once, when it is complete).
  let body = idempotencyKey === undefined ? "{" : ITEM_OPEN + JSON.stringify(idempotencyKey) + ITEM_EVENT + "{";
  let first = true;
  let unknownFields: string[] | undefined;
  let hasProvider = false;
  let hasModel = false;
  let environmentGiven = false;
  let metadata: string | undefined;
  for (const name in raw) {
    // Own names only, as Object.keys gives them (an enumerable name on Object.prototype is not).
    if (!Object.prototype.hasOwnProperty.call(raw, name)) continue;
    const rule = FAST_RULES.get(name);
    if (rule === undefined) {
      (unknownFields ??= []).push(name);
      continue;
    }
    const value = raw[name];
    if (value === null || value === undefined) continue;
    switch (rule.kind) {
      case STRING: {
        if (typeof value !== "string") return undefined;
        let text = value;
        if (rule.trimmed && text.length > 0 && (isAsciiSpace(text.charCodeAt(0)) || isAsciiSpace(text.charCodeAt(text.length - 1)))) {
          return undefined;
        }
        // UTF-16 units never undercount code points: within the cap in units is within it.
        if (text.length > rule.max) return undefined;
        if (rule.required) {
          if (text.length === 0) return undefined;
          if (name === "provider") hasProvider = true;
          else hasModel = true;
        } else if (name === "environment") {
          environmentGiven = true;
          if (text === "") text = defaultEnvironment;
        } else if (rule.nonEmpty && text.length === 0) {
          return undefined;
        }
        const kind = textKind(text);
        if (kind === LONE_SURROGATE) return undefined;
        body += kind === PLAIN ? (first ? rule.nameOpen : rule.prefixOpen) + text + '"' : (first ? rule.name : rule.prefix) + JSON.stringify(text);
        first = false;
        break;
      }
      case INTEGER:
        if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) return undefined;
        body += (first ? rule.name : rule.prefix) + (value === 0 ? 0 : value); // -0 is 0
        first = false;
        break;
      case IDENTIFIER_KIND:
        if (typeof value !== "string" || !IDENTIFIER.test(value)) return undefined;
        body += (first ? rule.nameOpen : rule.prefixOpen) + value + '"'; // nothing in the pattern needs escaping
        first = false;
        break;
      case STATUS:
        if (typeof value !== "string" || !STATUS_SET.has(value)) return undefined;
        body += (first ? rule.name : rule.prefix) + '"' + value + '"';
        first = false;
        break;
      case METADATA:
        metadata = metadataJson(value);
        if (metadata === undefined) return undefined;
        break;
    }
  }
  if (!hasProvider || !hasModel) return undefined;
  if (!environmentGiven) {
    const quoted = quote(defaultEnvironment);
    if (quoted === undefined) return undefined;
    body += ',"environment":' + quoted;
  }
  if (metadata !== undefined) body += ',"metadata":' + metadata;
  return { body: flat(body + (idempotencyKey === undefined ? "}" : "}" + ITEM_CLOSE)), unknownFields: unknownFields ?? NO_NAMES };
}
