"""The wrapper of an instrumented client's method: one frame between the caller and the method,
sync or async, that starts a :class:`Call`, retries once where the route allows it, and ends the
call with what the method returned or raised (a timeout's cancellation as ``timeout``).

If costtrack fails internally, the call goes on: the failure goes to the tracker's ``on_error``.
"""

from __future__ import annotations

import inspect
from inspect import isawaitable
from types import GeneratorType
from typing import Any, Awaitable, Callable, Dict, Optional, Set, Tuple

from costtrack._instrument_core import Call, Instrumentation

__all__ = ["Again", "Begin", "Finish", "wrap_call"]


Begin = Callable[[Instrumentation, Dict[str, Any]], Optional[Tuple[Call, Any]]]
Finish = Callable[[Call, Any, Any], Any]
#: ``again(instrumentation, token, error, kwargs)``: the token of one more attempt with
#: ``kwargs`` as it changed them, after ``error``; ``None``: the error stands.
Again = Callable[[Instrumentation, Any, BaseException, Dict[str, Any]], Any]


def _no_retry(instrumentation: Instrumentation, token: Any, error: BaseException, kwargs: Dict[str, Any]) -> Any:
    return None


def wrap_call(
    instrumentation: Instrumentation, begin: Begin, finish: Finish, again: Again = _no_retry
) -> Callable[..., Any]:
    """``make`` for ``Instrumentation.patch``: a wrapper of a method (sync or async) that starts a
    ``Call`` with ``begin(instrumentation, kwargs)`` (``None``: not tracked; else the call and what
    ``finish`` needs, ``kwargs`` possibly changed) and hands the result to ``finish(call, result,
    token)``, which returns what the caller gets: the result itself (a stream instrumented in place)."""

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        # One frame between the caller and the client's method: this runs once per model call.
        async def awaited(call: Call, token: Any, pending: Awaitable[Any], args: Any, kwargs: Any) -> Any:
            try:
                try:
                    result = await pending
                except BaseException as error:
                    retry = _again(again, instrumentation, token, error, kwargs)
                    if retry is None:
                        raise
                    token = retry
                    result = await original(*args, **kwargs)
            except BaseException as error:
                _end_awaited(call, error)
                raise
            try:
                return finish(call, token, result)
            except Exception as error:
                instrumentation.report(error)
                return result

        if inspect.iscoroutinefunction(original):

            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                try:
                    started = begin(instrumentation, kwargs)
                except Exception as error:
                    instrumentation.report(error)
                    started = None
                if started is None:
                    return await original(*args, **kwargs)
                return await awaited(started[0], started[1], original(*args, **kwargs), args, kwargs)

            return async_wrapper

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                started = begin(instrumentation, kwargs)
            except Exception as error:
                instrumentation.report(error)
                started = None
            if started is None:
                return original(*args, **kwargs)
            call, token = started
            try:
                try:
                    result = original(*args, **kwargs)
                except BaseException as error:
                    retry = _again(again, instrumentation, token, error, kwargs)
                    if retry is None:
                        raise
                    token = retry
                    result = original(*args, **kwargs)
            except BaseException as error:
                call.end_with(error)
                raise
            if type(result) not in _NOT_AWAITABLE and _awaitable(result):
                # an async method behind a sync decorator (the clients' required_args)
                return awaited(call, token, result, args, kwargs)
            try:
                return finish(call, token, result)
            except Exception as error:
                instrumentation.report(error)
                return result

        return wrapper

    return make


def _end_awaited(call: Call, error: BaseException) -> None:
    """An awaited call that raised ``error``; a cancellation is ``timeout`` when a timeout made it.

    ``asyncio.timeout`` (and ``asyncio.wait_for`` from Python 3.12) cancel the task and, as the
    cancellation leaves their block, take it back (``Task.uncancel``) and raise ``TimeoutError``
    instead. Inside the call both look alike, so the status is decided once the cancellation has
    left the task's current step: a count of cancellations that dropped is a timeout's."""
    import asyncio  # loaded: this runs in a coroutine

    if type(error) is not asyncio.CancelledError:
        call.end_with(error)
        return
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    if task is None or cancelling is None:
        call.end_with(error)
        return
    count = cancelling()

    def decide() -> None:
        call.finish("timeout" if cancelling() < count else "cancelled")

    try:
        task.get_loop().call_soon(decide)
    except RuntimeError:  # the loop is closing: nothing is left to take the cancellation back
        call.end_with(error)


def _again(again: Again, instrumentation: Instrumentation, token: Any, error: BaseException, kwargs: Any) -> Any:
    if again is _no_retry or not isinstance(error, Exception):
        return None
    try:
        return again(instrumentation, token, error, kwargs)
    except Exception as failure:
        instrumentation.report(failure)
        return None


#: The classes of results seen not to be awaitable (``isawaitable`` asks an ABC: costly per call).
_NOT_AWAITABLE: Set[type] = set()


def _awaitable(result: Any) -> bool:
    if isawaitable(result):
        return True
    if not isinstance(result, GeneratorType):  # a generator's flags, not its class, decide
        _NOT_AWAITABLE.add(type(result))
    return False
