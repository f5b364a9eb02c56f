"""``costtrack.integrations.langchain``: the callback handler on langchain-core's own chat models
(``GenericFakeChatModel`` and a small ``BaseChatModel`` that streams, as the provider packages do,
with LangChain's documented ``usage_metadata`` on its last chunk): invoke, stream, ainvoke, errors,
timeouts and a stream left midway, each tracked once with the usage in the provider's
conventions, its status and latency, and the attribution of ``costtrack.attributes``."""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Dict, Iterator, List, Optional

import pytest
from instrumented import Recorder, without_latency

import costtrack
from costtrack.providers import from_anthropic

pytest.importorskip("langchain_core")
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from costtrack.integrations.langchain import CosttrackCallbackHandler, langchain_provider

# LangChain's documented standard: input_tokens includes the cache reads and writes, output_tokens
# includes the reasoning (langchain_core.messages.ai.UsageMetadata).
OPENAI_USAGE = {
    "input_tokens": 1200,
    "output_tokens": 300,
    "total_tokens": 1500,
    "input_token_details": {"cache_read": 1000},
    "output_token_details": {"reasoning": 200},
}
ANTHROPIC_USAGE = {
    "input_tokens": 2600,
    "output_tokens": 400,
    "total_tokens": 3000,
    "input_token_details": {"cache_read": 2000, "cache_creation": 500},
}
GEMINI_USAGE = {
    "input_tokens": 800,
    "output_tokens": 700,
    "total_tokens": 1500,
    "output_token_details": {"reasoning": 500},
}


def reply(usage: Dict[str, Any], **response_metadata: Any) -> AIMessage:
    return AIMessage(content="Paris.", usage_metadata=usage, response_metadata=response_metadata)  # type: ignore[arg-type]


class StreamingModel(BaseChatModel):
    """A chat model as the provider packages write one: a stream whose last chunk carries the usage
    and the response metadata, or an error raised after ``fail_after`` chunks."""

    usage: Dict[str, Any]
    provider: str = "anthropic"
    model: str = "claude-sonnet-4-5-20250929"
    error: Optional[BaseException] = None
    fail_after: int = 0

    @property
    def _llm_type(self) -> str:
        return "streaming-test"

    def _get_ls_params(self, stop: Optional[List[str]] = None, **kwargs: Any) -> LangSmithParams:
        return LangSmithParams(ls_provider=self.provider, ls_model_name=self.model, ls_model_type="chat")

    def _generate(
        self,
        messages: List[BaseMessage],
        stop: Optional[List[str]] = None,
        run_manager: Optional[CallbackManagerForLLMRun] = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.error is not None:
            raise self.error
        message = AIMessage(content="Paris.", usage_metadata=self.usage, response_metadata={"model_name": self.model})  # type: ignore[arg-type]
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: List[BaseMessage],
        stop: Optional[List[str]] = None,
        run_manager: Optional[CallbackManagerForLLMRun] = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for index, word in enumerate(["The ", "capital ", "is ", "Paris."]):
            if self.error is not None and index == self.fail_after:
                raise self.error
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))
        last = AIMessageChunk(content="", usage_metadata=self.usage, response_metadata={"model_name": self.model})  # type: ignore[arg-type]
        yield ChatGenerationChunk(message=last)


def event_of(recorder: Recorder) -> Dict[str, Any]:
    event = recorder.event
    assert isinstance(event["latency_ms"], int) and 0 <= event["latency_ms"] < 10_000, event
    return without_latency(event)


def test_invoke_tracks_the_openai_usage_as_given(recorder: Recorder) -> None:
    model = GenericFakeChatModel(
        messages=iter(
            [reply(OPENAI_USAGE, model_name="gpt-5-mini-2025-08-07", model_provider="openai", service_tier="default")]
        )
    )
    handler = CosttrackCallbackHandler(tracker=recorder, feature="chat")
    with costtrack.attributes(customer_id="cus_42", metadata={"team": "search"}):
        assert model.invoke("Capital of France?", config={"callbacks": [handler]}).content == "Paris."
    assert event_of(recorder) == {
        "provider": "openai",
        "model": "gpt-5-mini-2025-08-07",
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "cached_input_tokens": 1000,
        "feature": "chat",
        "customer_id": "cus_42",
        "metadata": {"team": "search", "service_tier": "default"},
        "status": "success",
    }


