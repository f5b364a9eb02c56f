// The Vercel AI SDK (`ai`) helper: a result of any provider the AI SDK runs, read back into that
// provider's own conventions. Behind providers.ts.

import { PRICING_COUNT_PARENTS } from "./validation.js";
import { add, exact, header, isCount, namedProvider, read, record, safely, sum, text, type Count, type Fields, type Found, type HelperOptions, type Text } from "./provider-read.js";
import { anthropicFound, bedrockFound, geminiFound, openAIFound } from "./provider-usage.js";
import type { TrackOptions } from "./types.js";

/**
 * The part of a Vercel AI SDK (`ai`) result the helper reads: a `generateText` result, a
 * `streamText` `onFinish` event, or one step (`result.steps[i]`, an `onStepFinish` event).
 * `usage` is the shape of AI SDK 6 and 7 (`inputTokenDetails`, `outputTokenDetails`, `raw`) or of
 * AI SDK 5 (`reasoningTokens`, `cachedInputTokens`).
 */
interface VercelAILikeResult {
  usage?: VercelAIUsage | null | undefined;
  providerMetadata?: Record<string, unknown> | null | undefined;
  response?: { modelId?: Text } | null | undefined;
  model?: { provider?: Text; modelId?: Text } | null | undefined;
  steps?: readonly VercelAILikeResult[] | null | undefined;
}

interface VercelAIUsage {
  inputTokens?: Count;
  outputTokens?: Count;
  totalTokens?: Count;
  inputTokenDetails?: { noCacheTokens?: Count; cacheReadTokens?: Count; cacheWriteTokens?: Count } | null | undefined;
  outputTokenDetails?: { textTokens?: Count; reasoningTokens?: Count } | null | undefined;
  reasoningTokens?: Count;
  cachedInputTokens?: Count;
  raw?: unknown;
}

// -- Vercel AI SDK -----------------------------------------------------------------------------

// The AI SDK's provider ids ("openai.chat", "anthropic.messages", "google.generative-ai",
// "amazon-bedrock", "vertex.anthropic.messages", ...): the part before the first dot, mapped to
// costtrack's provider id. Anything else keeps its first part (mistral, xai, deepseek, groq,
// cohere, fireworks, cerebras, perplexity, ...).
const VERCEL_PROVIDERS: ReadonlyMap<string, string> = new Map([
  ["amazon-bedrock", "bedrock"],
  ["google-vertex", "google"],
  ["vertex", "google"],
  ["gemini", "google"],
  ["togetherai", "together"],
  ["azure-openai", "azure"],
  ["x-ai", "xai"],
]);

/** costtrack's provider id (and the model, for the AI Gateway) for an AI SDK provider id. */
export function vercelProvider(aiProvider: string, modelId: string | undefined): { provider: string; model: string | undefined } {
  const parts = aiProvider.trim().toLowerCase().split(".");
  const first = parts[0] ?? "";
  // Claude on Vertex AI or Bedrock: Anthropic's models and conventions, sold by the cloud.
  if (first === "vertex" || first === "google-vertex" || first === "google") {
    if (parts.includes("anthropic")) return { provider: "anthropic", model: modelId };
    if (parts.includes("xai")) return { provider: "xai", model: modelId };
  }
  // The AI Gateway names the provider in the model id: "anthropic/claude-sonnet-4.5".
  if (first === "gateway" && modelId !== undefined && modelId.includes("/")) {
    const slash = modelId.indexOf("/");
    const inner = modelId.slice(0, slash);
    return { provider: VERCEL_PROVIDERS.get(inner) ?? inner, model: modelId.slice(slash + 1) };
  }
  return { provider: VERCEL_PROVIDERS.get(first) ?? first, model: modelId };
}

// providerMetadata keys → costtrack provider, for AI SDK 5 results (which do not name it).
const METADATA_PROVIDERS: readonly string[] = ["openai", "azure", "anthropic", "google", "vertex", "bedrock", "mistral", "xai", "deepseek", "groq"];

function lastStep(result: unknown): unknown {
  const steps = read(result, "steps");
  if (Array.isArray(steps) && steps.length > 0) return steps[steps.length - 1];
  return read(result, "finalStep") ?? result;
}

