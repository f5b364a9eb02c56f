/** Values of the event's `status` field. They describe the model call, not the stored event. */
export type CallStatus = "success" | "error" | "timeout" | "cancelled";

/**
 * `T`'s properties, each optional and each also accepting `null`: left out, `undefined` and `null`
 * all mean "absent" (the default applies). Written once here, so every optional field and option
 * of the SDK accepts absence the same way.
 */
type Absent<T> = { [Name in keyof T]?: T[Name] | null | undefined };

/** The optional fields of an event, as they are when given (`TrackOptions` makes them absent-able). */
interface EventFields {
  /** What the call was for. Takes precedence over `metadata.feature`; the service defaults it to `unknown`. */
  feature: string;
  customerId: string;
  customerName: string;
  /** Defaults to the tracker's `environment` option, itself defaulting to `production`. */
  environment: string;
  promptTokens: number;
  completionTokens: number;
  /** Computed by the service as prompt + completion + reasoning when absent. */
  totalTokens: number;
  /**
   * Leave this out when the provider already counts reasoning (thinking) tokens inside its output
   * count (OpenAI, Anthropic, Bedrock): the same tokens must never be counted twice.
   */
  reasoningTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  latencyMs: number;
  /** Default `success`. */
  status: CallStatus;
  /** A plain JSON object of at most 8192 bytes as `JSON.stringify` UTF-8. */
  metadata: Record<string, unknown>;
  /** The run (trace) this call belongs to: 1 to 128 characters of `[A-Za-z0-9._:-]` (CONTRACT §11). */
  traceId: string;
  /** The conversation or user session: the same characters as `traceId`. */
  sessionId: string;
  /** The step within the run that made the call: the same characters as `traceId`. */
  parentId: string;
  /** What the run is (`answer-ticket`): 1 to 200 characters once trimmed. */
  runName: string;
  /** The reservation this call settles (`POST /v1/reservations`, CONTRACT §10). */
  reservationId: string;
}

/**
 * One usage event, in Node casing (docs/api-rules.md#event-fields). `null` and `undefined` both mean
 * "absent". Any other property (including the snake_case names Python uses) is ignored: never
 * sent, never an error, and reported once per name through `onWarning` as `ignored_field`.
 */
export interface TrackOptions extends Absent<EventFields> {
  /** Provider id, lower-case by convention: `openai`, `anthropic`, `google`, `bedrock`, ... (at most 64 characters). */
  provider: string;
  /** Model id as the provider names it (at most 200 characters). */
  model: string;
}

/**
 * What `onWarning` receives. Codes:
 * - the service's warning codes on an accepted event (`unknown_model`, `free_source_mismatch`,
 *   `unknown_field`, `usage_inconsistent`, `missing_idempotency_key`, `budget_exceeded`), with
 *   `status` 200 and the response body (a `budget_exceeded` warning's entry names the budget);
 * - the service's error code when it rejects an event (`QUOTA_EXCEEDED`, `REVOKED_API_KEY`, ...,
 *   or `HTTP_<status>` when the body names none), with `status` and `response`;
 * - `NETWORK_ERROR` once the last attempt after connection errors, timeouts or 5xx has failed;
 * - `queue_full` and `after_shutdown` for dropped events, with `count`;
 * - `ignored_field` for a property the SDK ignored, once per name per tracker.
 */
export interface TrackerWarning {
  code: string;
  message: string;
  /** The event's idempotency key, when the warning concerns one event. */
  idempotencyKey?: string;
  /** HTTP status of the response the warning comes from, when there was one. */
  status?: number;
  /** Parsed response body (or its text when it was not JSON). */
  response?: unknown;
  /** How many events a `queue_full` or `after_shutdown` warning stands for. */
  count?: number;
}

/** The tracker's options, as they are when given (`TrackerOptions` makes each absent-able). */
interface TrackerSettings {
  /** Ingestion key. Missing or empty: reported to `onError` once, and the tracker does nothing. */
  apiKey: string;
  /** Default: `process.env.COSTTRACK_BASE_URL`, else `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** Environment for events that name none. Default `production`. */
  environment: string;
  /** Receives validation errors (`EventValidationError`) and configuration errors. */
  onError: (error: Error) => void;
  /** Receives delivery failures and service warnings. Default: `console.warn`. */
  onWarning: (warning: TrackerWarning) => void;
  /** `false`: nothing at all happens (no validation, no requests, no timers). Default `true`. */
  enabled: boolean;
  /** Per-request timeout in milliseconds. Default 5000. */
  timeoutMs: number;
  /** Retries after network errors, timeouts and 5xx. Default 3. */
  maxRetries: number;
  /** Events held (queued, in flight or waiting to retry) before new ones are dropped. Default 10000. */
  maxQueueSize: number;
  /** What `reserve()` answers when the service cannot be reached in time. Default `"allow"`. */
  onUnavailable: OnUnavailable;
}

