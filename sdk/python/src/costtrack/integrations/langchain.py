"""The LangChain integration (``pip install "costtrack[langchain]"``): a callback handler that
tracks every chat model (and LLM) run as one event, with its latency and status::

    from costtrack.integrations.langchain import CosttrackCallbackHandler

    handler = CosttrackCallbackHandler(tracker=tracker, feature="chat")
    model.invoke("Say hello", config={"callbacks": [handler]})

The usage is LangChain's standard ``AIMessage.usage_metadata``: ``input_tokens`` counts all input
(``input_token_details.cache_read`` and ``cache_creation`` included) and ``output_tokens`` all
output (``output_token_details.reasoning`` included), for every provider. costtrack's Anthropic and
Bedrock prompts exclude the cache and its Gemini completion excludes reasoning, so those are
taken out (``costtrack.integrations._usage``): no token is charged twice. Without
``usage_metadata`` (an LLM rather than a chat model), ``llm_output["token_usage"]`` is read as given.

LangChain's run ids name the run: for a model run inside another run (a chain, a tool,
a retriever), the id of the outermost run the handler saw is the event's ``trace_id`` and the
model run's parent run id its ``parent_id``, unless ``costtrack.attributes`` or ``tracker.run``
set them. A model run on its own gets neither: it is a call, not a run.

Only this module imports ``langchain_core``; ``import costtrack`` never does.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from costtrack._instrument_core import status_of
from costtrack._provider_events import Usage, get
from costtrack.integrations._usage import Run, all_in_usage, instrumentation, run_identity

__all__ = ["CosttrackCallbackHandler", "langchain_provider"]

#: LangChain's provider names (``ls_provider``, ``response_metadata["model_provider"]``) that are
#: not costtrack's provider id as they are.
_PROVIDERS = {
    "google_genai": "google",
    "google-genai": "google",
    "google_vertexai": "google",
    "google-vertexai": "google",
    "vertexai": "google",
    "amazon_bedrock": "bedrock",
    "bedrock_converse": "bedrock",
    "azure_openai": "azure",
    "azureopenai": "azure",
    "mistralai": "mistral",
    "togetherai": "together",
    "fireworks-ai": "fireworks",
}

#: Runs that never ended (a stream its reader dropped without closing it) are forgotten beyond this.
_MAX_RUNS = 10_000


def langchain_provider(name: Any) -> Optional[str]:
    """costtrack's provider id for a LangChain provider name (``openai``, ``google_genai``...)."""
    if not isinstance(name, str) or not name.strip():
        return None
    key = name.strip().lower()
    return _PROVIDERS.get(key, key)


def _messages(result: Any) -> Iterable[Any]:
    """The message of each generation of an ``LLMResult``."""
    for group in get(result, "generations") or ():
        for generation in group or ():
            message = get(generation, "message")
            if message is not None:
                yield message


def _text(source: Any, *names: str) -> Optional[str]:
    value = get(source, *names)
    return value if isinstance(value, str) and value else None


def _usage(result: Any, run: Run) -> tuple[str, Optional[Usage]]:
    """The provider and what ``result`` (an ``LLMResult``) says of the run's usage."""
    messages: List[Any] = list(_messages(result))
    message = next((m for m in messages if isinstance(get(m, "usage_metadata"), Mapping)), None)
    if message is None and messages:
        message = messages[0]
    response_metadata = get(message, "response_metadata")
    llm_output = get(result, "llm_output")
    model = _text(response_metadata, "model_name", "model", "model_id") or _text(llm_output, "model_name", "model")
    provider = run.provider_for(langchain_provider(get(response_metadata, "model_provider")))
    usage = get(message, "usage_metadata")
    if isinstance(usage, Mapping):
        inputs, outputs = get(usage, "input_token_details"), get(usage, "output_token_details")
        pricing: Dict[str, Any] = {
            "service_tier": get(response_metadata, "service_tier"),
            "input_audio_tokens": get(inputs, "audio"),
            "output_audio_tokens": get(outputs, "audio"),
            "cache_write_5m_tokens": get(inputs, "ephemeral_5m_input_tokens"),
            "cache_write_1h_tokens": get(inputs, "ephemeral_1h_input_tokens"),
        }
        return provider, all_in_usage(
            provider,
            model,
            prompt=get(usage, "input_tokens"),
            completion=get(usage, "output_tokens"),
            cache_read=get(inputs, "cache_read"),
            cache_write=get(inputs, "cache_creation"),
            reasoning=get(outputs, "reasoning"),
            total=get(usage, "total_tokens"),
            pricing=pricing,
        )
    token_usage = get(llm_output, "token_usage", "usage")
    if token_usage is None:
        return provider, (model, {}, {})
    counts = {
        "prompt_tokens": get(token_usage, "prompt_tokens", "input_tokens"),
        "completion_tokens": get(token_usage, "completion_tokens", "output_tokens"),
    }
    return provider, (model, counts, {})


