"""Instrumenting google-genai's ``Client`` (``models.generate_content`` and its stream, sync and
``client.aio``; Gemini API and Vertex AI alike) and a boto3 ``bedrock-runtime`` client (Converse
and ConverseStream, through botocore's event hooks). No provider package is imported."""

from __future__ import annotations

import itertools
import json
import weakref
from typing import Any, Dict, Optional, Tuple

from costtrack._instrument_core import USAGE_MISSING, Call, Instrumentation, status_of
from costtrack._instrument_streams import Close, Watcher, watch_async, watch_sync
from costtrack._instrument_wrapper import wrap_call
from costtrack._pricing_metadata import as_count
from costtrack._provider_events import Usage, get
from costtrack._provider_usage import bedrock_usage, gemini_usage

__all__ = ["instrument_bedrock", "instrument_genai"]

# -- google-genai ----------------------------------------------------------------------------


def instrument_genai(instrumentation: Instrumentation, client: Any) -> None:
    """Each model call of ``generate_content`` is its own event: automatic function calling (and
    automatic continuation) makes several inside one ``generate_content``, each through
    ``_generate_content``, whose usage is its own (the response returned has the last one's)."""
    aio = getattr(client, "aio", None)
    for models in (getattr(client, "models", None), getattr(aio, "models", None)):
        if models is None:
            continue
        each_call = "_generate_content" if callable(getattr(models, "_generate_content", None)) else "generate_content"
        instrumentation.patch(models, each_call, wrap_call(instrumentation, _genai_begin, _genai_response))
        instrumentation.patch(models, "embed_content", wrap_call(instrumentation, _genai_begin, _genai_embedding))
        instrumentation.patch(
            models, "generate_content_stream", wrap_call(instrumentation, _genai_begin, _genai_stream)
        )


def _genai_begin(instrumentation: Instrumentation, kwargs: Dict[str, Any]) -> Tuple[Call, None]:
    return instrumentation.call(kwargs.get("model")), None


def _genai_response(call: Call, token: None, response: Any) -> Any:
    call.finish("success", gemini_usage(response))
    return response


def _genai_embedding(call: Call, token: None, response: Any) -> Any:
    """Vertex AI counts each embedding's tokens (``statistics.token_count``); the Gemini API
    reports none (tracked without usage: ``metadata.usage_missing``)."""
    counts = [get(get(embedding, "statistics"), "token_count") for embedding in get(response, "embeddings") or ()]
    if counts and all(isinstance(count, (int, float)) for count in counts):
        call.finish("success", (None, {"prompt_tokens": int(sum(counts)), "completion_tokens": 0}, {}))
    else:
        call.finish("success", (None, {}, {USAGE_MISSING: "not_reported"}))
    return response


def _genai_stream(call: Call, token: None, chunks: Any) -> Any:
    """The stream is a generator (an async one for ``client.aio``): the caller gets one that
    yields the same chunks."""
    watcher = _GeminiWatcher(call)
    if hasattr(chunks, "__anext__"):
        return watch_async(chunks, watcher)
    return watch_sync(chunks, watcher)


class _GeminiWatcher(Watcher):
    """Each chunk's ``usage_metadata`` counts everything so far: the last one is the call's; a
    candidate's ``finish_reason`` marks the end."""

    __slots__ = ("_last",)

    def __init__(self, call: Call) -> None:
        super().__init__(call)
        self._last: Any = None

    def see(self, chunk: Any) -> bool:
        if get(chunk, "usage_metadata") is not None:
            self._last = chunk
        if any(get(candidate, "finish_reason") is not None for candidate in get(chunk, "candidates") or ()):
            self.complete = True
        return False

    def usage(self) -> Optional[Usage]:
        return None if self._last is None else gemini_usage(self._last)


# -- Amazon Bedrock Runtime (boto3 / botocore) --------------------------------------------------

_OPERATIONS = ("Converse", "ConverseStream", "InvokeModel", "InvokeModelWithResponseStream")
_CONTEXT_KEY = "costtrack_call"
_ids = itertools.count()


def instrument_bedrock(instrumentation: Instrumentation, client: Any) -> None:
    """Handlers of botocore's events for each call of Converse / ConverseStream:
    ``before-parameter-build`` starts the call (``modelId`` is in its parameters),
    ``after-call`` tracks it from the parsed response (or its HTTP error) and instruments a
    ConverseStream's event stream, ``after-call-error`` tracks a call that got no response."""
    events = client.meta.events
    unique = f"costtrack-{next(_ids)}"
    handlers = {
        "before-parameter-build": _begin(instrumentation),
        "after-call": _after_call,
        "after-call-error": _error,
    }
    for operation in _OPERATIONS:
        for stage, handler in handlers.items():
            name = f"{stage}.bedrock-runtime.{operation}"
            unique_id = f"{unique}-{stage}-{operation}"
            events.register(name, handler, unique_id=unique_id)
            instrumentation.undo.append(
                lambda name=name, unique_id=unique_id: events.unregister(name, unique_id=unique_id)
            )


def _begin(instrumentation: Instrumentation) -> Any:
    def before_parameter_build(params: Any = None, context: Any = None, **kwargs: Any) -> None:
        try:
            if isinstance(context, dict):
                context[_CONTEXT_KEY] = instrumentation.call(get(params, "modelId"))
        except Exception as error:
            instrumentation.report(error)

    return before_parameter_build


