// Instrument a client, not a call: instrument(client, { tracker }) makes every model call of that
// client one tracked event (usage through the provider helpers, latency, status), whether it
// succeeds, fails, times out, streams or is cancelled. No provider package is imported: the
// client is recognized by its shape, and only that instance's resource methods are replaced
// (Bedrock Runtime gets a middleware, its SDK's own extension point).

import type { HelperOptions } from "./provider-read.js";
import { record } from "./provider-read.js";
import { routeOf, type Route } from "./conventions.js";
import type { Settings, TrackerLike } from "./instrument-call.js";
import { chatCreate, embeddingsCreate, messagesCreate, responsesCreate, responsesSettle } from "./instrument-stainless.js";
import { BEDROCK_MIDDLEWARE, bedrockMiddleware, embedContent, generateContent, generateContentStream } from "./instrument-others.js";

/** instrument()'s options: the tracker, and any event field as the default of every call's event. */
export type InstrumentOptions = HelperOptions & {
  /** Where the events go: a `Tracker` (anything with `track()`). */
  tracker: TrackerLike;
  /**
   * Whether a streamed Chat Completion that does not ask for its usage is sent with
   * `stream_options: { include_usage: true }` (the usage chunk is kept from the caller):
   * `"auto"` (default) adds it, and when the server answers 400 naming `stream_options` (older
   * Azure api-versions, some OpenAI-compatible servers) makes the call once more without it and
   * stops adding it for this client; `true` always adds it; `false` never does. A stream tracked
   * without its usage has zero tokens, `metadata.usage_missing`, and an `onWarning` warning of
   * code `usage_missing`.
   */
  streamUsage?: boolean | "auto";
};

type Method = (this: unknown, ...args: unknown[]) => unknown;
type Wrap = (settings: Settings, route: Route, original: Method) => Method;

interface State {
  settings: Settings;
  undo: (() => void)[];
  /** Clients built from this one (`withOptions()`): instrumented with the same settings, undone with it. */
  derived: WeakRef<object>[];
}

const states = new WeakMap<object, State>();

/** Replaces `owner[name]` (an own property of that instance) and records how to put it back. */
function patch(owner: unknown, name: string, state: State, route: Route, wrap: Wrap): boolean {
  const target = record(owner);
  const original = target?.[name];
  if (target === undefined || typeof original !== "function") return false;
  const own = Object.getOwnPropertyDescriptor(target, name);
  const wrapped = wrap(state.settings, route, original as Method);
  Object.defineProperty(target, name, { value: wrapped, writable: true, configurable: true, enumerable: own?.enumerable ?? false });
  state.undo.push(() => {
    if (target[name] !== wrapped) return; // replaced again since: not ours to undo
    if (own !== undefined) Object.defineProperty(target, name, own);
    else delete target[name];
  });
  return true;
}

function constructorName(client: object): string {
  try {
    return String((client as { constructor?: { name?: unknown } }).constructor?.name ?? "");
  } catch {
    return "";
  }
}

/** The route table's name of an OpenAI-shaped client: Azure OpenAI or OpenAI. */
function openAIClient(client: Record<string, unknown>): string {
  return constructorName(client) === "AzureOpenAI" || (typeof client["apiVersion"] === "string" && "deploymentName" in client) ? "AzureOpenAI" : "OpenAI";
}

/** The route table's name of an Anthropic-shaped client: Anthropic itself, on Bedrock or on Vertex AI. */
function anthropicClient(client: object): string {
  const name = constructorName(client);
  return name === "AnthropicBedrock" || name === "AnthropicVertex" ? name : "Anthropic";
}

/**
 * A client built from an instrumented one (Stainless' `withOptions()`) is instrumented too, with
 * the same settings object: instrumenting the first again changes both, and uninstrumenting it
 * undoes both.
 */
function instrumentDerived(client: Record<string, unknown>, state: State): void {
  patch(client, "withOptions", state, routeOf("", "withOptions", ""), (_settings, _route, original) =>
    function withOptions(this: unknown, ...args: unknown[]): unknown {
      const derived = original.apply(this, args);
      const target = record(derived);
      try {
        if (target !== undefined && derived !== client && !states.has(target)) {
          const child: State = { settings: state.settings, undo: [], derived: [] };
          if (instrumentClient(target, child)) {
            instrumentDerived(target, child);
            states.set(target, child);
            state.derived = state.derived.filter((ref) => ref.deref() !== undefined);
            state.derived.push(new WeakRef(target));
          } else {
            undoAll(child);
          }
        }
      } catch {
        // the client the caller asked for, instrumented or not
      }
      return derived;
    },
  );
}

function undoAll(state: State): void {
  for (const undo of state.undo.reverse()) {
    try {
      undo();
    } catch {
      // keep restoring the rest
    }
  }
  state.undo = [];
}

