"""A canned provider on a free 127.0.0.1 port, and the documented responses it answers with.

Used by the provider helpers' tests (test_provider_clients.py, test_providers.py) and by the
OTLP end-to-end tests (tests/e2e/canned_openai.py loads this file: sdk/python/tests is not a
package). Standard library only, so it loads under any interpreter the tests run on.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

Body = Union[Dict[str, Any], List[Any], str, bytes]


@dataclass
class Canned:
    status: int = 200
    body: Body = field(default_factory=dict)
    headers: Dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    #: Seconds to wait before answering (a client with a shorter timeout times out).
    delay: float = 0.0


@dataclass
class Call:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class CannedProvider:
    """Answers ``(method, path)`` with a canned reply and records every request. A body may
    be a function of the server's URL (for replies that link back to the server)."""

    def __init__(self) -> None:
        self.routes: Dict[Tuple[str, str], Union[Canned, Callable[[str], Canned]]] = {}
        self.calls: List[Call] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # One segment per response, sent at once: no Nagle / delayed-ACK stall of 40 ms per call.
            wbufsize = -1
            disable_nagle_algorithm = True

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                headers = {name.lower(): value for name, value in self.headers.items()}
                server.calls.append(Call(self.command, path, headers, body))
                route = server.routes.get((self.command, path))
                reply = route(server.url) if callable(route) else route
                if reply is None:
                    reply = Canned(404, {"error": {"message": f"no canned reply for {self.command} {path}"}})
                if reply.delay:
                    time.sleep(reply.delay)
                if isinstance(reply.body, bytes):
                    payload = reply.body
                elif isinstance(reply.body, str):
                    payload = reply.body.encode("utf-8")
                else:
                    payload = json.dumps(reply.body).encode("utf-8")
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up (a timeout test)
                    self.wfile.write(payload)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def route(self, method: str, path: str, reply: Union[Canned, Callable[[str], Canned]]) -> None:
        self.routes[(method, path)] = reply

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def chat_completion(model: str, usage: Dict[str, Any], service_tier: Optional[str] = None) -> Dict[str, Any]:
    """A Chat Completions response as documented (https://platform.openai.com/docs/api-reference/chat/object)."""
    body: Dict[str, Any] = {
        "id": "chatcmpl-CT0001",
        "object": "chat.completion",
        "created": 1_763_800_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris.", "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
        "system_fingerprint": None,
    }
    if service_tier is not None:
        body["service_tier"] = service_tier
    return body


def chat_usage(
    prompt: int, completion: int, cached: int = 0, reasoning: int = 0, input_audio: int = 0, output_audio: int = 0
) -> Dict[str, Any]:
    """A Chat Completion's ``usage`` with both details objects, as OpenAI documents it
    (https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage): cached and
    input audio tokens are part of ``prompt``, reasoning and output audio tokens part of ``completion``."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": input_audio},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": output_audio,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def responses_usage(input_tokens: int, output_tokens: int, cached: int = 0, reasoning: int = 0) -> Dict[str, Any]:
    """A Responses API ``usage`` as OpenAI documents it
    (https://platform.openai.com/docs/api-reference/responses/object#responses/object-usage):
    cached tokens are part of ``input_tokens``, reasoning tokens part of ``output_tokens``."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def converse_response(
    input_tokens: int,
    output_tokens: int,
    cache_read: int,
    cache_write: int,
    cache_details: Optional[List[Dict[str, Any]]] = None,
    service_tier: Optional[str] = None,
) -> Dict[str, Any]:
    """A Bedrock Converse response as boto3 returns it (the REST JSON's members, camelCase:
    https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html), 850 ms.
    ``totalTokens`` counts the cache reads and writes too; ``cache_details`` is the writes by TTL."""
    usage: Dict[str, Any] = {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens + cache_read + cache_write,
        "cacheReadInputTokens": cache_read,
        "cacheWriteInputTokens": cache_write,
    }
    if cache_details is not None:
        usage["cacheDetails"] = cache_details
    response: Dict[str, Any] = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Paris."}]}},
        "stopReason": "end_turn",
        "usage": usage,
        "metrics": {"latencyMs": 850},
    }
    if service_tier is not None:
        response["serviceTier"] = {"type": service_tier}
    return response