def test_stream_takes_the_cache_out_of_anthropics_prompt_as_from_anthropic_does(recorder: Recorder) -> None:
    model = StreamingModel(usage=ANTHROPIC_USAGE)
    handler = CosttrackCallbackHandler(tracker=recorder, customer_name="Acme")
    chunks = [chunk.content for chunk in model.stream("Capital of France?", config={"callbacks": [handler]})]
    assert "".join(str(c) for c in chunks) == "The capital is Paris."
    # The same call through Anthropic's own API reports input_tokens without the cache.
    message = {
        "model": "claude-sonnet-4-5-20250929",
        "usage": {
            "input_tokens": 100,
            "output_tokens": 400,
            "cache_read_input_tokens": 2000,
            "cache_creation_input_tokens": 500,
        },
    }
    expected = from_anthropic(message, customer_name="Acme")
    assert event_of(recorder) == {**expected, "status": "success"}


def test_ainvoke_passes_geminis_reasoning_apart(recorder: Recorder) -> None:
    model = StreamingModel(usage=GEMINI_USAGE, provider="google_genai", model="gemini-2.5-flash")
    handler = CosttrackCallbackHandler(tracker=recorder)

    async def main() -> Any:
        with costtrack.attributes(feature="async"):
            return await model.ainvoke("Capital of France?", config={"callbacks": [handler]})

    assert asyncio.run(main()).content == "Paris."
    assert event_of(recorder) == {
        "provider": "google",
        "model": "gemini-2.5-flash",
        "prompt_tokens": 800,
        "completion_tokens": 200,
        "reasoning_tokens": 500,
        "feature": "async",
        "status": "success",
    }


@pytest.mark.parametrize(
    ("error", "status"),
    [(RuntimeError("rate limited"), "error"), (TimeoutError("read timed out"), "timeout")],
)
def test_a_failed_call_is_tracked_with_zero_tokens_and_its_status(
    recorder: Recorder, error: BaseException, status: str
) -> None:
    model = StreamingModel(usage=ANTHROPIC_USAGE, error=error)
    handler = CosttrackCallbackHandler(tracker=recorder, provider="bedrock")
    with pytest.raises(type(error)) as raised:
        model.invoke("Capital of France?", config={"callbacks": [handler]})
    assert raised.value is error
    assert event_of(recorder) == {
        "provider": "bedrock",
        "model": "claude-sonnet-4-5-20250929",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "status": status,
    }


def test_a_stream_left_midway_is_cancelled(recorder: Recorder) -> None:
    model = StreamingModel(usage=ANTHROPIC_USAGE)
    handler = CosttrackCallbackHandler(tracker=recorder)
    stream = model.stream("Capital of France?", config={"callbacks": [handler]})
    assert next(stream).content == "The "
    stream.close()
    assert event_of(recorder) == {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5-20250929",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "status": "cancelled",
    }


def test_a_stream_failing_midway_is_an_error(recorder: Recorder) -> None:
    model = StreamingModel(
        usage=OPENAI_USAGE, provider="openai", model="gpt-5", error=ConnectionError("reset"), fail_after=2
    )
    handler = CosttrackCallbackHandler(tracker=recorder)
    with pytest.raises(ConnectionError):
        list(model.stream("Capital of France?", config={"callbacks": [handler]}))
    assert event_of(recorder)["status"] == "error"


def test_each_run_of_a_batch_is_one_event(recorder: Recorder) -> None:
    model = GenericFakeChatModel(messages=iter([reply(OPENAI_USAGE, model_name="gpt-5", model_provider="openai")] * 3))
    handler = CosttrackCallbackHandler(tracker=recorder)
    model.batch(["a", "b", "c"], config={"callbacks": [handler]})
    assert [event["prompt_tokens"] for event in recorder.events] == [1200, 1200, 1200]
    assert not recorder.errors


def test_a_tracker_failure_never_reaches_the_call() -> None:
    class Broken(Recorder):
        def track(self, event: Any) -> None:
            raise RuntimeError("tracker down")

    broken = Broken()
    model = GenericFakeChatModel(messages=iter([reply(OPENAI_USAGE, model_name="gpt-5")]))
    assert model.invoke("hi", config={"callbacks": [CosttrackCallbackHandler(tracker=broken)]}).content == "Paris."
    assert [str(error) for error in broken.errors] == ["tracker down"]


