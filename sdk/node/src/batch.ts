// The batch wire format (docs/api-rules.md#batches): the queue of events not yet sent, how a request body
// is cut from it, and how the per-event results of an answer are read.

import { isRecord } from "./transport.js";

export const MAX_BATCH_EVENTS = 100;
/** The service's cap on a batch body, in UTF-8 bytes. */
export const MAX_BATCH_BYTES = 1_048_576;
const BATCH_OPEN = '{"batch":[';
const BATCH_CLOSE = "]}";
const ENVELOPE_BYTES = BATCH_OPEN.length + BATCH_CLOSE.length;
// Past this many consumed slots at the head, the array is rebuilt (so it does not grow forever).
const COMPACT_AFTER = 1024;

/** One tracked event: its idempotency key and its batch item (batchItem()). */
export interface QueuedEvent {
  readonly key: string;
  readonly item: string;
  /** Order of arrival, so a flush waits exactly for the events queued before it. */
  readonly seq: number;
}

/** One request's worth of events. It is retried as a whole: same events, same keys, same body. */
export interface Batch {
  readonly events: readonly QueuedEvent[];
  readonly body: string;
  attempts: number;
}

export const ITEM_OPEN = '{"idempotency_key":';
export const ITEM_EVENT = ',"event":';
export const ITEM_CLOSE = "}";

/** An event's batch item: its key and its wire body. */
export function batchItem(key: string, body: string): string {
  return ITEM_OPEN + JSON.stringify(key) + ITEM_EVENT + body + ITEM_CLOSE;
}

/** Events waiting for their first attempt, oldest first. */
export class EventQueue {
  // A FIFO with a moving head: Array#shift is O(n) on a long backlog.
  #items: (QueuedEvent | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(event: QueuedEvent): void {
    this.#items.push(event);
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }

  /**
   * Takes the oldest events that fit in one request: at most MAX_BATCH_EVENTS and
   * MAX_BATCH_BYTES of body. The first event always goes, even when it alone is over the byte
   * cap: the service then answers 413 and that is reported, instead of the event stalling the
   * queue. Call only when the queue is not empty.
   */
  takeBatch(): Batch {
    const events: QueuedEvent[] = [];
    const parts: string[] = [];
    let bytes = ENVELOPE_BYTES;
    while (events.length < MAX_BATCH_EVENTS && this.#head < this.#items.length) {
      const event = this.#items[this.#head];
      if (event === undefined) break;
      const part = event.item;
      // The byte count is UTF-8, as the service measures it; +1 for the separating comma.
      const size = Buffer.byteLength(part) + (events.length > 0 ? 1 : 0);
      if (events.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      bytes += size;
      events.push(event);
      parts.push(part);
      this.#items[this.#head++] = undefined;
    }
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > COMPACT_AFTER && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return { events, body: BATCH_OPEN + parts.join(",") + BATCH_CLOSE, attempts: 0 };
  }
}

/** One event's result in a batch answer: its HTTP-like status and the single-event body. */
export interface EventResult {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * The per-event results of a 2xx batch answer, in request order; undefined when the answer does
 * not hold one result per event, each an object whose `status` is 200..499. Such an answer tells
 * nothing reliable about any event, so the caller retries the whole batch (the same keys make
 * that safe: what was stored comes back as replays).
 */
export function readResults(body: unknown, count: number): EventResult[] | undefined {
  const results = isRecord(body) ? body["results"] : undefined;
  if (!Array.isArray(results) || results.length !== count) return undefined;
  const read: EventResult[] = [];
  for (const result of results as unknown[]) {
    if (!isRecord(result)) return undefined;
    const status = result["status"];
    if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 499) return undefined;
    read.push({ status, body: result });
  }
  return read;
}

/**
 * The result as the single-event body it stands for (without its `status` member), so a
 * callback sees exactly what it would for a single-event request.
 */
export function singleBody(result: Record<string, unknown>): Record<string, unknown> {
  const { status: _status, ...body } = result;
  return body;
}