def token_details(count_name: str, **by_modality: int) -> List[Dict[str, Any]]:
    """A Gemini ``*_tokens_details`` list (ModalityTokenCount items), in the order given:
    ``count_name`` is ``"tokenCount"`` in the REST JSON, ``"token_count"`` in the SDK's types."""
    return [{"modality": modality, count_name: count} for modality, count in by_modality.items()]


def anthropic_message(model: str, usage: Dict[str, Any]) -> Dict[str, Any]:
    """A Messages API response as documented (https://docs.claude.com/en/api/messages)."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "Paris."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def gemini_response(model: str, usage: Dict[str, Any]) -> Dict[str, Any]:
    """A generateContent response as documented (REST, camelCase:
    https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse)."""
    return {
        "candidates": [
            {"content": {"parts": [{"text": "Paris."}], "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": "mYkgafHCLK2hz7IPl5yXoAk",
    }


# -- Streams and errors, in each provider's documented wire format --------------------------------


def sse(events: List[Tuple[Optional[str], Any]]) -> str:
    """A ``text/event-stream`` body: each ``(event name or None, data)``; data other than a string
    is JSON (https://html.spec.whatwg.org/multipage/server-sent-events.html)."""
    lines = []
    for name, data in events:
        if name is not None:
            lines.append(f"event: {name}\n")
        lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(lines)


def chat_stream(model: str, usage: Dict[str, Any], chunks: int = 3, include_usage: bool = True) -> str:
    """A Chat Completions stream as documented
    (https://platform.openai.com/docs/api-reference/chat-streaming): ``chunks`` content chunks,
    the last with ``finish_reason``; with ``stream_options.include_usage`` every chunk has
    ``usage: null`` and a last chunk with no choices carries the usage; then ``[DONE]``."""

    def chunk(choices: List[Any], chunk_usage: Any = None) -> Dict[str, Any]:
        body: Dict[str, Any] = {
            "id": "chatcmpl-CT0002",
            "object": "chat.completion.chunk",
            "created": 1_763_800_000,
            "model": model,
            "system_fingerprint": None,
            "choices": choices,
        }
        if include_usage:
            body["usage"] = chunk_usage
        return body

    events: List[Tuple[Optional[str], Any]] = []
    for index in range(chunks):
        last = index == chunks - 1
        delta = {"content": "" if last else f"w{index} "}
        if index == 0:
            delta["role"] = "assistant"
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": "stop" if last else None}
        events.append((None, chunk([choice])))
    if include_usage:
        events.append((None, chunk([], usage)))
    events.append((None, "[DONE]"))
    return sse(events)


def responses_stream(response: Dict[str, Any]) -> str:
    """A Responses API stream as documented (https://platform.openai.com/docs/api-reference/responses-streaming):
    ``response.created`` (no usage yet), the first output item's text (added, delta, done), then
    ``response.completed`` with the whole response (its usage)."""
    created = {**response, "status": "in_progress", "usage": None, "output": []}
    item = response["output"][0]
    part = item["content"][0]
    text = part["text"]
    where = {"item_id": item["id"], "output_index": 0}
    steps: List[Tuple[str, Dict[str, Any]]] = [
        ("response.created", {"response": created}),
        ("response.output_item.added", {"output_index": 0, "item": {**item, "status": "in_progress", "content": []}}),
        ("response.content_part.added", {**where, "content_index": 0, "part": {**part, "text": ""}}),
        ("response.output_text.delta", {**where, "content_index": 0, "delta": text, "logprobs": []}),
        ("response.output_text.done", {**where, "content_index": 0, "text": text, "logprobs": []}),
        ("response.content_part.done", {**where, "content_index": 0, "part": part}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": response}),
    ]
    return sse([(name, {"type": name, "sequence_number": index, **data}) for index, (name, data) in enumerate(steps)])


def anthropic_stream(model: str, usage: Dict[str, Any]) -> str:
    """A Messages stream as documented (https://docs.claude.com/en/docs/build-with-claude/streaming):
    ``message_start`` carries the input counts (output 1), ``message_delta`` the cumulative counts."""
    start_usage = {**usage, "output_tokens": 1}
    message = {**anthropic_message(model, start_usage), "content": [], "stop_reason": None}
    return sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            ("ping", {"type": "ping"}),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Paris."}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": usage},
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def gemini_stream(model: str, usages: List[Dict[str, Any]]) -> str:
    """A streamGenerateContent?alt=sse body: one GenerateContentResponse per event, each with the
    usage so far; the last candidate has ``finishReason``."""
    events: List[Tuple[Optional[str], Any]] = []
    for index, usage in enumerate(usages):
        candidate: Dict[str, Any] = {"content": {"parts": [{"text": f"w{index} "}], "role": "model"}, "index": 0}
        if index == len(usages) - 1:
            candidate["finishReason"] = "STOP"
        events.append((None, {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model}))
    return sse(events)


def event_stream_message(event_type: str, payload: Dict[str, Any]) -> bytes:
    """One message of the AWS event stream encoding (application/vnd.amazon.eventstream: prelude
    with CRC, string headers, JSON payload, message CRC), as ConverseStream sends each event."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        encoded = value.encode("utf-8")
        headers += bytes([len(name)]) + name.encode("ascii") + b"\x07" + struct.pack(">H", len(encoded)) + encoded
    body = json.dumps(payload).encode("utf-8")
    total = 16 + len(headers) + len(body)
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + headers + body
    return message + struct.pack(">I", binascii.crc32(message) & 0xFFFFFFFF)


def converse_stream(response: Dict[str, Any]) -> bytes:
    """A ConverseStream body (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html)
    for the same answer as the Converse ``response``: the message events, then ``metadata`` with
    its usage and metrics."""
    metadata = {"usage": response["usage"], "metrics": response["metrics"]}
    if "serviceTier" in response:
        metadata["serviceTier"] = response["serviceTier"]
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Paris."}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        ("metadata", metadata),
    ]
    return b"".join(event_stream_message(name, payload) for name, payload in events)


def openai_error(status: int, message: str = "The server had an error") -> Canned:
    """An OpenAI (and Azure OpenAI) error reply (https://platform.openai.com/docs/guides/error-codes)."""
    return Canned(status, {"error": {"message": message, "type": "server_error", "param": None, "code": None}})


def anthropic_error(status: int, kind: str = "overloaded_error") -> Canned:
    """An Anthropic error reply (https://docs.claude.com/en/api/errors)."""
    return Canned(status, {"type": "error", "error": {"type": kind, "message": "Overloaded"}})


def gemini_error(status: int, state: str = "INTERNAL") -> Canned:
    """A Gemini API error reply (https://ai.google.dev/gemini-api/docs/troubleshooting)."""
    return Canned(status, {"error": {"code": status, "message": "An internal error has occurred.", "status": state}})


def bedrock_error(status: int, kind: str = "ValidationException") -> Canned:
    """A Bedrock Runtime error reply (restJson1: the type in ``x-amzn-ErrorType``)."""
    return Canned(status, {"message": "The provided model identifier is invalid."}, headers={"x-amzn-ErrorType": kind})


CLIENT_ENVIRONMENT = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)


def isolated_environment(environ: Mapping[str, str], tmp: str) -> Dict[str, str]:
    """``environ`` in which no client finds a real key, a credentials file, a proxy or an
    instance metadata service: the clients call the canned provider and nothing else."""
    isolated = {name: value for name, value in environ.items() if name not in CLIENT_ENVIRONMENT}
    isolated.update(
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=f"{tmp}/aws-config-absent",
        AWS_SHARED_CREDENTIALS_FILE=f"{tmp}/aws-credentials-absent",
        AWS_EC2_METADATA_DISABLED="true",
    )
    return isolated