function vercelIdentity(result: unknown): { provider: string | undefined; model: string | undefined } {
  const step = lastStep(result);
  const modelId =
    text(step, "response", "modelId") ?? text(step, "model", "modelId") ?? text(result, "response", "modelId") ?? text(result, "model", "modelId");
  const aiProvider = text(step, "model", "provider") ?? text(result, "model", "provider");
  if (aiProvider !== undefined) return vercelProvider(aiProvider, modelId);
  // AI SDK 5 does not name the provider; its providerMetadata is keyed by it.
  const metadata = record(read(step, "providerMetadata"));
  const keys = METADATA_PROVIDERS.filter((key) => metadata !== undefined && record(metadata[key]) !== undefined);
  const only = keys.length === 1 ? keys[0] : undefined;
  return { provider: only === undefined ? undefined : VERCEL_PROVIDERS.get(only) ?? only, model: modelId };
}

interface StepCounts {
  prompt: number | undefined;
  completion: number | undefined;
  reasoning: number | undefined;
  cached: number | undefined;
  write: number | undefined;
  found: Found;
}

function nonNegative(value: number | undefined): number | undefined {
  return value !== undefined && value >= 0 ? value : undefined;
}

/** One step's usage in costtrack's terms for `provider`'s conventions. */
function vercelStep(step: unknown, provider: string): StepCounts {
  const usage = read(step, "usage");
  const metadata = read(step, "providerMetadata");
  const inputDetails = read(usage, "inputTokenDetails");
  const outputDetails = read(usage, "outputTokenDetails");
  // AI SDK 6 and 7 (LanguageModelV3/V4 providers): inputTokens is ALL input (cache reads and writes
  // included, for every provider) and outputTokens ALL output (reasoning included). AI SDK 5 (and
  // a version-5 provider run by a later AI SDK, which leaves these details undefined) reports the
  // provider's own numbers: Anthropic's and Bedrock's input without the cache, Gemini's output
  // without the thoughts.
  const allIn = exact(inputDetails, "noCacheTokens") !== undefined || exact(outputDetails, "textTokens") !== undefined;
  const input = exact(usage, "inputTokens");
  const output = exact(usage, "outputTokens");
  const cached = exact(inputDetails, "cacheReadTokens") ?? exact(usage, "cachedInputTokens");
  const write =
    exact(inputDetails, "cacheWriteTokens") ??
    exact(metadata, "anthropic", "cacheCreationInputTokens") ??
    exact(metadata, "bedrock", "usage", "cacheWriteInputTokens");
  const reasoning = exact(outputDetails, "reasoningTokens") ?? exact(usage, "reasoningTokens");
  const raw = read(usage, "raw");
  const result: StepCounts = { prompt: input, completion: output, reasoning: undefined, cached, write, found: {} };

  if (provider === "anthropic" || provider === "bedrock") {
    // costtrack's Anthropic and Bedrock prompts exclude the cache, which the AI SDK's includes.
    if (allIn) {
      const noCache = exact(inputDetails, "noCacheTokens");
      const left = input === undefined ? undefined : nonNegative(input - (cached ?? 0) - (write ?? 0));
      result.prompt = left ?? noCache;
    }
  } else if (provider === "google") {
    // costtrack's Gemini completion excludes thoughts (passed as reasoning), which the AI SDK's includes.
    const geminiUsage = record(raw) ?? record(read(metadata, "google", "usageMetadata"));
    if (allIn) {
      result.completion = output === undefined ? undefined : nonNegative(output - (reasoning ?? 0)) ?? output;
    } else {
      // AI SDK 5 leaves the tool-use prompt out of inputTokens; Gemini's own total counts it.
      result.prompt = sum(input, input === undefined ? undefined : exact(geminiUsage, "toolUsePromptTokenCount"));
    }
    result.reasoning = reasoning !== undefined && reasoning > 0 ? reasoning : undefined;
  }

  // Pricing context and extra counts, as the direct helpers read them: from the provider's
  // response body (generateText keeps it), else its raw usage (AI SDK 6+; the AI SDK's parsers
  // drop fields they do not know), else what the AI SDK's provider copied into providerMetadata.
  const body = read(step, "response", "body");
  let found: Found = {};
  if (provider === "anthropic") {
    found = anthropicFound(record(read(body, "usage")) ?? record(raw) ?? read(metadata, "anthropic", "usage"));
  } else if (provider === "google") {
    const geminiUsage = record(read(body, "usageMetadata")) ?? record(raw) ?? read(metadata, "google", "usageMetadata");
    found = geminiFound(geminiUsage);
    found["service_tier"] =
      header(read(step, "response", "headers"), "x-gemini-service-tier") ?? text(geminiUsage, "serviceTier") ?? text(body, "serviceTier");
  } else if (provider === "bedrock") {
    found = bedrockFound(record(read(body, "usage")) ?? raw);
    found["service_tier"] = text(body, "serviceTier", "type");
  } else {
    // OpenAI and the OpenAI-compatible APIs: a Chat Completions or Responses API result.
    found = openAIFound(record(read(body, "usage")) !== undefined ? body : { usage: raw });
  }
  if (found["service_tier"] === undefined) {
    // The AI SDK's providers put the tier in their providerMetadata as `serviceTier`.
    for (const value of Object.values(record(metadata) ?? {})) {
      const tier = text(value, "serviceTier");
      if (tier !== undefined) {
        found["service_tier"] = tier;
        if (provider === "anthropic" && tier === "batch") found["processing"] = "batch";
        break;
      }
    }
  }
  result.found = found;
  return result;
}

