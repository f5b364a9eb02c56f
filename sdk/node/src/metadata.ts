// `metadata`: its shape (a plain JSON object, nested at most 32 levels, at most 8192 bytes) and
// the reserved pricing names inside it (docs/api-rules.md#cost). Behind validation.ts; the provider
// helpers use `exceededParent` too, so they never build an event that breaks the rule.

import type { FieldError } from "./errors.js";
import { checkInteger, longerThan, trim } from "./field-checks.js";
import { FEATURE_MAX, METADATA_MAX_BYTES, METADATA_MAX_DEPTH, NODE_NAMES, PRICING_CONTEXT_MAX, PRICING_CONTEXT_NAMES, PRICING_COUNT_PARENTS } from "./rules.js";

// JSON.stringify writes a lone surrogate as a \udXXX escape (an odd number of backslashes before
// the "u"). The service decodes it back to a lone surrogate, which is not UTF-8 encodable and so
// fails its metadata check: refuse it here rather than have the event rejected remotely.
const LONE_SURROGATE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

export function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  // Object.prototype of this realm or another one (vm contexts), or a null-prototype object.
  return proto === null || Object.getPrototypeOf(proto) === null;
}

// Depth-first, children in order, with the objects on the current path (a cycle ends the walk at
// once). Recursion is bounded: the walk stops one level past METADATA_MAX_DEPTH.
function nestingProblem(value: object, depth: number, path: object[]): string | undefined {
  if (path.includes(value)) return "metadata must be serializable as JSON (circular structure)";
  if (depth > METADATA_MAX_DEPTH) return `metadata must nest at most ${METADATA_MAX_DEPTH} levels`;
  path.push(value);
  let problem: string | undefined;
  if (Array.isArray(value)) {
    // Every element takes at least one byte and a comma: a longer array is too large anyway.
    if (value.length > METADATA_MAX_BYTES / 2) {
      return `metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON (an array of ${value.length} items)`;
    }
    for (let i = 0; i < value.length && problem === undefined; i++) {
      const child: unknown = value[i];
      if (typeof child === "object" && child !== null) problem = nestingProblem(child, depth + 1, path);
    }
  } else {
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const child = object[key];
      if (typeof child === "object" && child !== null) problem = nestingProblem(child, depth + 1, path);
      if (problem !== undefined) break;
    }
  }
  path.pop();
  return problem;
}

/**
 * Checks the shape of `metadata` and returns its JSON when it is an object that serializes, even
 * if a rule about its content fails (so the reserved names can still be checked and reported).
 */
export function checkMetadata(value: unknown, errors: FieldError[]): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value) || !isPlainObject(value)) {
    errors.push({ field: "metadata", message: "metadata must be a JSON object" });
    return undefined;
  }
  let json: string | undefined;
  try {
    const problem = nestingProblem(value, 1, []);
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
  // UTF-8 takes at most 3 bytes per UTF-16 unit: a short text needs no exact count.
  const size = json.length * 3 <= METADATA_MAX_BYTES ? 0 : Buffer.byteLength(json, "utf8");
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
 * parent that is present but not a valid count is skipped (its own error says so).
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
 * The reserved names inside `metadata`. `fields` holds the event's valid values (wire names) and
 * `invalid` the wire names of given but invalid ones, whose parent checks are skipped (their own
 * error is reported already). A reserved name whose value is `undefined` is absent:
 * `JSON.stringify` leaves it out.
 */
export function checkReservedNames(
  metadata: Record<string, unknown>,
  fields: Record<string, string | number>,
  invalid: ReadonlySet<string> | undefined,
  errors: FieldError[],
): void {
  let counts: [string, number][] | undefined;
  for (const name of Object.keys(metadata)) {
    const value = metadata[name];
    if (value === undefined) continue;
    if (CONTEXT_SET.has(name)) {
      const field = `metadata.${name}`;
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
      const number = checkInteger(`metadata.${name}`, value, errors);
      if (number !== undefined) (counts ??= []).push([name, number]);
    }
  }
  if (counts === undefined) return;
  const event = (wire: string): unknown => (invalid?.has(wire) ? NOT_A_COUNT : fields[wire]);
  for (const [name, value] of counts) {
    const exceeded = exceededParent(name, value, metadata, event);
    if (exceeded === undefined) continue;
    const field = `metadata.${name}`;
    const label = PRICING_COUNT_PARENTS.has(exceeded.parent) ? `metadata.${exceeded.parent}` : NODE_NAMES.get(exceeded.parent) ?? exceeded.parent;
    const limit = exceeded.absent ? "absent, so 0" : String(exceeded.limit);
    errors.push({ field, message: `${field} (${value}) must not exceed ${label} (${limit})` });
  }
}
