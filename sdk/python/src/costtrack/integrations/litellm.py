"""The LiteLLM integration: a ``CustomLogger`` that tracks every completion LiteLLM makes as one
event, with its latency and status::

    import litellm
    from costtrack.integrations.litellm import CosttrackLogger

    litellm.callbacks = [CosttrackLogger(tracker=tracker, feature="chat")]

LiteLLM dispatches to a callback object only if it is an instance of its ``CustomLogger``
(``isinstance``; any other object is skipped in silence), so when ``litellm`` is installed the
class below subclasses it; costtrack never depends on litellm, and this module imports it only
to subclass it. The hooks are those LiteLLM documents: ``log_success_event(kwargs, response_obj,
start_time, end_time)``, ``log_failure_event``, and their ``async_`` variants.

The usage is the response's ``usage``, OpenAI-shaped whatever the provider (``prompt_tokens``
with ``prompt_tokens_details.cached_tokens``, ``completion_tokens`` with
``completion_tokens_details.reasoning_tokens``), read by ``from_openai``'s reader; LiteLLM counts
cache reads and writes in the prompt and reasoning in the completion for every provider, so for
Anthropic and Bedrock the cache is taken out of the prompt and for Gemini the reasoning out of
the completion, as costtrack prices them (``costtrack.integrations._usage``).
"""

from __future__ import annotations

import datetime
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from costtrack._conventions import ROUTES
from costtrack._instrument_core import status_of
from costtrack._provider_events import Usage, get
from costtrack._provider_usage import openai_usage
from costtrack.integrations._usage import Run, all_in_usage, instrumentation

__all__ = ["CosttrackLogger", "litellm_provider"]

if TYPE_CHECKING:
    _Base = object
else:
    try:  # LiteLLM calls only its own CustomLogger's subclasses
        from litellm.integrations.custom_logger import CustomLogger as _Base
    except ImportError:  # litellm is not a dependency: the hooks are LiteLLM's documented ones
        _Base = object

#: LiteLLM's ``custom_llm_provider`` values that are not costtrack's provider id as they are.
_PROVIDERS = {
    "gemini": "google",
    "vertex_ai": "google",
    "vertex_ai_beta": "google",
    "together_ai": "together",
    "fireworks_ai": "fireworks",
    "cohere_chat": "cohere",
    "text-completion-openai": "openai",
    "azure_text": "azure",
}
#: Calls already tracked (by ``litellm_call_id``): a call is tracked once whichever hooks run.
_SEEN_MAX = 10_000


def litellm_provider(custom_llm_provider: Any, model: Any = None) -> Optional[str]:
    """costtrack's provider id for LiteLLM's ``custom_llm_provider`` (Claude on Vertex AI is
    ``anthropic``: Anthropic's models and conventions, sold by Google)."""
    if not isinstance(custom_llm_provider, str) or not custom_llm_provider.strip():
        return None
    key = custom_llm_provider.strip().lower()
    if key.startswith("vertex_ai") and isinstance(model, str) and "claude" in model.lower():
        return "anthropic"
    return _PROVIDERS.get(key, key)


def _latency_ms(start_time: Any, end_time: Any) -> Optional[int]:
    """LiteLLM's ``start_time`` / ``end_time`` (``datetime``, or seconds as floats)."""
    try:
        elapsed = end_time - start_time
        seconds = elapsed.total_seconds() if isinstance(elapsed, datetime.timedelta) else float(elapsed)
    except Exception:
        return None
    return int(seconds * 1000 + 0.5) if seconds >= 0 else None


def _identity(kwargs: Mapping[str, Any], response: Any) -> tuple[Optional[str], Optional[str]]:
    """The provider and the model: ``custom_llm_provider`` (top level or in ``litellm_params``)
    and the model called (``kwargs["model"]``, without LiteLLM's ``provider/`` prefix), else
    the response's."""
    params = get(kwargs, "litellm_params")
    named = get(kwargs, "custom_llm_provider") or get(params, "custom_llm_provider")
    model = get(kwargs, "model")
    if not isinstance(model, str) or not model:
        model = get(response, "model")
    model = model if isinstance(model, str) and model else None
    if model is not None and isinstance(named, str) and model.startswith(named + "/"):
        model = model[len(named) + 1 :]
    return litellm_provider(named, model), model