/**
 * From a Vercel AI SDK (`ai`) result: what `generateText` returns, the event `streamText`'s (or
 * `generateText`'s) `onFinish` receives, or one step (`result.steps[i]`, an `onStepFinish`
 * event). Works with AI SDK 7, 6 and 5. Every step of a multi-step call (tool loops) is counted
 * once, with its own provider metadata; the model is the last step's.
 *
 * The provider comes from the model's AI SDK provider id (`"openai.chat"` → `openai`,
 * `"anthropic.messages"` → `anthropic`, `"google.generative-ai"` → `google`, `"amazon-bedrock"` →
 * `bedrock`, `"vertex.anthropic.messages"` → `anthropic`, `"gateway"` with `"openai/gpt-5"` →
 * `openai` and `gpt-5`, ...); AI SDK 5 results do not carry it, so it is taken from the
 * `providerMetadata` key, or pass `{ provider }`. The AI SDK normalizes usage across providers
 * in ways costtrack must undo, or tokens would be charged twice: its input count includes
 * Anthropic's and Bedrock's cache reads and writes (costtrack's prompt for them excludes the
 * cache), and its output count includes Gemini's thoughts (costtrack's Gemini completion
 * excludes them; they go in `reasoningTokens`). `totalTokens` is not passed (the service
 * computes it as for the direct helpers).
 */
export function fromVercelAI(result: VercelAILikeResult, extra?: HelperOptions): TrackOptions {
  let identity: { provider: string | undefined; model: string | undefined } = { provider: undefined, model: undefined };
  try {
    identity = vercelIdentity(result);
  } catch {
    // keep nothing
  }
  const provider = namedProvider(extra, identity.provider ?? "");
  return safely(
    identity.provider,
    () => {
      const list = read(result, "steps");
      const steps: readonly unknown[] = Array.isArray(list) && list.length > 0 ? list : [result];
      const fields: Fields = { model: identity.model };
      const found: Found = {};
      let prompt: number | undefined;
      let completion: number | undefined;
      let reasoning: number | undefined;
      let cached: number | undefined;
      let write: number | undefined;
      for (const step of steps) {
        const counts = vercelStep(step, provider);
        prompt = sum(prompt, counts.prompt);
        completion = sum(completion, counts.completion);
        reasoning = sum(reasoning, counts.reasoning);
        cached = sum(cached, counts.cached);
        write = sum(write, counts.write);
        for (const [name, value] of Object.entries(counts.found)) {
          if (value === undefined) continue;
          if (PRICING_COUNT_PARENTS.has(name)) {
            if (isCount(value)) add(found, name, value);
          } else {
            found[name] = value; // context: the last step's
          }
        }
      }
      Object.assign(fields, {
        promptTokens: prompt,
        completionTokens: completion,
        reasoningTokens: reasoning,
        // The AI SDK says 0 for "not reported": leave those out, as the direct helpers do.
        cachedInputTokens: cached === 0 ? undefined : cached,
        cacheWriteTokens: write === 0 ? undefined : write,
      });
      return [fields, found];
    },
    extra,
  );
}
