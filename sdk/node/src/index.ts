/**
 * costtrack: exact cost tracking for language-model calls.
 *
 * ```ts
 * import { Tracker } from "costtrack";
 * const tracker = new Tracker({ apiKey: process.env.COSTTRACK_API_KEY });
 * tracker.track({ provider: "openai", model: "gpt-5", promptTokens: 1200, completionTokens: 300 });
 * ```
 */
export { Tracker } from "./tracker.js";
export { withFlush, type WithFlushOptions } from "./lambda.js";
export { EventValidationError, ConfigurationError, BudgetExceededError, type FieldError } from "./errors.js";
export { fromOpenAI, fromAnthropic, fromGemini, fromBedrockConverse, fromVercelAI, type HelperOptions } from "./providers.js";
export type { TrackOptions, TrackerOptions, TrackerWarning, TrackerStats, CallStatus } from "./types.js";
export type { OnUnavailable, Reservation, ReservationBudget, ReserveEstimate, ReserveOptions } from "./types.js";
export { withReservation, type Reserver } from "./reservations.js";
export type { Run, RunOptions, RunStep } from "./runs.js";
export { instrument, uninstrument, isInstrumented, type InstrumentOptions } from "./instrument.js";
export type { TrackerLike } from "./instrument-call.js";
export { withAttributes, currentAttributes, type Attributes } from "./context.js";
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions, type WebhookHeaders } from "./webhooks.js";
export { VERSION } from "./version.js";
