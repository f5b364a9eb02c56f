// One field at a time: text measured the way every implementation measures it, and the checks
// of strings and counts. Behind validation.ts.

import type { FieldError } from "./errors.js";
import { IDENTIFIER } from "./rules.js";

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

/** The length in code points when it is over `max`; undefined otherwise. */
export function longerThan(value: string, max: number): number | undefined {
  // Code points never outnumber UTF-16 units, so the common short string skips the count.
  if (value.length <= max) return undefined;
  const length = codePointLength(value);
  return length > max ? length : undefined;
}

export function checkInteger(name: string, value: unknown, errors: FieldError[]): number | undefined {
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

export function checkIdentifier(name: string, value: unknown, errors: FieldError[]): string | undefined {
  if (typeof value !== "string") {
    errors.push({ field: name, message: `${name} must be a string` });
    return undefined;
  }
  if (!IDENTIFIER.test(value)) {
    errors.push({ field: name, message: `${name} must be 1 to 128 characters of letters, digits, '.', '_', ':' or '-'` });
    return undefined;
  }
  return value;
}

export function checkString(
  name: string,
  rule: { max: number; required: boolean; trimmed: boolean; nonEmpty?: boolean },
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
  if (text.length === 0 && (rule.required || rule.nonEmpty === true)) {
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
