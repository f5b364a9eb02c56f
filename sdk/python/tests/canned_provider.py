"""A canned provider on a free 127.0.0.1 port, and the documented responses it answers with.

Used by the provider helpers' tests (test_provider_clients.py, test_providers.py) and by the
OTLP end-to-end tests (tests/e2e/canned_openai.py loads this file: sdk/python/tests is not a
package). Standard library only, so it loads under any interpreter the tests run on.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

Body = Union[Dict[str, Any], List[Any], str]


@dataclass
class Canned:
    status: int = 200
    body: Body = field(default_factory=dict)
    headers: Dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


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
                if isinstance(reply.body, str):
                    payload = reply.body.encode("utf-8")
                else:
                    payload = json.dumps(reply.body).encode("utf-8")
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
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
