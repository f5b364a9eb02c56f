// One HTTP attempt and how its answer is read: the request itself, the backoff before a retry,
// and the small parsers delivery needs. No queueing here (see delivery.ts).
//
// Requests go through node:http and node:https with the SDK's own keep-alive agents, not fetch:
// fetch turns every body into a web stream and every answer into another, which took two to
// three times the CPU of a plain request per batch (docs/performance.md). The SDK's agents are
// its own, so the application's global agent or dispatcher settings are neither used nor changed.

import * as http from "node:http";
import * as https from "node:https";

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

// Kept-alive sockets, one pool per protocol. The agent unrefs an idle socket, so a pooled
// connection never keeps the process alive.
const AGENTS = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly retryAfter: string | null;
}

/** One exchange on a pooled socket: the status, the whole body as text and `Retry-After`. */
function exchange(method: string, url: URL, headers: Readonly<Record<string, string>>, body: string | undefined, signal: AbortSignal): Promise<Answer & { readonly reused: boolean }> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === "https:";
    const options: http.RequestOptions = {
      method,
      headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) },
      agent: secure ? AGENTS.https : AGENTS.http,
      signal,
    };
    const request = (secure ? https : http).request(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("error", reject);
      response.on("aborted", () => reject(new Error("the connection closed before the answer was complete")));
      response.on("end", () => {
        const retryAfter = response.headers["retry-after"];
        resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), retryAfter: retryAfter ?? null, reused: request.reusedSocket });
      });
    });
    request.on("error", (err: Error & { reused?: boolean }) => {
      err.reused = request.reusedSocket;
      reject(err);
    });
    request.end(body);
  });
}

// A kept-alive socket the server closed while it was idle fails the next request before it
// reaches the service: that request is sent once more, at once, on a new socket. (Safe in any
// case: every event of a batch keeps its idempotency key.)
function staleSocket(err: unknown): boolean {
  const code = isRecord(err) ? err["code"] : undefined;
  return isRecord(err) && err["reused"] === true && (code === "ECONNRESET" || code === "EPIPE" || code === "ECONNREFUSED");
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
    const target = new URL(url);
    let answer: Answer;
    try {
      answer = await exchange(method, target, headers, body, controller.signal);
    } catch (err) {
      if (!staleSocket(err) || controller.signal.aborted) throw err;
      answer = await exchange(method, target, headers, body, controller.signal);
    }
    // The body was read under the same timeout: it carries the results.
    return { kind: "response", status: answer.status, body: parseBody(answer.text), retryAfterMs: parseRetryAfter(answer.retryAfter) };
  } catch (err) {
    return { kind: "failure", reason: timedOut ? `no response within ${timeoutMs} ms` : describeFailure(err) };
  } finally {
    clearTimeout(timer);
  }
}
