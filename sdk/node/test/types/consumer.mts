import type AnthropicClient from "@anthropic-ai/sdk";
import type { GenerateContentResponse } from "@google/genai";
import { generateText, streamText } from "ai";
import { generateText as generateText5 } from "ai-v5";
import type OpenAIClient from "openai";

import {
  ConfigurationError,
  EventValidationError,
  Tracker,
  VERSION,
  fromAnthropic,
  fromBedrockConverse,
  fromGemini,
  fromOpenAI,
  fromVercelAI,
  instrument,
  uninstrument,
  verifyWebhook,
  withAttributes,
  withFlush,
  WebhookVerificationError,
  type Attributes,
  type HelperOptions,
  type InstrumentOptions,
  type TrackOptions,
  type TrackerStats,
  type TrackerWarning,
  type VerifyWebhookOptions,
  type WebhookHeaders,
} from "costtrack";

const warnings: TrackerWarning[] = [];
const tracker = new Tracker({
  apiKey: process.env["COSTTRACK_API_KEY"],
  environment: "staging",
  onWarning: (w) => warnings.push(w),
  onError: (e) => {
    if (e instanceof EventValidationError) e.details.forEach((d) => d.field.toUpperCase());
    if (e instanceof ConfigurationError) e.code.toUpperCase();
  },
  timeoutMs: 2000,
  maxRetries: 2,
  maxQueueSize: 100,
});

const usage: { prompt_tokens?: number } = {};
const event: TrackOptions = {
  provider: "openai",
  model: "gpt-5",
  promptTokens: usage.prompt_tokens, // undefined is allowed even with exactOptionalPropertyTypes
  completionTokens: null,
  status: "success",
  metadata: { route: "/chat", nested: { a: [1, 2] } },
};
tracker.track(event);
// @ts-expect-error snake_case names are not TrackOptions fields
tracker.track({ provider: "openai", model: "gpt-5", prompt_tokens: 5 });
// @ts-expect-error status is one of four values
tracker.track({ provider: "openai", model: "gpt-5", status: "ok" });
// @ts-expect-error model is required
tracker.track({ provider: "openai" });

tracker.track(fromOpenAI({ model: "gpt-5", usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }, { feature: "chat" }));
tracker.track(fromAnthropic({ model: "claude-sonnet-4-5", usage: { input_tokens: 1, output_tokens: 2 } }));
tracker.track(fromGemini({ modelVersion: "gemini-2.5-pro", usageMetadata: { promptTokenCount: 1 } }));
tracker.track(fromBedrockConverse({ usage: { inputTokens: 1, outputTokens: 2 } }, { model: "anthropic.claude-sonnet-4-5" }));
// @ts-expect-error Bedrock needs the model id
fromBedrockConverse({ usage: { inputTokens: 1 } }, {});
const helperOptions: HelperOptions = { processing: "batch", feature: "batch-job", metadata: { service_tier: "flex" } };
tracker.track(fromOpenAI({ model: "gpt-5", service_tier: "flex" }, helperOptions));
tracker.track(fromVercelAI({ usage: { inputTokens: 1, outputTokens: 2 }, response: { modelId: "gpt-5" } }, { provider: "openai" }));

// The official clients' own result types are accepted as they are.
declare const chatCompletion: OpenAIClient.Chat.Completions.ChatCompletion;
declare const chatChunk: OpenAIClient.Chat.Completions.ChatCompletionChunk;
declare const response: OpenAIClient.Responses.Response;
declare const message: AnthropicClient.Messages.Message;
declare const geminiResponse: GenerateContentResponse;
tracker.track(fromOpenAI(chatCompletion));
tracker.track(fromOpenAI(chatChunk));
tracker.track(fromOpenAI(response, { processing: "batch" }));
tracker.track(fromAnthropic(message));
tracker.track(fromGemini(geminiResponse));

// So are the Vercel AI SDK's (7, and 5 under its alias): generateText results, steps, onFinish events.
declare const generated: Awaited<ReturnType<typeof generateText>>;
declare const generated5: Awaited<ReturnType<typeof generateText5>>;
tracker.track(fromVercelAI(generated));
tracker.track(fromVercelAI(generated.steps[0]!));
tracker.track(fromVercelAI(generated5, { feature: "chat" }));
streamText({
  model: "openai/gpt-5",
  prompt: "hi",
  onFinish: (event) => tracker.track(fromVercelAI(event)),
  onStepFinish: (step) => tracker.track(fromVercelAI(step)),
});
// @ts-expect-error a streamText result holds promises: pass its onFinish event
fromVercelAI(streamText({ model: "openai/gpt-5", prompt: "hi" }));

const done: Promise<boolean> = tracker.flush(1000);
const stopped: Promise<boolean> = tracker.shutdown();
const stats: TrackerStats = tracker.stats();
void [done, stopped, stats.queued + stats.sent + stats.retried + stats.dropped + stats.failed, VERSION.length];

export const handler = withFlush(async (input: { name: string }, _context: { getRemainingTimeInMillis(): number }) => {
  tracker.track({ provider: "anthropic", model: "claude-haiku-4-5", feature: input.name });
  return { statusCode: 200 };
});
const result: Promise<{ statusCode: number }> = handler({ name: "x" }, { getRemainingTimeInMillis: () => 1000 });
void result;