class CosttrackCallbackHandler(BaseCallbackHandler):
    """Tracks every chat model and LLM run as one event: its usage (read from the generations'
    ``usage_metadata``), ``latency_ms`` (run start to end) and ``status`` (``success``, or from
    the error: ``error``, ``timeout``, ``cancelled``, with zero tokens unless LangChain passes the
    usage seen before the error). ``defaults`` are those of ``costtrack.instrument`` (``feature``,
    ``customer_id``, ``customer_name``, ``environment``, ``metadata``, ``provider``), under what
    ``costtrack.attributes`` sets where the run starts.

    The provider is ``provider=``, else the message's ``response_metadata["model_provider"]``,
    else LangChain's ``ls_provider``; the model is the response's ``model_name`` (or ``model``,
    ``model_id``), else the run's ``ls_model_name`` or invocation ``model``.

    Pass it where LangChain takes callbacks: ``config={"callbacks": [handler]}`` of a call or a
    chain (every model run inside), or a model's ``callbacks=[handler]``. It runs inline, so the
    event is tracked before the call returns."""

    raise_error = False
    run_inline = True

    def __init__(self, *, tracker: Any, **defaults: Any) -> None:
        super().__init__()
        self._instrumentation = instrumentation("CosttrackCallbackHandler", tracker, defaults)
        self._runs: Dict[UUID, Run] = {}
        self._roots: Dict[UUID, UUID] = {}  # each run in progress -> the outermost run it is in
        self._lock = threading.Lock()

    # -- run ids: trace_id and parent_id -------------------------------------------------------

    def _enter(self, run_id: UUID, parent_run_id: Optional[UUID]) -> UUID:
        """Remember the run's root (its parent's root; a parent this handler never saw is the
        root) and return it."""
        with self._lock:
            root = run_id if parent_run_id is None else self._roots.get(parent_run_id, parent_run_id)
            if len(self._roots) >= _MAX_RUNS:
                self._roots.pop(next(iter(self._roots)))
            self._roots[run_id] = root
            return root

    def _leave(self, run_id: UUID) -> None:
        """A run ended: forgotten; when it is a root, so is every run under it still remembered."""
        with self._lock:
            if self._roots.pop(run_id, None) == run_id:
                for run in [run for run, root in self._roots.items() if root == run_id]:
                    del self._roots[run]

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._enter(run_id, kwargs.get("parent_run_id"))

    def on_tool_start(self, serialized: Any, input_str: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._enter(run_id, kwargs.get("parent_run_id"))

    def on_retriever_start(self, serialized: Any, query: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._enter(run_id, kwargs.get("parent_run_id"))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id)

    # -- model runs ----------------------------------------------------------------------------

    def _begin(self, run_id: UUID, metadata: Optional[Mapping[str, Any]], kwargs: Mapping[str, Any]) -> None:
        try:
            parent = kwargs.get("parent_run_id")
            root = self._enter(run_id, parent)
            # A model run on its own is a call, not a run: no trace_id of its own id.
            identity = {} if parent is None else run_identity(trace_id=str(root), parent_id=str(parent))
            params = kwargs.get("invocation_params")
            model = _text(metadata, "ls_model_name") or _text(params, "model", "model_name", "model_id")
            run = Run(self._instrumentation, langchain_provider(get(metadata, "ls_provider")), model, identity=identity)
            with self._lock:
                if len(self._runs) >= _MAX_RUNS:
                    self._runs.pop(next(iter(self._runs)))
                self._runs[run_id] = run
        except Exception as error:  # never in the way
            self._instrumentation.report(error)

    def _end(self, run_id: UUID, status: str, result: Any) -> None:
        self._leave(run_id)
        with self._lock:
            run = self._runs.pop(run_id, None)
        if run is None:
            return
        try:
            provider, usage = _usage(result, run) if result is not None else (run.provider_for(), None)
        except Exception as error:
            self._instrumentation.report(error)
            provider, usage = run.provider_for(), None
        run.finish(status, usage, provider)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, metadata: Optional[Dict[str, Any]] = None, **kwargs: Any
    ) -> None:
        self._begin(run_id, metadata, kwargs)

    def on_llm_start(
        self, serialized: Any, prompts: Any, *, run_id: UUID, metadata: Optional[Dict[str, Any]] = None, **kwargs: Any
    ) -> None:
        self._begin(run_id, metadata, kwargs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, "success", response)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, status_of(error), kwargs.get("response"))
