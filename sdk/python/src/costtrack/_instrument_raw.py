"""``with_raw_response`` and ``with_streaming_response`` of the Stainless clients (openai,
anthropic): the method returns the HTTP response, and the call is tracked from what it parses.

* ``with_raw_response`` (the ``X-Stainless-Raw-Response: raw`` header, ``true`` in older
  clients): the body is read; the
  parsed object is made at once (the response caches it, so the caller's ``parse()`` gets the
  very object tracked; a stream is instrumented in place before the caller reads it).
* ``with_streaming_response`` (``stream``): the body is unread. The call is tracked when the
  caller parses it (``parse()``) or reads it as JSON (``json()``); a response closed without
  either is tracked without usage (``metadata.usage_missing``: costtrack does not read a body
  the caller reads as bytes or lines).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from costtrack import _instrument_wrapper as wrapper
from costtrack._instrument_core import USAGE_MISSING, Call, Instrumentation
from costtrack._instrument_wrapper import Again, Begin, Finish

__all__ = ["raw_mode", "wrap_call"]

_HEADER = "x-stainless-raw-response"
#: Why a ``with_streaming_response`` call has no usage: its body was not parsed by the client.
_NOT_PARSED = "raw_body_not_parsed"


def raw_mode(kwargs: Mapping[str, Any]) -> Optional[str]:
    """``stream`` for ``with_streaming_response``, ``raw`` (or ``true``) for
    ``with_raw_response``; else ``None``."""
    headers = kwargs.get("extra_headers")
    if headers is None or not isinstance(headers, Mapping):
        return None
    for name, value in headers.items():
        if isinstance(name, str) and name.lower() == _HEADER:
            return str(value).lower()
    return None


class _Raw:
    __slots__ = ("mode", "streamed", "token")

    def __init__(self, mode: str, streamed: bool, token: Any) -> None:
        self.mode = mode
        self.streamed = streamed
        self.token = token


def wrap_call(
    instrumentation: Instrumentation, begin: Begin, finish: Finish, again: Optional[Again] = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``wrapper.wrap_call`` for a Stainless resource's method, its raw-response calls included."""

    def raw_begin(instrumentation: Instrumentation, kwargs: Dict[str, Any]) -> Optional[Tuple[Call, Any]]:
        started = begin(instrumentation, kwargs)
        if started is None or kwargs.get("extra_headers") is None:
            return started
        mode = raw_mode(kwargs)
        if mode is None:
            return started
        return started[0], _Raw(mode, kwargs.get("stream") is True, started[1])

    def raw_finish(call: Call, token: Any, result: Any) -> Any:
        if type(token) is not _Raw:
            return finish(call, token, result)
        if token.mode == "stream":
            _watch_response(call, token, result, finish)
        else:  # "raw" ("true" in older clients): the body is read
            finish(call, token.token, result.parse())
        return result

    def raw_again(instrumentation: Instrumentation, token: Any, error: BaseException, kwargs: Dict[str, Any]) -> Any:
        assert again is not None
        if type(token) is not _Raw:
            return again(instrumentation, token, error, kwargs)
        retried = again(instrumentation, token.token, error, kwargs)
        return None if retried is None else _Raw(token.mode, token.streamed, retried)

    if again is None:
        return wrapper.wrap_call(instrumentation, raw_begin, raw_finish)
    return wrapper.wrap_call(instrumentation, raw_begin, raw_finish, raw_again)


def _watch_response(call: Call, token: _Raw, response: Any, finish: Finish) -> None:
    """``parse``, ``json`` and ``close`` of a ``with_streaming_response`` response, shadowed on
    the instance: the first of them that sees the body tracks the call."""

    def parsed(value: Any, plain: bool) -> Any:
        if call.done:
            return value
        try:
            if plain and token.streamed:  # the JSON of a stream's body: not a response
                return value
            returned = finish(call, token.token, value)
            return value if plain else returned
        except Exception as error:
            call.report(error)
            return value

    for name, plain in (("parse", False), ("json", True)):
        original = getattr(response, name, None)
        if original is None:
            continue
        if inspect.iscoroutinefunction(original):

            async def shadow_async(*args: Any, __original: Any = original, __plain: bool = plain, **kwargs: Any) -> Any:
                return parsed(await __original(*args, **kwargs), __plain)

            setattr(response, name, shadow_async)
        else:

            def shadow(*args: Any, __original: Any = original, __plain: bool = plain, **kwargs: Any) -> Any:
                return parsed(__original(*args, **kwargs), __plain)

            setattr(response, name, shadow)

    close = getattr(response, "close", None)
    if close is None:
        return

    def closing(*args: Any, **kwargs: Any) -> Any:
        if not call.done:
            call.warn_usage_missing(_NOT_PARSED)
            call.finish("success", (None, {}, {USAGE_MISSING: _NOT_PARSED}))
        return close(*args, **kwargs)

    response.close = closing