def _after_call(
    http_response: Any = None, parsed: Any = None, model: Any = None, context: Any = None, **kwargs: Any
) -> None:
    call = context.pop(_CONTEXT_KEY, None) if isinstance(context, dict) else None
    if call is None:
        return
    try:
        if getattr(http_response, "status_code", 500) >= 300:
            call.finish("error")
        elif getattr(model, "name", None) == "ConverseStream":
            _instrument_event_stream(get(parsed, "stream"), _BedrockWatcher(call))
        elif getattr(model, "name", None) == "InvokeModel":
            call.finish("success", _invoke_usage(getattr(http_response, "headers", None), call.model))
        elif getattr(model, "name", None) == "InvokeModelWithResponseStream":
            _instrument_event_stream(get(parsed, "body"), _InvokeWatcher(call))
        else:
            call.finish("success", bedrock_usage(parsed, call.model))
    except Exception as error:
        call.report(error)
        call.finish("success")


def _error(exception: Any = None, context: Any = None, **kwargs: Any) -> None:
    call = context.pop(_CONTEXT_KEY, None) if isinstance(context, dict) else None
    if call is not None and isinstance(exception, BaseException):
        call.fail(exception)


class _BedrockWatcher(Watcher):
    """ConverseStream's events: ``metadata`` (the last) carries the usage."""

    __slots__ = ("_metadata",)

    def __init__(self, call: Call) -> None:
        super().__init__(call)
        self._metadata: Any = None

    def read(self, event: Any) -> None:
        """A parsed event (the raw ones, which ``see`` gets, say nothing)."""
        try:
            metadata = get(event, "metadata")
        except Exception as error:
            self.call.report(error)
            return
        if metadata is not None:
            self._metadata = metadata
            self.complete = True

    def usage(self) -> Optional[Usage]:
        if self._metadata is None:
            return None
        return bedrock_usage(self._metadata, self.call.model)


#: InvokeModel's counts, in its response headers (the body is the model's own JSON, which
#: costtrack leaves unread for the caller).
_INVOKE_HEADERS = {
    "prompt_tokens": "x-amzn-bedrock-input-token-count",
    "completion_tokens": "x-amzn-bedrock-output-token-count",
    "cached_input_tokens": "x-amzn-bedrock-cache-read-input-token-count",
    "cache_write_tokens": "x-amzn-bedrock-cache-write-input-token-count",
}
#: InvokeModelWithResponseStream's counts, in the last chunk's ``amazon-bedrock-invocationMetrics``.
_INVOKE_METRICS = {
    "prompt_tokens": "inputTokenCount",
    "completion_tokens": "outputTokenCount",
    "cached_input_tokens": "cacheReadInputTokenCount",
    "cache_write_tokens": "cacheWriteInputTokenCount",
}


def _invoke_usage(headers: Any, model: Optional[str]) -> Usage:
    counts: Dict[str, Any] = {}
    for name, header in _INVOKE_HEADERS.items():
        value = headers.get(header) if headers is not None else None
        counts[name] = int(value) if isinstance(value, str) and value.isdigit() else None
    return model, counts, {}


class _InvokeWatcher(_BedrockWatcher):
    """InvokeModelWithResponseStream: each event is a ``chunk`` of the model's own JSON; the
    last one carries ``amazon-bedrock-invocationMetrics`` with the call's counts."""

    __slots__ = ()

    def read(self, event: Any) -> None:
        chunk = get(get(event, "chunk"), "bytes")
        if not isinstance(chunk, (bytes, bytearray)) or b"amazon-bedrock-invocationMetrics" not in chunk:
            return
        try:
            metrics = json.loads(chunk).get("amazon-bedrock-invocationMetrics")
        except (ValueError, AttributeError) as error:
            self.call.report(error)
            return
        if isinstance(metrics, dict):
            self._metadata = metrics
            self.complete = True

    def usage(self) -> Optional[Usage]:
        if self._metadata is None:
            return None
        counts = {name: as_count(self._metadata.get(key)) for name, key in _INVOKE_METRICS.items()}
        return self.call.model, counts, {}


class _ParseEvent:
    """An ``EventStream``'s ``_parse_event``, shadowed on the instance: each parsed event is shown
    to the watcher; an error event (raised here by botocore) ends the call."""

    __slots__ = ("_stream", "_watcher")

    def __init__(self, stream: Any, watcher: _BedrockWatcher) -> None:
        self._stream = weakref.ref(stream)
        self._watcher = watcher

    def __call__(self, event: Any) -> Any:
        stream = self._stream()
        try:
            parsed = type(stream)._parse_event(stream, event)
        except BaseException as error:
            self._watcher.end(status_of(error))
            raise
        if parsed:
            self._watcher.read(parsed)
        return parsed


def _instrument_event_stream(stream: Any, watcher: _BedrockWatcher) -> None:
    """botocore's ``EventStream`` iterates ``_event_generator`` (raw events) through
    ``_parse_event``: the first tells the stream's end, the second what each event says."""
    stream._event_generator = watch_sync(stream._event_generator, watcher)
    stream._parse_event = _ParseEvent(stream, watcher)
    stream.close = Close(stream, watcher)