function instrumentClient(client: Record<string, unknown>, state: State): boolean {
  // AWS SDK v3 Bedrock Runtime: a middleware, removed by name.
  const stack = record(client["middlewareStack"]);
  if (stack !== undefined && typeof stack["add"] === "function" && typeof client["send"] === "function") {
    const middleware = bedrockMiddleware(() => state.settings);
    (stack["add"] as Method).call(stack, middleware, { step: "initialize", name: BEDROCK_MIDDLEWARE, override: true });
    state.undo.push(() => {
      if (typeof stack["remove"] === "function") (stack["remove"] as Method).call(stack, BEDROCK_MIDDLEWARE);
    });
    return true;
  }
  let found = false;
  // @google/genai: models.generateContent / generateContentStream (own properties already).
  const models = client["models"];
  if (typeof record(models)?.["generateContent"] === "function") {
    // Automatic function calling and automatic continuation make several model calls inside one
    // generateContent(Stream): each goes through the client's internal method, where every one is
    // tracked. A client without those methods is watched at its public ones.
    const single = routeOf("GoogleGenAI", "models.generateContent", "google");
    const streamed = routeOf("GoogleGenAI", "models.generateContentStream", "google");
    const internal = typeof record(models)?.["generateContentInternal"] === "function" && typeof record(models)?.["generateContentStreamInternal"] === "function";
    found = patch(models, internal ? "generateContentInternal" : "generateContent", state, single, generateContent) || found;
    found = patch(models, internal ? "generateContentStreamInternal" : "generateContentStream", state, streamed, generateContentStream) || found;
    patch(models, "embedContent", state, routeOf("GoogleGenAI", "models.embedContent", "google"), embedContent);
    return found;
  }
  // openai: Chat Completions and Responses (AzureOpenAI is an OpenAI).
  const chat = record(record(client["chat"])?.["completions"]);
  const responses = record(client["responses"]);
  if (typeof chat?.["create"] === "function" || typeof responses?.["create"] === "function") {
    const name = openAIClient(client);
    const route = (method: string): Route => routeOf(name, method, name === "AzureOpenAI" ? "azure" : "openai");
    found = patch(chat, "create", state, route("chat.completions.create"), chatCreate) || found;
    found = patch(responses, "create", state, route("responses.create"), responsesCreate) || found;
    if (found) {
      patch(responses, "retrieve", state, route("responses.retrieve"), responsesSettle);
      patch(responses, "cancel", state, route("responses.cancel"), responsesSettle);
      patch(record(client["embeddings"]), "create", state, route("embeddings.create"), embeddingsCreate);
    }
    return found;
  }
  // @anthropic-ai/sdk (and its Bedrock and Vertex clients): Messages and beta Messages; their
  // stream(), message threads and the tool runner go through create.
  const messages = record(client["messages"]);
  if (typeof messages?.["create"] === "function") {
    const name = anthropicClient(client);
    const fallback = name === "AnthropicBedrock" ? "bedrock" : "anthropic";
    found = patch(messages, "create", state, routeOf(name, "messages.create", fallback), messagesCreate);
    patch(record(record(client["beta"])?.["messages"]), "create", state, routeOf(name, "beta.messages.create", fallback), messagesCreate);
    return found;
  }
  return false;
}

/**
 * Tracks every model call of `client` and returns the same client. Supported: `openai` (`OpenAI`,
 * `AzureOpenAI`: Chat Completions and Responses), `@anthropic-ai/sdk` (Messages, its streams and
 * `messages.stream()`), `@google/genai` (`models.generateContent` and `generateContentStream`) and
 * `@aws-sdk/client-bedrock-runtime` (Converse and ConverseStream, through a middleware). Each call
 * is one event: the usage as the provider helpers read it, `latencyMs` from the call to its last
 * byte, and `status` (`success`, `error`, `timeout`, `cancelled`; a failed call is tracked with
 * zero tokens). The other options are the defaults of every event (`feature`, `customerId`,
 * `provider`, `metadata`, ...), over those of an enclosing `withAttributes()`.
 *
 * Return values, errors and stream chunks are those of the client; a failure inside costtrack
 * never affects the call. Instrumenting a client again only replaces its options (a call is
 * tracked once); `uninstrument(client)` restores it. A client built from an instrumented one
 * (`withOptions()`) is instrumented with the same options and restored with it. Throws a `TypeError` for an object that is
 * none of these clients, or without a tracker.
 *
 * ```ts
 * const client = instrument(new OpenAI(), { tracker, feature: "chat" });
 * ```
 */
export function instrument<Client extends object>(client: Client, options: InstrumentOptions): Client {
  const tracker = (options as { tracker?: unknown } | null | undefined)?.tracker;
  if (typeof (tracker as { track?: unknown } | null | undefined)?.track !== "function") {
    throw new TypeError("instrument(client, { tracker }): tracker must be a costtrack Tracker");
  }
  const { tracker: _tracker, streamUsage: given, ...defaults } = options;
  if (given !== undefined && given !== true && given !== false && given !== "auto") {
    throw new TypeError('instrument(): streamUsage must be true, false or "auto"');
  }
  const streamUsage = given ?? "auto";
  const existing = states.get(client);
  if (existing !== undefined) {
    // Shared with the clients built from this one: they follow.
    existing.settings.tracker = tracker as TrackerLike;
    existing.settings.defaults = defaults;
    existing.settings.streamUsage = streamUsage;
    return client;
  }
  const state: State = { settings: { tracker: tracker as TrackerLike, defaults, streamUsage }, undo: [], derived: [] };
  const target = record(client);
  if (target === undefined || !instrumentClient(target, state)) {
    undoAll(state);
    throw new TypeError(
      "instrument(): not a supported client (openai, @anthropic-ai/sdk, @google/genai, @aws-sdk/client-bedrock-runtime BedrockRuntimeClient)",
    );
  }
  instrumentDerived(target, state);
  states.set(client, state);
  return client;
}

/** Stops tracking `client`'s calls and restores its methods; returns the client. No-op when not instrumented. */
export function uninstrument<Client extends object>(client: Client): Client {
  const state = states.get(client);
  if (state === undefined) return client;
  states.delete(client);
  undoAll(state);
  for (const ref of state.derived) {
    const derived = ref.deref();
    if (derived !== undefined && states.get(derived)?.settings === state.settings) uninstrument(derived);
  }
  return client;
}

/** Whether `client` is instrumented. */
export function isInstrumented(client: object): boolean {
  return states.has(client);
}