def test_arguments_are_checked_and_costtrack_does_not_import_langchain(recorder: Recorder) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'customer'"):
        CosttrackCallbackHandler(tracker=recorder, customer="x")
    with pytest.raises(TypeError, match="tracker="):
        CosttrackCallbackHandler(tracker=None)
    assert langchain_provider("Google_GenAI") == "google" and langchain_provider("groq") == "groq"
    import subprocess

    code = "import costtrack, costtrack.providers, costtrack.integrations, sys; print('langchain_core' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def fake_model(count: int = 1) -> GenericFakeChatModel:
    message = reply(OPENAI_USAGE, model_name="gpt-5-mini-2025-08-07", model_provider="openai")
    return GenericFakeChatModel(messages=iter([message] * count))


def test_a_chains_run_ids_are_the_trace_and_the_parent(recorder: Recorder) -> None:
    """A model run inside a chain: its trace_id is the root run's id, its parent_id its parent
    run's; a tool and a retriever (langchain-core's own) start runs of the same trace."""
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool

    seen: Dict[str, Any] = {}

    class Ids(BaseCallbackHandler):  # LangChain's own account of the run ids
        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, **kwargs: Any) -> None:
            if kwargs.get("parent_run_id") is None:
                seen["root"] = str(run_id)

        def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any) -> None:
            seen.setdefault("parents", []).append(str(kwargs["parent_run_id"]))

    model = fake_model(2)

    @tool
    def ask(question: str) -> str:
        """Ask the model."""
        return str(model.invoke(question).content)

    handler = CosttrackCallbackHandler(tracker=recorder, feature="chat")
    chain = RunnableLambda(lambda text: f"{text}?") | model | RunnableLambda(lambda m: ask.invoke(str(m.content)))
    assert chain.invoke("Capital of France", config={"callbacks": [handler, Ids()]}) == "Paris."
    assert not recorder.errors and len(recorder.events) == 2
    assert [event["trace_id"] for event in recorder.events] == [seen["root"], seen["root"]]
    assert [event["parent_id"] for event in recorder.events] == seen["parents"]
    assert seen["parents"][0] == seen["root"] and seen["parents"][1] != seen["root"]  # the tool's run
    assert handler._roots == {}  # forgotten when the root run ended

    chain = RunnableLambda(lambda text: text) | fake_model()  # a new root: a new trace
    chain.invoke("Again", config={"callbacks": [handler]})
    assert recorder.events[2]["trace_id"] not in (seen["root"], None) and handler._roots == {}


def test_context_run_ids_win_and_a_lone_model_run_has_none(recorder: Recorder) -> None:
    from langchain_core.runnables import RunnableLambda

    handler = CosttrackCallbackHandler(tracker=recorder)
    chain = RunnableLambda(lambda text: text) | fake_model(2)
    with costtrack.attributes(trace_id="req-7", parent_id="step-1"):
        chain.invoke("Capital?", config={"callbacks": [handler]})
    assert recorder.events[0]["trace_id"] == "req-7" and recorder.events[0]["parent_id"] == "step-1"
    with costtrack.Tracker(enabled=False).run("answer") as run:  # tracker.run sets trace_id only
        chain.invoke("Capital?", config={"callbacks": [handler]})
    assert recorder.events[1]["trace_id"] == run.trace_id and recorder.events[1]["parent_id"] != "step-1"
    fake_model().invoke("Capital?", config={"callbacks": [handler]})
    assert "trace_id" not in recorder.events[2] and "parent_id" not in recorder.events[2]


def test_a_failing_chain_forgets_its_runs(recorder: Recorder) -> None:
    from langchain_core.runnables import RunnableLambda

    def fail(_: Any) -> str:
        raise ValueError("no")

    handler = CosttrackCallbackHandler(tracker=recorder)
    chain = RunnableLambda(lambda text: text) | fake_model() | RunnableLambda(fail)
    with pytest.raises(ValueError, match="no"):
        chain.invoke("Capital?", config={"callbacks": [handler]})
    assert recorder.events[0]["trace_id"] and handler._roots == {}
