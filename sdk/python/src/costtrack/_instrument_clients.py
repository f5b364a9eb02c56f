"""How the OpenAI and Anthropic clients are instrumented (Google's and Bedrock's:
``_instrument_google_aws``). No provider package is imported."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from costtrack._instrument_core import USAGE_MISSING, Call, Instrumentation
from costtrack._instrument_raw import wrap_call
from costtrack._instrument_streams import Watcher, instrument_stream
from costtrack._provider_events import Usage, get
from costtrack._provider_usage import anthropic_usage, openai_fields, openai_usage

__all__ = ["instrument_anthropic", "instrument_openai"]

# -- OpenAI: Chat Completions and Responses (also Azure OpenAI and OpenAI-compatible APIs) --------


def instrument_openai(instrumentation: Instrumentation, client: Any) -> None:
    completions = getattr(getattr(client, "chat", None), "completions", None)
    responses = getattr(client, "responses", None)
    embeddings = getattr(client, "embeddings", None)
    if embeddings is not None:
        instrumentation.patch(embeddings, "create", wrap_call(instrumentation, _embeddings_begin, _embeddings_finish))
    for method in ("create", "parse"):
        if completions is not None:
            instrumentation.patch(
                completions, method, wrap_call(instrumentation, _chat_begin, _chat_finish, _chat_again)
            )
        if responses is not None:
            instrumentation.patch(responses, method, wrap_call(instrumentation, _responses_begin, _responses_finish))
    if responses is not None:
        instrument_response_polls(instrumentation, responses)


#: ``_chat_begin``'s token for a call that does not stream.
_NOT_STREAMED = (False, False, False)


def _chat_begin(instrumentation: Instrumentation, kwargs: Dict[str, Any]) -> Optional[Tuple[Call, Any]]:
    if kwargs.get("stream") is not True:
        return Call(instrumentation, kwargs.get("model")), _NOT_STREAMED
    options = kwargs.get("stream_options")
    options = options if isinstance(options, Mapping) else {}
    if "include_usage" not in options and _asks_usage(instrumentation):
        # ask for the usage chunk, and keep it from the caller
        kwargs["stream_options"] = {**options, "include_usage": True}
        return Call(instrumentation, kwargs.get("model")), (True, True, True)
    return Call(instrumentation, kwargs.get("model")), (True, False, bool(options.get("include_usage")))


def _asks_usage(instrumentation: Instrumentation) -> bool:
    """``instrument(stream_usage=)``: ``True`` asks always, ``False`` never, ``"auto"`` until the
    server has refused the parameter once."""
    wanted = instrumentation.stream_usage
    return wanted is True or (wanted == "auto" and not instrumentation.stream_usage_refused)


def _chat_again(instrumentation: Instrumentation, token: Any, error: BaseException, kwargs: Dict[str, Any]) -> Any:
    """A server that rejects ``stream_options`` (older Azure api-versions, some OpenAI-compatible
    servers: 400 naming it) that costtrack added (``"auto"``): the call is made once more
    without it, as the caller wrote it, and this client does not ask again."""
    if not (isinstance(token, tuple) and token[1]) or instrumentation.stream_usage != "auto":
        return None
    if getattr(error, "status_code", None) != 400 or "stream_options" not in str(error):
        return None
    instrumentation.stream_usage_refused = True
    del kwargs["stream_options"]
    return (True, False, False)


def _chat_finish(call: Call, token: Tuple[bool, bool, bool], result: Any) -> Any:
    if token is _NOT_STREAMED:  # the response's usage fields are copied; read on the delivery thread
        call.finish_response("success", openai_usage, result, openai_fields)
        return result
    return instrument_stream(result, _ChatWatcher(call, token[1], token[2]))


class _ChatWatcher(Watcher):
    """The stream is complete at its usage chunk (or, when the caller turned usage off, at a
    ``finish_reason``); the usage-only chunk costtrack asked for is kept from the caller."""

    __slots__ = ("_chunk", "_expected", "_hide", "_last", "_model")

    def __init__(self, call: Call, hide: bool, expected: bool) -> None:
        super().__init__(call)
        self._hide = hide
        self._expected = expected
        self._last: Any = None
        self._model: Any = None
        self._chunk: Any = None

    def see(self, chunk: Any) -> bool:
        self._model = get(chunk, "model") or self._model
        choices = get(chunk, "choices")
        if get(chunk, "usage") is not None:
            self._last = chunk
            self.complete = True
            return self._hide and not choices
        self._chunk = chunk
        if not self._expected and any(get(choice, "finish_reason") for choice in choices or ()):
            self.complete = True
        return False

    def tail(self) -> bool:
        """The last chunk read ended the answer; the usage chunk comes next."""
        chunk = self._chunk
        return (
            self._expected
            and self._last is None
            and chunk is not None
            and any(get(choice, "finish_reason") for choice in get(chunk, "choices") or ())
        )

    def usage(self) -> Optional[Usage]:
        if self._last is None:
            if not self._expected:
                self.call.warn_usage_missing(_NO_STREAM_USAGE)
            return (self._model, {}, {USAGE_MISSING: _NO_STREAM_USAGE} if not self._expected else {})
        return openai_usage(self._last, self.call.convention)


#: Why a streamed chat completion has no usage: it did not ask (``stream_usage``) for it.
_NO_STREAM_USAGE = "stream_without_usage"


def _embeddings_begin(instrumentation: Instrumentation, kwargs: Dict[str, Any]) -> Optional[Tuple[Call, Any]]:
    return Call(instrumentation, kwargs.get("model")), None


def _embeddings_finish(call: Call, token: None, result: Any) -> Any:
    """An embedding has prompt tokens only: its completion is 0."""
    model, counts, pricing = openai_usage(result, call.convention)
    if counts.get("completion_tokens") is None and counts.get("prompt_tokens") is not None:
        counts["completion_tokens"] = 0
    call.finish("success", (model, counts, pricing))
    return result


def _responses_begin(instrumentation: Instrumentation, kwargs: Dict[str, Any]) -> Optional[Tuple[Call, Any]]:
    return Call(instrumentation, kwargs.get("model")), kwargs.get("stream") is True


def _responses_finish(call: Call, stream: bool, result: Any) -> Any:
    if stream:
        return instrument_stream(result, _ResponsesWatcher(call))
    status = _RESPONSE_STATUS.get(get(result, "status"))
    if status is None:  # a background response, not done yet: tracked by the retrieve that sees it done
        response_id = get(result, "id")
        if isinstance(response_id, str):
            _background(call).wait(response_id, call)
            return result
        status = "success"
    call.finish_response(status, openai_usage, result, openai_fields)
    return result


#: A response's status once it is done (``queued`` and ``in_progress`` are not).
_RESPONSE_STATUS = {"completed": "success", "incomplete": "success", "failed": "error", "cancelled": "cancelled"}


class Background:
    """The background responses (``background=True``) of one client that are not done yet, by
    id: each is tracked once, with its real usage, by the ``retrieve`` (or ``cancel``) that
    first sees it done; its call (attribution, reservation, start) is the ``create``'s."""

    #: At most this many waiting at once (the oldest is tracked without usage to make room).
    LIMIT = 10_000

    def __init__(self) -> None:
        self.waiting: Dict[str, Call] = {}

    def wait(self, response_id: str, call: Call) -> None:
        if len(self.waiting) >= self.LIMIT:
            oldest = next(iter(self.waiting))
            self.waiting.pop(oldest).finish("success", (None, {}, {USAGE_MISSING: "background_not_retrieved"}))
        self.waiting[response_id] = call

    def seen(self, result: Any) -> None:
        status = _RESPONSE_STATUS.get(get(result, "status"))
        if status is None or not self.waiting:
            return
        call = self.waiting.pop(get(result, "id"), None)
        if call is not None:
            call.finish_response(status, openai_usage, result, openai_fields)