/** The tracker's options: each may be left out, `undefined` or `null` (the default applies). */
export interface TrackerOptions extends Absent<TrackerSettings> {}

/** Counters since the tracker was created. */
export interface TrackerStats {
  /** Events accepted by `track()` and not yet delivered or given up. */
  queued: number;
  /** Events the service accepted. */
  sent: number;
  /** Retry attempts made, per event: a batch of 10 events retried once counts 10. */
  retried: number;
  /** Events dropped because the queue was full, the tracker was shut down, or a shutdown deadline passed. */
  dropped: number;
  /** Events the service rejected, or that failed on their last attempt. */
  failed: number;
}

/**
 * What `reserve()` answers when the service does not (connection error, timeout, 5xx after the
 * retries that fit in `timeoutMs`, or any answer other than allowed or refused): `"allow"` the
 * call (the default: costtrack never stops an app because it is down) or `"deny"` it.
 */
export type OnUnavailable = "allow" | "deny";

/**
 * What the call may cost at most: an amount (a decimal string, `"0.05"`, in the workspace's
 * currency), or token counts priced by the service at the worst case: `promptTokens` at the
 * input rate and `maxOutputTokens` at the output rate, with pricing-context names (`service_tier`,
 * ...) in `metadata`. No other name is allowed: a typo would change the hold.
 */
export type ReserveEstimate =
  | { amount: string }
  | { promptTokens: number; maxOutputTokens: number; metadata?: Record<string, unknown> | null | undefined };

interface ReserveSettings {
  feature: string;
  customerId: string;
  customerName: string;
  /** Defaults to the tracker's `environment`. */
  environment: string;
  /** `false`: a dry run, answered the same without holding anything. Default `true`. */
  hold: boolean;
  /** How long the hold lasts unless an event settles it or it is released: 1 to 86400. Default 600. */
  ttlSeconds: number;
  /** The most this call waits, retries included. Default: the tracker's `timeoutMs`. */
  timeoutMs: number;
  /** Overrides the tracker's `onUnavailable` for this call. */
  onUnavailable: OnUnavailable;
}

/** `tracker.reserve()`'s options: the call's attribution (as an event's) and its estimate. */
export interface ReserveOptions extends Absent<ReserveSettings> {
  provider: string;
  model: string;
  estimate: ReserveEstimate;
}

/** One enforced budget that applies to a reservation, in Node casing. Money is a decimal string. */
export interface ReservationBudget {
  budgetId?: string;
  name?: string;
  /** The value a template budget (scope value `*`) applies to here, e.g. the customer id. */
  instance?: string;
  amount?: string;
  spent?: string;
  held?: string;
  remaining?: string;
  [field: string]: unknown;
}

/** `tracker.reserve()`'s answer. */
export interface Reservation {
  /** Whether the call may be made. */
  allowed: boolean;
  /** The id an event settles (`reservationId`); null when nothing is held (refused, dry run, no answer). */
  reservationId: string | null;
  /** The amount held, a decimal string (`"0"` when nothing is). */
  held: string;
  currency: string | null;
  /** When the hold returns unless settled or released (ISO 8601). */
  expiresAt: string | null;
  /** Each enforced budget that applies, with what it has spent, holds and has left. */
  budgets: ReservationBudget[];
  /** When refused: each budget that refused and what remains of it. */
  refusedBy?: ReservationBudget[];
  /** `"CREDITS_EXHAUSTED"` when the customer's enforced credits cannot cover the call's charge (CONTRACT §12). */
  refusal?: "CREDITS_EXHAUSTED";
  /** With `refusal`: what the customer's credits have left, a decimal string. */
  creditsRemaining?: string;
  /** True when the service gave no answer and `onUnavailable` decided. */
  unavailable?: boolean;
}
