// The usage-event rules, the one place they live in Node.
//
// They are docs/api-rules.md#event-fields, implemented exactly as sdk/python/src/costtrack/validation.py does
// (the service runs that file on every request), and spec/validation-vectors.json holds the
// cases all three implementations must agree on. Differences are only in naming: Node users
// write camelCase, so errors name camelCase fields, and the cleaned event carries wire names.
//
// The rules as data are in rules.ts, one field's checks in field-checks.ts, metadata's in
// metadata.ts; this module checks a whole event and writes its wire form in the same pass, and
// exports what the other modules (and the tests) import by this name.

import { EventValidationError, type FieldError } from "./errors.js";
import { checkIdentifier, checkInteger, checkString } from "./field-checks.js";
import { checkMetadata, checkReservedNames } from "./metadata.js";
import { RULES, STATUSES } from "./rules.js";

export { METADATA_MAX_BYTES, METADATA_MAX_DEPTH, PRICING_CONTEXT_MAX, PRICING_CONTEXT_NAMES, PRICING_COUNT_PARENTS, STATUSES, NODE_NAMES, WIRE_NAMES, suggestField } from "./rules.js";
export { codePointLength, hasLoneSurrogate, trim } from "./field-checks.js";
export { exceededParent, type ExceededParent } from "./metadata.js";

const STATUS_SET: ReadonlySet<string> = new Set(STATUSES);

/** The result of checking one event. `error` is set when any rule is broken. */
export interface CheckedEvent {
  /** Valid known fields under their wire names, trimmed, without nulls and without `metadata`. */
  readonly fields: Record<string, string | number>;
  /** The validated `metadata` object, when given. */
  readonly metadata: Record<string, unknown> | undefined;
  /** `JSON.stringify(metadata)`, measured once and reused for the request body. */
  readonly metadataJson: string | undefined;
  /**
   * The event as the request carries it: the cleaned fields in wire casing, `environment`
   * filled from `defaultEnvironment` when the event names none, then the metadata. Written as
   * the fields are checked, and a snapshot: later changes to the caller's objects cannot alter
   * a queued event.
   */
  readonly body: string;
  /** Ignored top-level names, in the order given. */
  readonly unknownFields: readonly string[];
  readonly error: EventValidationError | undefined;
}

function invalidBody(message: string): CheckedEvent {
  return {
    fields: {},
    metadata: undefined,
    metadataJson: undefined,
    body: "",
    unknownFields: [],
    error: new EventValidationError([{ field: "body", message }]),
  };
}

/**
 * Check one usage event (Node field names) against docs/api-rules.md#event-fields. Never throws, whatever it is
 * given: a getter or proxy that throws makes the event invalid (`body`). `defaultEnvironment`
 * fills the `environment` of the request body when the event has none (or an empty one).
 */
export function checkEvent(raw: unknown, defaultEnvironment?: string): CheckedEvent {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    const kind = raw === null ? "null" : Array.isArray(raw) ? "an array" : typeof raw;
    return invalidBody(`the event (body) must be an object (got ${kind})`);
  }
  try {
    return checkObject(raw as Record<string, unknown>, defaultEnvironment);
  } catch (err) {
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    return invalidBody(`the event (body) could not be read (${reason})`);
  }
}

function checkObject(raw: Record<string, unknown>, defaultEnvironment: string | undefined): CheckedEvent {
  const errors: FieldError[] = [];
  const fields: Record<string, string | number> = {};
  const unknownFields: string[] = [];
  let invalidIntegers: Set<string> | undefined;
  let metadata: Record<string, unknown> | undefined;
  let metadataJson: string | undefined;
  let hasProvider = false;
  let hasModel = false;
  let body = ""; // each accepted field as `,"wire":value`, in the order given
  let environmentGiven = false;

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
        if (text === undefined) break;
        fields[rule.wire] = text;
        if (name === "environment") {
          environmentGiven = true;
          body += rule.prefix + JSON.stringify(text === "" && defaultEnvironment !== undefined ? defaultEnvironment : text);
        } else {
          body += rule.prefix + JSON.stringify(text);
        }
        break;
      }
      case "integer": {
        const number = checkInteger(name, value, errors);
        if (number === undefined) {
          (invalidIntegers ??= new Set()).add(rule.wire);
          break;
        }
        fields[rule.wire] = number;
        body += rule.prefix + number;
        break;
      }
      case "identifier": {
        const id = checkIdentifier(name, value, errors);
        if (id === undefined) break;
        fields[rule.wire] = id;
        body += rule.prefix + '"' + id + '"'; // the pattern allows nothing that needs escaping
        break;
      }
      case "status":
        if (typeof value === "string" && STATUS_SET.has(value)) {
          fields[rule.wire] = value;
          body += `,"status":"${value}"`;
        } else errors.push({ field: name, message: `${name} must be one of ${STATUSES.join(", ")}` });
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
  if (errors.length > 0) {
    return { fields, metadata, metadataJson, body: "", unknownFields, error: new EventValidationError(errors) };
  }

  if (!environmentGiven && defaultEnvironment !== undefined) body += ',"environment":' + JSON.stringify(defaultEnvironment);
  if (metadataJson !== undefined) body += ',"metadata":' + metadataJson;
  return { fields, metadata, metadataJson, body: "{" + body.slice(1) + "}", unknownFields, error: undefined };
}