def _background(call: Call) -> Background:
    return call.instrumentation_state("responses_background", Background)


def instrument_response_polls(instrumentation: Instrumentation, responses: Any) -> None:
    """``retrieve`` and ``cancel`` of ``client.responses``: a background response seen done
    is tracked (sync or async)."""
    background = instrumentation.state("responses_background", Background)

    def make(original: Any) -> Any:
        if inspect.iscoroutinefunction(original):

            async def poll_async(*args: Any, **kwargs: Any) -> Any:
                result = await original(*args, **kwargs)
                _seen(instrumentation, background, result)
                return result

            return poll_async

        def poll(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if inspect.isawaitable(result):
                return _seen_later(instrumentation, background, result)
            _seen(instrumentation, background, result)
            return result

        return poll

    for method in ("retrieve", "cancel"):
        instrumentation.patch(responses, method, make)


def _seen(instrumentation: Instrumentation, background: Background, result: Any) -> None:
    try:
        background.seen(result)
    except Exception as error:
        instrumentation.report(error)


async def _seen_later(instrumentation: Instrumentation, background: Background, pending: Any) -> Any:
    result = await pending
    _seen(instrumentation, background, result)
    return result


_RESPONSES_ENDS = {"response.completed": False, "response.incomplete": False, "response.failed": True}


class _ResponsesWatcher(Watcher):
    __slots__ = ("_response",)

    def __init__(self, call: Call) -> None:
        super().__init__(call)
        self._response: Any = None

    def see(self, event: Any) -> bool:
        kind = get(event, "type")
        if kind in _RESPONSES_ENDS:
            self._response = get(event, "response")
            self.complete = True
            self.failed = _RESPONSES_ENDS[kind]
        elif kind == "response.created" and self._response is None:
            self._response = get(event, "response")
        elif kind == "error":
            self.failed = True
        return False

    def usage(self) -> Optional[Usage]:
        if self._response is None:
            return None
        return openai_usage(self._response, self.call.convention)


# -- Anthropic: Messages and message streams (also the Bedrock and Vertex clients of the SDK) ----


def instrument_anthropic(instrumentation: Instrumentation, client: Any) -> None:
    """``messages`` and ``beta.messages`` (whose tool runner calls ``beta.messages.create``)."""
    for messages in (getattr(client, "messages", None), getattr(getattr(client, "beta", None), "messages", None)):
        if messages is None:
            continue
        for method in ("create", "parse"):
            instrumentation.patch(messages, method, wrap_call(instrumentation, _anthropic_begin, _anthropic_finish))
        instrumentation.patch(messages, "stream", lambda original: _message_stream(instrumentation, original))


def _anthropic_begin(instrumentation: Instrumentation, kwargs: Dict[str, Any]) -> Optional[Tuple[Call, Any]]:
    return instrumentation.call(kwargs.get("model")), kwargs.get("stream") is True


def _anthropic_finish(call: Call, stream: bool, result: Any) -> Any:
    if not stream:
        call.finish("success", anthropic_usage(result))
        return result
    return instrument_stream(result, _AnthropicWatcher(call))


def _message_stream(instrumentation: Instrumentation, original: Callable[..., Any]) -> Callable[..., Any]:
    """``messages.stream(...)``: its manager makes the request when entered, through a private
    callable (sync) or awaitable (async) that is wrapped here, so the raw stream it gets (whose
    ``close`` the ``MessageStream`` calls) is instrumented."""

    def stream(*args: Any, **kwargs: Any) -> Any:
        manager = original(*args, **kwargs)
        try:
            _hook_manager(instrumentation, manager, kwargs.get("model"))
        except Exception as error:
            instrumentation.report(error)
        return manager

    return stream


def _hook_manager(instrumentation: Instrumentation, manager: Any, model: Any) -> None:
    name = next((key for key in vars(manager) if key.endswith("__api_request")), None)
    if name is None:
        raise RuntimeError(f"costtrack cannot instrument {type(manager).__name__}: no __api_request")
    request = vars(manager)[name]

    if inspect.isawaitable(request):

        async def api_request_async() -> Any:
            call = instrumentation.call(model)
            try:
                raw = await request
            except BaseException as error:
                call.fail(error)
                raise
            return _instrumented_raw(call, raw)

        setattr(manager, name, api_request_async())
        return

    def api_request() -> Any:
        call = instrumentation.call(model)
        try:
            raw = request()
        except BaseException as error:
            call.fail(error)
            raise
        return _instrumented_raw(call, raw)

    setattr(manager, name, api_request)


def _instrumented_raw(call: Call, raw: Any) -> Any:
    try:
        return instrument_stream(raw, _AnthropicWatcher(call))
    except Exception as error:
        call.report(error)
        return raw


_ANTHROPIC_USAGE = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cache_creation",
    "server_tool_use",
    "service_tier",
    "speed",
)


class _AnthropicWatcher(Watcher):
    """``message_start`` names the model and the input counts; each ``message_delta`` carries the
    cumulative counts so far (they win); ``message_stop`` ends the stream."""

    __slots__ = ("_delta", "_model", "_start")

    def __init__(self, call: Call) -> None:
        super().__init__(call)
        self._model: Any = None
        self._start: Any = None
        self._delta: Any = None

    def see(self, event: Any) -> bool:
        kind = get(event, "type")
        if kind == "message_start":
            message = get(event, "message")
            self._model = get(message, "model")
            self._start = get(message, "usage")
        elif kind == "message_delta":
            self._delta = get(event, "usage")
            if get(get(event, "delta"), "stop_reason") is not None:
                self.complete = True  # its usage is the call's final count
        elif kind == "message_stop":
            self.complete = True
        return False

    def usage(self) -> Optional[Usage]:
        if self._start is None and self._delta is None:
            return (self._model, {}, {})
        merged = {}
        for name in _ANTHROPIC_USAGE:
            value = get(self._delta, name)
            merged[name] = get(self._start, name) if value is None else value
        return anthropic_usage({"model": self._model, "usage": merged})
