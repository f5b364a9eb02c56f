// One HTTP attempt and how its answer is read: the request itself, the backoff before a retry,
// and the small parsers delivery needs. No queueing here (see delivery.ts).

const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 8000;
const RETRY_AFTER_CAP_MS = 30_000;
const MAX_RESPONSE_TEXT = 2000;

export type Outcome =
  | { readonly kind: "response"; readonly status: number; readonly body: unknown; readonly retryAfterMs: number | undefined }
  | { readonly kind: "failure"; readonly reason: string };

/** Delay before retry `n` (1-based): full jitter over an exponential cap, `Retry-After` as a capped floor. */
export function backoffDelay(n: number, retryAfterMs: number | undefined): number {
  const jitter = Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (n - 1));
  return retryAfterMs === undefined ? jitter : Math.max(jitter, Math.min(retryAfterMs, RETRY_AFTER_CAP_MS));
}

/** `Retry-After` as delay-seconds or an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text.length > MAX_RESPONSE_TEXT ? text.slice(0, MAX_RESPONSE_TEXT) : text;
  }
}

function describeFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // fetch() wraps socket errors: TypeError("fetch failed") with the real one as `cause`.
  const cause: unknown = (err as { cause?: unknown }).cause;
  if (isRecord(cause)) {
    const detail = typeof cause["code"] === "string" ? cause["code"] : cause["message"];
    if (typeof detail === "string" && detail !== "") return `${err.message} (${detail})`;
  }
  return err.message;
}

/** The service's error code and message from an error body, or `HTTP_<status>` when it names none. */
export function serviceError(body: unknown, status: number): { code: string; message: string } {
  const error = isRecord(body) ? body["error"] : undefined;
  const code = isRecord(error) && typeof error["code"] === "string" && error["code"] !== "" ? error["code"] : `HTTP_${status}`;
  const message =
    isRecord(error) && typeof error["message"] === "string" && error["message"] !== ""
      ? error["message"]
      : `the service rejected the event (HTTP ${status})`;
  return { code, message };
}

/**
 * POSTs `body` and reads the whole answer, both under `timeoutMs`. Never rejects: an abort by
 * `controller` (stop or flush deadline) comes back as a failure the caller recognises itself.
 */
export function post(
  url: string,
  headers: Readonly<Record<string, string>>,
  body: string,
  timeoutMs: number,
  controller: AbortController,
): Promise<Outcome> {
  return send("POST", url, headers, body, timeoutMs, controller);
}

/** One request of any method (`DELETE` has no body), answered as `post()` answers. */
export async function send(
  method: string,
  url: string,
  headers: Readonly<Record<string, string>>,
  body: string | undefined,
  timeoutMs: number,
  controller: AbortController,
): Promise<Outcome> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  // A request must not keep the process alive past its own attempt (see delivery.ts).
  timer.unref();
  try {
    // Node's fetch keeps connections alive by default (undici pools them per origin), and
    // lets idle pooled sockets not hold the process open.
    const response = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: controller.signal,
      // A redirect would turn a POST into a GET elsewhere; report it instead.
      redirect: "manual",
    });
    // Read the body under the same timeout: it carries the results, and reading it releases
    // the connection back to the pool.
    const text = await response.text();
    return {
      kind: "response",
      status: response.status,
      body: parseBody(text),
      retryAfterMs: parseRetryAfter(response.headers.get("retry-after")),
    };
  } catch (err) {
    return { kind: "failure", reason: timedOut ? `no response within ${timeoutMs} ms` : describeFailure(err) };
  } finally {
    clearTimeout(timer);
  }
}