def _usage(provider: str, response: Any, model: Optional[str]) -> Usage:
    # LiteLLM's counts follow OpenAI's convention whatever the provider (spec/usage-conventions.json)
    found_model, counts, pricing = openai_usage(response, ROUTES[("litellm", "completion")][1])
    usage = get(response, "usage")
    cache_write = counts.get("cache_write_tokens") or get(usage, "cache_creation_input_tokens")
    reasoning = get(get(usage, "completion_tokens_details"), "reasoning_tokens")
    return all_in_usage(
        provider,
        model or found_model,
        prompt=counts.get("prompt_tokens"),
        completion=counts.get("completion_tokens"),
        cache_read=counts.get("cached_input_tokens"),
        cache_write=cache_write,
        reasoning=reasoning,
        total=counts.get("total_tokens"),
        pricing=pricing,
    )


class CosttrackLogger(_Base):
    """Tracks every LiteLLM completion (sync, async, streamed) as one event: its usage,
    ``latency_ms`` (LiteLLM's ``end_time - start_time``) and ``status`` (``success``, or from
    ``kwargs["exception"]``: ``error``, ``timeout``, ``cancelled``, with zero tokens).
    ``defaults`` are those of ``costtrack.instrument`` (``feature``, ``customer_id``,
    ``customer_name``, ``environment``, ``metadata``, ``provider``), under what
    ``costtrack.attributes`` sets where the call is made (taken in ``log_pre_api_call``, on the
    caller's thread, as LiteLLM runs its sync success hooks on a thread pool)."""

    def __init__(self, *, tracker: Any, **defaults: Any) -> None:
        super().__init__()
        self._instrumentation = instrumentation("CosttrackLogger", tracker, defaults)
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._attribution: OrderedDict[str, Dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        """LiteLLM calls this on the caller's thread (or task) before the request; its sync
        success and failure hooks run later on a thread pool of its own, where the caller's
        ``costtrack.attributes`` is not in force: the attribution is taken here, by call id."""
        try:
            call_id = get(kwargs, "litellm_call_id")
            if not isinstance(call_id, str):
                return
            fields = self._instrumentation.fields()
            with self._lock:
                self._attribution[call_id] = fields
                if len(self._attribution) > _SEEN_MAX:
                    self._attribution.popitem(last=False)
        except Exception as error:  # never in the way
            self._instrumentation.report(error)

    def _attribution_of(self, kwargs: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
        call_id = get(kwargs, "litellm_call_id")
        if not isinstance(call_id, str):
            return None
        with self._lock:
            return self._attribution.pop(call_id, None)

    def _first_time(self, kwargs: Mapping[str, Any]) -> bool:
        call_id = get(kwargs, "litellm_call_id")
        if not isinstance(call_id, str):
            return True
        with self._lock:
            if call_id in self._seen:
                return False
            self._seen[call_id] = None
            if len(self._seen) > _SEEN_MAX:
                self._seen.popitem(last=False)
        return True

    def _track(self, kwargs: Any, response: Any, start_time: Any, end_time: Any, error: Any) -> None:
        try:
            if not isinstance(kwargs, Mapping) or not self._first_time(kwargs):
                return
            fields = self._attribution_of(kwargs)
            # A stream's whole response, as LiteLLM assembles it for the callbacks.
            response = get(kwargs, "complete_streaming_response") or response
            named, model = _identity(kwargs, response)
            run = Run(self._instrumentation, named, model, timed=False, fields=fields)
            provider = run.provider_for()
            if error is None:
                run.finish("success", _usage(provider, response, model), provider, _latency_ms(start_time, end_time))
            else:
                status = status_of(error) if isinstance(error, BaseException) else "error"
                run.finish(status, None, provider, _latency_ms(start_time, end_time))
        except Exception as failure:  # never in the way
            self._instrumentation.report(failure)

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._track(kwargs, response_obj, start_time, end_time, None)

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._track(kwargs, response_obj, start_time, end_time, get(kwargs, "exception") or "failed")

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self.log_success_event(kwargs, response_obj, start_time, end_time)

    async def async_log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self.log_failure_event(kwargs, response_obj, start_time, end_time)
