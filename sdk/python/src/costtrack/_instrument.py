"""``instrument(client, tracker=...)``: every model call of a provider's client tracked, without a
line at each call site; ``uninstrument(client)`` undoes it.

The client *instance* is changed, never its class: its resource objects
(``client.chat.completions``, ``client.messages``, ``client.models``...) get an instance attribute
that shadows the method of their class, so other clients of the same class are untouched and
``uninstrument`` deletes the attributes again. Bedrock Runtime (boto3) is instrumented through
botocore's own event hooks instead. No provider package is imported: a client is recognised by
the module of its class, and what it returns is read with the provider helpers' own readers
(``costtrack._provider_usage``), so an instrumented call is priced exactly as
``costtrack.providers.from_*`` would price its response.

What happens in the caller's code is unchanged: the same return value, the same exception, the
same stream chunks (bar the usage-only chunk that costtrack asked for and the caller did not). If
costtrack fails internally, the call goes on and the failure is reported to the tracker's
``on_error``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from costtrack import _instrument_clients as clients
from costtrack import _instrument_google_aws as google_aws
from costtrack._conventions import ROUTES
from costtrack._instrument_core import DEFAULT_FIELDS, Instrumentation

__all__ = ["instrument", "instrumenter_for", "uninstrument"]

#: Where an instrumented client keeps how to undo its instrumentation.
_STATE = "_costtrack_instrumentation"

Apply = Callable[[Instrumentation, Any], None]


def instrumenter_for(client: Any) -> Optional[Tuple[str, Apply]]:
    """The provider id and the function that instruments ``client``; ``None`` for a client not known."""
    found = _route_of(client)
    return None if found is None else (found[1], found[2])


def _route_of(client: Any) -> Optional[Tuple[str, str, Apply]]:
    """The client's name in spec/usage-conventions.json's routes, its provider and its instrumenter."""
    for cls in type(client).__mro__:
        package = cls.__module__.split(".", 1)[0]
        if package == "openai":
            name = "AzureOpenAI" if "Azure" in type(client).__name__ else "OpenAI"
            return name, ROUTES[(name, "chat.completions.create")][0], clients.instrument_openai
        if package == "anthropic":
            name = type(client).__name__
            name = "AnthropicBedrock" if "Bedrock" in name else "AnthropicVertex" if "Vertex" in name else "Anthropic"
            return name, ROUTES[(name, "messages.create")][0], clients.instrument_anthropic
        if cls.__module__.startswith("google.genai"):
            return "genai.Client", ROUTES[("genai.Client", "models.generate_content")][0], google_aws.instrument_genai
        if package == "botocore" and _service(client) == "bedrock-runtime":
            return "bedrock-runtime", ROUTES[("bedrock-runtime", "converse")][0], google_aws.instrument_bedrock
    return None


def _service(client: Any) -> Optional[str]:
    try:
        return str(client.meta.service_model.service_id.hyphenize())
    except Exception:
        return None


def instrument(client: Any, *, tracker: Any, stream_usage: Union[bool, str] = "auto", **defaults: Any) -> Any:
    """Track every model call of ``client`` with ``tracker``; returns ``client`` itself.

    ``client`` is an ``openai`` client (``OpenAI``, ``AsyncOpenAI``, ``AzureOpenAI``...), an
    ``anthropic`` one (``Anthropic``, ``AsyncAnthropic``, ``AnthropicBedrock``,
    ``AnthropicVertex``...), a ``google.genai.Client``, or a boto3 ``bedrock-runtime`` client.
    ``defaults`` (``feature``, ``customer_id``, ``customer_name``, ``environment``, ``metadata``,
    and ``provider`` to name an OpenAI-compatible API) go into every event of the client, under
    what ``costtrack.attributes`` sets around a call. Instrumenting a client again switches it
    to the latest ``tracker``, ``defaults`` and ``stream_usage`` (it is never tracked twice).
    A client made from an instrumented one (``with_options()``, ``copy()``) is instrumented
    the same way; ``uninstrument`` undoes both.

    ``stream_usage`` decides whether a streamed Chat Completion that does not ask for its usage
    is sent with ``stream_options={"include_usage": true}`` (the usage chunk is kept from the
    caller): ``"auto"`` (default) adds it, and when the server answers 400 naming
    ``stream_options`` (older Azure api-versions, some OpenAI-compatible servers) makes the call
    once more without it and stops adding it for this client; ``True`` always adds it; ``False``
    never does. A stream tracked without its usage has zero tokens, ``metadata.usage_missing``,
    and an ``on_warning`` warning of code ``usage_missing``.
    """
    if stream_usage not in (True, False, "auto"):
        raise TypeError("instrument() stream_usage must be True, False or 'auto'")
    unknown = sorted(set(defaults) - set(DEFAULT_FIELDS))
    if unknown:
        raise TypeError(f"instrument() got an unexpected keyword argument {unknown[0]!r}")
    if not callable(getattr(tracker, "track", None)):
        raise TypeError("instrument() needs tracker=, a costtrack.Tracker")
    found = _route_of(client)
    if found is None:
        raise TypeError(f"costtrack.instrument() does not know {type(client).__module__}.{type(client).__qualname__}")
    route, provider, apply = found
    instrumented = getattr(client, "__dict__", {}).get(_STATE)
    if instrumented is not None:
        instrumented.use(tracker, defaults, stream_usage)
        for child in list(instrumented.children):
            instrument(child, tracker=tracker, stream_usage=stream_usage, **defaults)
        return client
    instrumentation = Instrumentation(tracker, provider, defaults, stream_usage, route)
    apply(instrumentation, client)
    for name in _DERIVE:
        instrumentation.patch(client, name, lambda original: _deriving(instrumentation, original))
    setattr(client, _STATE, instrumentation)
    return client


#: The methods of an openai / anthropic client that make another client from it.
_DERIVE = ("copy", "with_options", "with_middleware")


def _deriving(instrumentation: Instrumentation, original: Callable[..., Any]) -> Callable[..., Any]:
    """``copy`` / ``with_options`` of an instrumented client: the client it makes is
    instrumented with the same tracker and defaults, and ``uninstrument`` of this one undoes it."""

    def derive(*args: Any, **kwargs: Any) -> Any:
        made = original(*args, **kwargs)
        try:
            instrument(
                made,
                tracker=instrumentation.tracker,
                stream_usage=instrumentation.stream_usage,
                **instrumentation.given,
            )
            instrumentation.children.add(made)
        except Exception as error:
            instrumentation.report(error)
        return made

    return derive


def uninstrument(client: Any) -> Any:
    """Undo ``instrument(client)``; returns ``client``. A client not instrumented is left as it is."""
    instrumentation = getattr(client, "__dict__", {}).pop(_STATE, None)
    if instrumentation is not None:
        for undo in reversed(instrumentation.undo):
            undo()
        for child in list(instrumentation.children):
            uninstrument(child)
    return client
