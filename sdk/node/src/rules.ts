// The event's rules as data: its fields (Node and wire names), their limits, and the reserved
// metadata names. Behind validation.ts; the same rules as sdk/python/src/costtrack/_rules.py.

import type { TrackOptions } from "./types.js";

// -- generated from spec/sdk-rules.json by scripts/generate_sdk_rules.py: change the spec, then run it --
/** metadata may serialize to at most this many UTF-8 bytes of compact JSON. */
export const METADATA_MAX_BYTES = 8192;
/** How deep metadata may nest: the metadata object itself is level 1, and every object or array inside it adds one. */
export const METADATA_MAX_DEPTH = 32;
/** Longest value of a pricing-context name, in code points. */
export const PRICING_CONTEXT_MAX = 64;
/** The values of status. */
export const STATUSES: readonly string[] = Object.freeze(["success", "error", "timeout", "cancelled"]);
/**
 * String fields: maximum length in code points (an emoji counts once in every language), whether
 * required, whether trimmed.
 */
export const STRING_MAX = Object.freeze({
  provider: 64,
  model: 200,
  feature: 200,
  environment: 64,
  customer_id: 256,
  customer_name: 256,
  run_name: 200,
});
/**
 * An identifier (trace, session, parent, reservation): never trimmed, as trimming would silently
 * join two different runs.
 */
export const IDENTIFIER = /^[A-Za-z0-9._:-]{1,128}$/;
// -- end of the generated rules --
export const FEATURE_MAX = STRING_MAX.feature;

// The reserved metadata names (docs/api-rules.md#cost), as spec/pricing-names.json lists them (generated
// from genai-prices; a test keeps these equal to that file, in content and order). Metadata keys
// are never camelCased: they are the same snake_case names in every SDK and on the wire.

/** Pricing context: each a string of at most 64 characters when present (null is not absent). */
export const PRICING_CONTEXT_NAMES: readonly string[] = Object.freeze(["processing", "route", "search_type", "service_tier", "speed"]);

const MODALITIES = ["text", "audio", "image", "video"];

/** One modality's token counts: its part of the prompt, of the output and of the cache. */
function modalityCounts(m: string): [string, string[]][] {
  const input = `input_${m}_tokens`;
  const write = `cache_${m}_write_tokens`;
  return [
    [input, ["prompt_tokens"]],
    [`output_${m}_tokens`, ["completion_tokens"]],
    [`cache_${m}_read_tokens`, ["cached_input_tokens", input]],
    [write, ["cache_write_tokens", input]],
    ...["5m", "1h"].map((ttl): [string, string[]] => [`cache_${m}_write_${ttl}_tokens`, ["cache_write_tokens", `cache_write_${ttl}_tokens`, input, write]]),
  ];
}

/** `name` with each modality in place of `{}`, its parents likewise. */
function perModality(name: string, ...parents: string[]): [string, string[]][] {
  return MODALITIES.map((m) => [name.replace("{}", m), parents.map((parent) => parent.replace("{}", m))]);
}

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
      ...MODALITIES.flatMap(modalityCounts),
      ["input_tool_tokens", ["prompt_tokens"]],
      ...perModality("input_{}_tool_tokens", "prompt_tokens", "input_{}_tokens", "input_tool_tokens"),
      ...perModality("output_{}_reasoning_tokens", "output_{}_tokens", "reasoning_tokens"),
      ["output_citation_tokens", ["completion_tokens"]],
      ...perModality("output_{}_citation_tokens", "completion_tokens", "output_{}_tokens", "output_citation_tokens"),
      ["input_characters", []],
      ["input_text_messages", []],
      ["audio_seconds", []],
      ["input_audio_seconds", ["audio_seconds"]],
      ["output_audio_seconds", ["audio_seconds"]],
      ["input_pixels", []],
      ["input_document_pages", []],
      ["input_annotated_document_pages", ["input_document_pages"]],
      ...["rerank_searches", "web_searches", "social_searches", "storage_searches", "code_executions", "requests"].map(
        (name): [string, string[]] => [name, []],
      ),
    ] as [string, string[]][]
  ).map(([name, parents]) => [name, Object.freeze(parents)]),
);

export type Rule =
  | {
      readonly kind: "string";
      readonly wire: string;
      readonly max: number;
      readonly required: boolean;
      readonly trimmed: boolean;
      /** Optional, but when given not empty once trimmed (`runName`, CONTRACT §11). */
      readonly nonEmpty?: boolean;
    }
  | { readonly kind: "identifier"; readonly wire: string }
  | { readonly kind: "integer"; readonly wire: string }
  | { readonly kind: "status"; readonly wire: string }
  | { readonly kind: "metadata"; readonly wire: string };

// The event's fields, the one place Node lists them: keyed by `TrackOptions`' own property
// names, so the compiler rejects a field that the type has and this table lacks, or the reverse.
const FIELD_RULES: { readonly [Field in keyof TrackOptions]-?: Rule } = {
  provider: { kind: "string", wire: "provider", max: STRING_MAX.provider, required: true, trimmed: true },
  model: { kind: "string", wire: "model", max: STRING_MAX.model, required: true, trimmed: true },
  feature: { kind: "string", wire: "feature", max: STRING_MAX.feature, required: false, trimmed: true },
  customerId: { kind: "string", wire: "customer_id", max: STRING_MAX.customer_id, required: false, trimmed: false },
  customerName: { kind: "string", wire: "customer_name", max: STRING_MAX.customer_name, required: false, trimmed: false },
  environment: { kind: "string", wire: "environment", max: STRING_MAX.environment, required: false, trimmed: true },
  runName: { kind: "string", wire: "run_name", max: STRING_MAX.run_name, required: false, trimmed: true, nonEmpty: true },
  // Run identity and the reservation an event settles (CONTRACT §10, §11): IDENTIFIER below.
  traceId: { kind: "identifier", wire: "trace_id" },
  sessionId: { kind: "identifier", wire: "session_id" },
  parentId: { kind: "identifier", wire: "parent_id" },
  reservationId: { kind: "identifier", wire: "reservation_id" },
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
// Each rule also carries the field's start in the request body, `,"wire":`, written once.
export const RULES: ReadonlyMap<string, Rule & { readonly prefix: string }> = new Map(
  Object.entries(FIELD_RULES).map(([name, rule]) => [name, { ...rule, prefix: `,"${rule.wire}":` }]),
);

/** Node field name → wire (snake_case) name. */
export const WIRE_NAMES: ReadonlyMap<string, string> = new Map([...RULES].map(([node, rule]) => [node, rule.wire]));
/** Wire (snake_case) name → Node field name. */
export const NODE_NAMES: ReadonlyMap<string, string> = new Map([...RULES].map(([node, rule]) => [rule.wire, node]));

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
