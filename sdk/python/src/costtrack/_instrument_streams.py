"""Streams of instrumented calls: each item is shown to a ``Watcher`` on its way to the caller, and
the call is tracked when the stream ends (``success``, or ``error`` / ``timeout`` from the exception
it raised) or is closed before its end (``cancelled``).

A provider client's stream object (openai's and anthropic's ``Stream``, botocore's
``EventStream``) is instrumented in place, so the caller keeps the very object the client
returned: its ``_iterator`` (the generator its ``__iter__`` and ``__next__`` read) is wrapped,
and its ``close`` is shadowed on the instance. Neither keeps a strong reference to the stream
(that would make a cycle and leave a dropped stream to the garbage collector).
"""

from __future__ import annotations

import weakref
from typing import Any, AsyncIterator, Iterator, Optional

from costtrack._instrument_core import Call, status_of
from costtrack._provider_events import Usage

__all__ = ["Close", "Watcher", "instrument_stream", "watch_async", "watch_sync"]


class Watcher:
    """What one stream's items say about its call. A provider's watcher overrides ``see`` (and
    sets ``complete`` on the stream's last event) and ``usage``."""

    __slots__ = ("call", "complete", "failed")

    def __init__(self, call: Call) -> None:
        self.call = call
        #: The stream's own end was seen: closing it now loses nothing.
        self.complete = False
        #: The stream said the call failed (an error event that the client does not raise).
        self.failed = False

    def see(self, item: Any) -> bool:
        """Read ``item``; ``True`` keeps it from the caller (the usage chunk costtrack asked for)."""
        return False

    def usage(self) -> Optional[Usage]:
        return None

    def tail(self) -> bool:
        """The answer is over but the usage that the provider sends after it is still to come
        (Chat Completions' usage chunk after ``finish_reason``): a caller who stops reading
        here has not lost it; closing the stream reads it first. Asked only then, so no chunk
        pays for it."""
        return False

    def end(self, status: str) -> None:
        if self.call.done:
            return
        try:
            usage = self.usage()
        except Exception as error:
            self.call.report(error)
            usage = None
        self.call.finish("error" if self.failed and status == "success" else status, usage)

    def stop(self) -> None:
        """The stream was closed (or dropped) before its iterator ended."""
        self.end("success" if self.complete else "cancelled")

    def show(self, item: Any) -> bool:
        try:
            return self.see(item)
        except Exception as error:
            self.call.report(error)
            return False


#: How many items past the answer's end closing a stream reads to find its usage (the usage
#: chunk follows the last ``finish_reason`` at once; the bound keeps a server that goes on
#: from holding the caller).
_TAIL_ITEMS = 16


def read_tail(iterator: Iterator[Any], watcher: Watcher, show: bool = True) -> None:
    """The usage that follows the answer's end, read from ``iterator`` before it is closed
    (``show=False``: ``iterator`` is the watched one, which shows the watcher each item)."""
    if watcher.complete or not watcher.tail():
        return
    try:
        for count, item in enumerate(iterator):
            if show:
                watcher.show(item)
            if watcher.complete or count >= _TAIL_ITEMS:
                return
    except Exception as error:  # the stream broke: what was read stands
        watcher.call.report(error)


async def aread_tail(iterator: AsyncIterator[Any], watcher: Watcher, show: bool = True) -> None:
    if watcher.complete or not watcher.tail():
        return
    count = 0
    try:
        async for item in iterator:
            if show:
                watcher.show(item)
            count += 1
            if watcher.complete or count > _TAIL_ITEMS:
                return
    except Exception as error:
        watcher.call.report(error)


def watch_sync(iterator: Iterator[Any], watcher: Watcher) -> Iterator[Any]:
    try:
        for item in iterator:
            if not watcher.show(item):
                yield item
    except GeneratorExit:
        read_tail(iterator, watcher)
        watcher.stop()
        raise
    except BaseException as error:
        watcher.end(status_of(error))
        raise
    watcher.end("success")


async def watch_async(iterator: AsyncIterator[Any], watcher: Watcher) -> AsyncIterator[Any]:
    try:
        async for item in iterator:
            if not watcher.show(item):
                yield item
    except GeneratorExit:
        await aread_tail(iterator, watcher)
        watcher.stop()
        raise
    except BaseException as error:
        watcher.end(status_of(error))
        raise
    watcher.end("success")


def _detached(stream: Any) -> Any:
    """The items of a Stainless client's ``stream`` (openai, anthropic), from a generator that
    does not hold the stream: the class's ``__stream__`` run on a shallow copy of it (the same
    response, client and decoder). The stream's own generator holds the stream itself (a
    cycle, which only a garbage collection would end); without it, a dropped stream is
    finalized at once, while what it reads from is still open. Any other stream: its
    ``_iterator`` as it is."""
    iterator = stream._iterator
    make = getattr(type(stream), "__stream__", None)
    if make is None or not hasattr(stream, "__dict__"):
        return iterator
    try:
        shadow = object.__new__(type(stream))  # a shallow copy, without copy's protocol lookups
        shadow.__dict__.update(vars(stream))
        shadow._iterator = None
        return make(shadow)
    except Exception:
        return iterator


class Close:
    """A stream's ``close``, shadowed on the instance: the call ends (``cancelled`` unless the
    stream's end was seen), then the class's own ``close`` runs (for an async stream, the
    coroutine it returns is returned to be awaited)."""

    __slots__ = ("_stream", "_watcher")

    def __init__(self, stream: Any, watcher: Watcher) -> None:
        self._stream = weakref.ref(stream)
        self._watcher = watcher

    def __call__(self) -> Any:
        stream = self._stream()
        watcher = self._watcher
        if stream is not None and not watcher.complete and not watcher.call.done and watcher.tail():
            rest = stream._iterator
            if hasattr(rest, "__anext__"):
                return self._read_tail_then_close(stream, rest)
            read_tail(rest, watcher, show=False)
        watcher.stop()
        if stream is None:
            return None
        return type(stream).close(stream)

    async def _read_tail_then_close(self, stream: Any, rest: AsyncIterator[Any]) -> Any:
        await aread_tail(rest, self._watcher, show=False)
        self._watcher.stop()
        return await type(stream).close(stream)


def instrument_stream(stream: Any, watcher: Watcher) -> Any:
    """``stream`` (openai / anthropic ``Stream`` or ``AsyncStream``) with its items watched."""
    iterator = _detached(stream)
    if hasattr(iterator, "__anext__"):
        stream._iterator = watch_async(iterator, watcher)
    else:
        stream._iterator = watch_sync(iterator, watcher)
    stream.close = Close(stream, watcher)
    return stream
