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


def watch_sync(iterator: Iterator[Any], watcher: Watcher) -> Iterator[Any]:
    try:
        for item in iterator:
            if not watcher.show(item):
                yield item
    except GeneratorExit:
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
        watcher.stop()
        raise
    except BaseException as error:
        watcher.end(status_of(error))
        raise
    watcher.end("success")


class Close:
    """A stream's ``close``, shadowed on the instance: the call ends (``cancelled`` unless the
    stream's end was seen), then the class's own ``close`` runs (for an async stream, the
    coroutine it returns is returned to be awaited)."""

    __slots__ = ("_stream", "_watcher")

    def __init__(self, stream: Any, watcher: Watcher) -> None:
        self._stream = weakref.ref(stream)
        self._watcher = watcher

    def __call__(self) -> Any:
        self._watcher.stop()
        stream = self._stream()
        if stream is None:
            return None
        return type(stream).close(stream)


def instrument_stream(stream: Any, watcher: Watcher) -> Any:
    """``stream`` (openai / anthropic ``Stream`` or ``AsyncStream``) with its items watched."""
    iterator = stream._iterator
    if hasattr(iterator, "__anext__"):
        stream._iterator = watch_async(iterator, watcher)
    else:
        stream._iterator = watch_sync(iterator, watcher)
    stream.close = Close(stream, watcher)
    return stream
