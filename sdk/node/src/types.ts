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