// instrument() returns the client's own type; withAttributes() returns what its function returns.
declare const openaiClient: OpenAIClient;
const instrumented: OpenAIClient = instrument(openaiClient, { tracker, feature: "chat", customerId: "cus_1" });
uninstrument(instrumented);
const instrumentOptions: InstrumentOptions = { tracker, provider: "azure", metadata: { team: "search" } };
void instrumentOptions;
const attributes: Attributes = { customerId: "cus_42", feature: "chat", metadata: { plan: "pro" } };
const answer: Promise<number> = withAttributes(attributes, async () => 42);
void answer;
// @ts-expect-error a tracker is required
instrument(openaiClient, { feature: "chat" });

// The framework integrations, through their own entry points: the middleware fits AI SDK 7's and
// AI SDK 5's wrapLanguageModel; the handler fits LangChain's callbacks.
import { wrapLanguageModel } from "ai";
import { wrapLanguageModel as wrapLanguageModel5 } from "ai-v5";
import { costtrackMiddleware, type CosttrackMiddleware } from "costtrack/ai-sdk";
import { CosttrackCallbackHandler, fromLangChain } from "costtrack/langchain";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage } from "@langchain/core/messages";

const middleware: CosttrackMiddleware = costtrackMiddleware({ tracker, feature: "chat" });
declare const model7: Parameters<typeof wrapLanguageModel>[0]["model"];
wrapLanguageModel({ model: model7, middleware });
declare const model5: Parameters<typeof wrapLanguageModel5>[0]["model"];
wrapLanguageModel5({ model: model5, middleware });
// @ts-expect-error a tracker is required
costtrackMiddleware({ feature: "chat" });
declare const chat: BaseChatModel;
declare const reply: AIMessage;
void chat.invoke("hi", { callbacks: [new CosttrackCallbackHandler({ tracker, customerId: "cus_1" })] });
tracker.track(fromLangChain(reply, { feature: "chat" }));
// verifyWebhook() takes the raw body, Node's or fetch's headers and one secret or several.
declare const incoming: import("node:http").IncomingHttpHeaders;
const verified: unknown = verifyWebhook(Buffer.from("{}"), incoming, "whsec_c2VjcmV0", { tolerance: 60 });
void verified;
const webhookOptions: VerifyWebhookOptions = { now: Date.now() };
verifyWebhook("{}", new Headers(), ["whsec_bmV3", "whsec_b2xk"], webhookOptions);
const fetchHeaders: WebhookHeaders = new Headers();
void fetchHeaders;
try {
  verifyWebhook("{}", {}, "whsec_c2VjcmV0");
} catch (error) {
  if (error instanceof WebhookVerificationError) error.code.toUpperCase();
}
// @ts-expect-error the body is text or bytes, not a parsed object
verifyWebhook({ id: "ntf_1" }, {}, "whsec_c2VjcmV0");

// Reservations (CONTRACT §10): money as decimal strings, one of two estimate shapes.
import { BudgetExceededError, withReservation, type Reservation, type ReserveOptions, type Run } from "costtrack";
const reserveOptions: ReserveOptions = { provider: "openai", model: "gpt-5", customerId: "cus_1", estimate: { promptTokens: 1200, maxOutputTokens: 800 }, ttlSeconds: 60 };
const reserved: Promise<Reservation> = tracker.reserve(reserveOptions);
void reserved.then((r) => r.held.length + (r.reservationId ?? "").length + (r.refusedBy?.length ?? 0));
void tracker.reserve({ provider: "openai", model: "gpt-5", estimate: { amount: "0.05" }, onUnavailable: "deny", timeoutMs: 500 });
// @ts-expect-error an amount is a decimal string, never a number
void tracker.reserve({ provider: "openai", model: "gpt-5", estimate: { amount: 0.05 } });
// @ts-expect-error onUnavailable is allow or deny
void tracker.reserve({ provider: "openai", model: "gpt-5", estimate: { amount: "1" }, onUnavailable: "retry" });
const settled: Promise<boolean> = tracker.release("rsv_1");
void settled;
const reservedAnswer: Promise<string> = withReservation(tracker, reserveOptions, async (r) => r.held);
void reservedAnswer.catch((e: unknown) => (e instanceof BudgetExceededError ? e.reason : undefined));
tracker.track(fromOpenAI(chatCompletion, { reservation: { reservationId: "rsv_1" } }));
new Tracker({ apiKey: "ct_x", onUnavailable: "deny" });

// Runs (CONTRACT §11): run identity in the context; tracker.run() returns what its function returns.
const ran: Promise<number> = tracker.run("answer-ticket", async (run: Run) => run.step("plan", async (step) => step.parentId.length + run.traceId.length));
const ranWithSession: Promise<string> = tracker.run("answer-ticket", { sessionId: "conv_1" }, (run) => run.traceId);
void [ran, ranWithSession];
withAttributes({ traceId: "t1", sessionId: "s1", parentId: "p1", runName: "r" }, () => undefined);
tracker.track({ provider: "openai", model: "gpt-5", traceId: "t1", reservationId: "rsv_1" });
