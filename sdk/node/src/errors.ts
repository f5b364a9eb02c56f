import type { Reservation } from "./types.js";

/** One problem with one field. `field` is the Node (camelCase) name, `metadata.feature`, or `body`. */
export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/**
 * The event breaks one or more rules; `details` names every offending field at once.
 * Delivered to `onError`, never thrown by `track()`.
 */
export class EventValidationError extends Error {
  /** Same code the service uses for the same problem (docs/api-rules.md#responses). */
  readonly code = "INVALID_PAYLOAD";
  readonly details: readonly FieldError[];

  constructor(details: readonly FieldError[]) {
    super("Invalid event: " + details.map((d) => d.message).join("; "));
    this.name = "EventValidationError";
    this.details = Object.freeze(details.map((d) => Object.freeze({ field: d.field, message: d.message })));
  }

  /** The offending field names, in the order found. */
  get fields(): string[] {
    return this.details.map((d) => d.field);
  }
}

/** A tracker option is unusable (for example a missing `apiKey`). Delivered to `onError`, never thrown. */
export class ConfigurationError extends Error {
  readonly code = "CONFIGURATION_ERROR";

  constructor(message: string) {
    super(message);
    this.name = "ConfigurationError";
  }
}

/**
 * Thrown by `withReservation()` when the call must not be made: a hard budget refused the
 * reservation (`reason: "budget"`, `refusedBy` naming each budget and what remains of it), or the
 * service could not answer and `onUnavailable` is `"deny"` (`reason: "unavailable"`).
 */
export class BudgetExceededError extends Error {
  /** The service's code for a refused reservation (CONTRACT §10). */
  readonly code = "BUDGET_EXCEEDED";
  readonly reason: "budget" | "unavailable";
  /** The reservation's answer, as `tracker.reserve()` returned it. */
  readonly reservation: Reservation;

  constructor(reservation: Reservation) {
    const unavailable = reservation.unavailable === true;
    const names = (reservation.refusedBy ?? []).map((b) => String(b.budgetId ?? "?"));
    const credits = reservation.refusal === "CREDITS_EXHAUSTED";
    super(
      unavailable
        ? "costtrack could not check the budgets and onUnavailable is \"deny\": the call was not made"
        : credits
          ? `the customer's credits cannot cover the call${reservation.creditsRemaining !== undefined ? ` (${reservation.creditsRemaining} left)` : ""}: the call was not made`
          : `budget exceeded${names.length > 0 ? ` (${names.join(", ")})` : ""}: the call was not made`,
    );
    this.name = "BudgetExceededError";
    this.reason = unavailable ? "unavailable" : "budget";
    this.reservation = reservation;
  }
}
