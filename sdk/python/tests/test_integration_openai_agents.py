"""``costtrack.integrations.openai_agents`` run by the OpenAI Agents SDK itself: agents with a
tool over several turns, on the Responses API and on Chat Completions, against the canned
OpenAI server on 127.0.0.1; a failed and a timed-out run; the run's identity; and an
instrumented client under the processor (each call tracked once)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from typing import Any, Callable, Dict, Iterator, List

import pytest
from canned_provider import (
    Canned,
    CannedProvider,
    chat_completion,
    chat_usage,
    openai_error,
    responses_stream,
    responses_usage,
)
from instrumented import Recorder, as_helper_gives, failed, without_latency

import costtrack
from costtrack.providers import from_openai

agents = pytest.importorskip("agents")
openai = pytest.importorskip("openai")

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)

from costtrack.integrations.openai_agents import CosttrackTracingProcessor, agents_identity  # noqa: E402

MODEL = "gpt-5-mini-2025-08-07"


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def response(output: List[Dict[str, Any]], usage: Dict[str, Any], number: int) -> Dict[str, Any]:
    """A Responses API response (https://platform.openai.com/docs/api-reference/responses/object)."""
    return {
        "id": f"resp_0{number}",
        "object": "response",
        "created_at": 1_763_800_000,
        "status": "completed",
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "service_tier": "default",
        "usage": usage,
    }


TOOL_CALL = {
    "type": "function_call",
    "id": "fc_01",
    "call_id": "call_01",
    "name": "get_weather",
    "arguments": json.dumps({"city": "Paris"}),
    "status": "completed",
}
ANSWER = {
    "type": "message",
    "id": "msg_01",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Sunny in Paris.", "annotations": []}],
}
TURNS = [
    response([TOOL_CALL], responses_usage(1500, 120, cached=1024, reasoning=64), 1),
    response([ANSWER], responses_usage(1700, 40, cached=1536), 2),
]


def in_turn(replies: List[Canned]) -> Callable[[str], Canned]:
    """A route answering each call with the next reply (the last one again when they run out)."""
    left = list(replies)

    def answer(_url: str) -> Canned:
        return left.pop(0) if len(left) > 1 else left[0]

    return answer


@pytest.fixture
def processor(recorder: Recorder) -> Iterator[CosttrackTracingProcessor]:
    """The processor as the only trace processor (no exporter of the Agents SDK's own)."""
    made = CosttrackTracingProcessor(tracker=recorder, feature="agents")
    set_trace_processors([made])
    try:
        yield made
    finally:
        set_trace_processors([])


def client_for(canned: CannedProvider, **options: Any) -> Any:
    return openai.AsyncOpenAI(base_url=canned.url + "/v1", api_key="test", max_retries=0, **options)


def weather_agent(model: Any) -> Any:
    return Agent(name="Weather", instructions="Answer with the weather.", model=model, tools=[get_weather])


def identity_of(event: Dict[str, Any]) -> Dict[str, Any]:
    """The run identity fields the event has (``trace_id``, ``session_id``, ``parent_id``, ``run_name``)."""
    return {name: event[name] for name in ("trace_id", "session_id", "parent_id", "run_name") if name in event}


def test_a_run_with_a_tool_tracks_each_turn_as_from_openai_prices_it(
    canned: CannedProvider, recorder: Recorder, processor: Any
) -> None:
    canned.route("POST", "/v1/responses", in_turn([Canned(body=turn) for turn in TURNS]))
    agent = weather_agent(OpenAIResponsesModel(model="gpt-5-mini", openai_client=client_for(canned)))
    config = RunConfig(workflow_name="Weather desk", group_id="conv-42")
    with costtrack.attributes(customer_id="cus_1"):
        result = asyncio.run(Runner.run(agent, "Weather in Paris?", run_config=config))

    assert result.final_output == "Sunny in Paris."
    assert [call.json["model"] for call in canned.calls] == ["gpt-5-mini", "gpt-5-mini"]
    assert len(recorder.events) == 2 and not recorder.errors
    trace_ids = set()
    for event, turn in zip(recorder.events, TURNS, strict=True):
        assert re.fullmatch(r"[0-9a-f]{32}", event["trace_id"]), event
        assert re.fullmatch(r"[0-9a-f]{24}", event["parent_id"]), event  # the agent's span
        assert "trace_id" not in event.get("metadata", {})
        trace_ids.add(event["trace_id"])
        assert identity_of(event) == {
            "trace_id": event["trace_id"],
            "session_id": "conv-42",
            "parent_id": event["parent_id"],
            "run_name": "Weather desk",
        }
        as_helper_gives(event, from_openai(turn, feature="agents", customer_id="cus_1", **identity_of(event)))
    assert len(trace_ids) == 1  # one run, one trace
    # The usage the Agents SDK summed for the run is what was tracked, and nothing twice.
    assert sum(event["prompt_tokens"] for event in recorder.events) == result.context_wrapper.usage.input_tokens
    assert sum(e["cached_input_tokens"] for e in recorder.events) == 1024 + 1536
    assert "reasoning_tokens" not in recorder.events[0]  # inside completion_tokens, as OpenAI counts it


def test_chat_completions_turns_sync_run(canned: CannedProvider, recorder: Recorder, processor: Any) -> None:
    tool_turn = chat_completion(MODEL, chat_usage(900, 50, cached=512, reasoning=32))
    tool_turn["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_01", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}
        ],
    }
    tool_turn["choices"][0]["finish_reason"] = "tool_calls"
    answer = chat_completion(MODEL, chat_usage(1000, 20))
    canned.route("POST", "/v1/chat/completions", in_turn([Canned(body=tool_turn), Canned(body=answer)]))
    model = OpenAIChatCompletionsModel(model="gpt-5-mini", openai_client=client_for(canned))
    result = Runner.run_sync(weather_agent(model), "Weather in Oslo?", run_config=RunConfig(workflow_name="Oslo"))

    assert result.final_output == "Paris."
    assert [without_latency(event) for event in recorder.events] == [
        {
            "provider": "openai",
            "model": "gpt-5-mini",  # the model the agent called (the span's)
            "prompt_tokens": 900,
            "completion_tokens": 50,
            "total_tokens": 950,
            "cached_input_tokens": 512,
            "feature": "agents",
            "status": "success",
            **identity_of(recorder.events[0]),
        },
        {
            "provider": "openai",
            "model": "gpt-5-mini",
            "prompt_tokens": 1000,
            "completion_tokens": 20,
            "total_tokens": 1020,
            "feature": "agents",
            "status": "success",
            **identity_of(recorder.events[1]),
        },
    ]
    assert recorder.events[0]["run_name"] == "Oslo" and "metadata" not in recorder.events[0]
    assert recorder.events[0]["trace_id"] == recorder.events[1]["trace_id"]


@pytest.mark.parametrize(
    ("reply", "timeout", "status"),
    [(openai_error(500), 10.0, "error"), (Canned(body=TURNS[1], delay=1.0), 0.2, "timeout")],
)
def test_a_failing_run_tracks_the_failed_call_with_zero_tokens(
    canned: CannedProvider, recorder: Recorder, processor: Any, reply: Canned, timeout: float, status: str
) -> None:
    canned.route("POST", "/v1/responses", reply)
    model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=client_for(canned, timeout=timeout))
    with pytest.raises(openai.APIError):
        asyncio.run(Runner.run(weather_agent(model), "Weather?", run_config=RunConfig(workflow_name="Failing")))
    event = recorder.event
    # The model is the one the failed request asked for.
    expected = failed("openai", "gpt-5-mini", status, feature="agents", **identity_of(event))
    assert without_latency(event) == expected
    assert event["run_name"] == "Failing" and re.fullmatch(r"[0-9a-f]{32}", event["trace_id"])


def test_with_the_client_instrumented_too_each_call_is_tracked_once(
    canned: CannedProvider, recorder: Recorder, processor: Any
) -> None:
    """The instrumented client tracks each call (its exact latency and status) with the run's
    identity; the processor leaves those calls out. Calls of the same client outside a run are
    the client's alone, without identity."""
    canned.route("POST", "/v1/responses", in_turn([Canned(body=turn) for turn in TURNS]))
    client = costtrack.instrument(client_for(canned), tracker=recorder, feature="instrumented")
    agent = weather_agent(OpenAIResponsesModel(model="gpt-5-mini", openai_client=client))

    async def main() -> None:
        await Runner.run(agent, "Weather in Paris?", run_config=RunConfig(workflow_name="Both on"))
        assert len(recorder.events) == 2
        canned.route("POST", "/v1/responses", Canned(body=TURNS[1]))
        await client.responses.create(model="gpt-5-mini", input="Hello")
        await client.close()

    asyncio.run(main())
    assert len(recorder.events) == 3 and not recorder.errors
    for event, turn in zip(recorder.events[:2], TURNS, strict=True):
        assert event["feature"] == "instrumented"  # the client's event, not the processor's
        assert event["run_name"] == "Both on" and re.fullmatch(r"[0-9a-f]{32}", event["trace_id"])
        as_helper_gives(event, from_openai(turn, feature="instrumented", **identity_of(event)))
    assert identity_of(recorder.events[2]) == {}  # outside a run: the client's event alone


@pytest.mark.parametrize("instrumented", [False, True], ids=["processor", "processor+instrumented client"])
def test_a_streamed_run_is_tracked_once_with_its_usage(
    canned: CannedProvider, recorder: Recorder, processor: Any, instrumented: bool
) -> None:
    """``Runner.run_streamed``: the model call streams the Responses API; its usage arrives with
    ``response.completed`` at the stream's end, and the call is tracked once, with it, whether
    the client is instrumented too or not."""
    canned.route("POST", "/v1/responses", Canned(body=responses_stream(TURNS[1]), content_type="text/event-stream"))
    client = client_for(canned)
    if instrumented:
        client = costtrack.instrument(client, tracker=recorder, feature="instrumented")
    agent = Agent(
        name="Weather", instructions="Answer.", model=OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    )

    async def main() -> Any:
        result = Runner.run_streamed(agent, "Weather in Paris?", run_config=RunConfig(workflow_name="Streamed"))
        kinds = [event.type async for event in result.stream_events()]
        assert "raw_response_event" in kinds
        return result

    result = asyncio.run(main())
    assert result.final_output == "Sunny in Paris."
    assert [call.json.get("stream") for call in canned.calls] == [True]
    assert len(recorder.events) == 1 and not recorder.errors
    event = recorder.event
    assert event["run_name"] == "Streamed" and re.fullmatch(r"[0-9a-f]{32}", event["trace_id"])
    # The Agents SDK streams through ``responses.with_streaming_response.create`` and parses the
    # stream: an instrumented client tracks it (and the processor leaves it out), else the processor.
    feature = "instrumented" if instrumented else "agents"
    as_helper_gives(event, from_openai(TURNS[1], feature=feature, **identity_of(event)))
    assert event["prompt_tokens"] == result.context_wrapper.usage.input_tokens == 1700


def test_nothing_is_seen_when_the_agents_tracing_is_off(
    canned: CannedProvider, recorder: Recorder, processor: Any
) -> None:
    canned.route("POST", "/v1/responses", in_turn([Canned(body=turn) for turn in TURNS]))
    agent = weather_agent(OpenAIResponsesModel(model="gpt-5-mini", openai_client=client_for(canned)))
    asyncio.run(Runner.run(agent, "Weather?", run_config=RunConfig(tracing_disabled=True)))
    assert len(canned.calls) == 2 and recorder.events == []


def test_identity_mapping_keeps_only_what_the_contract_allows() -> None:
    assert agents_identity("trace_" + "a" * 32, "conv 42/x", "span_" + "b" * 24, "  Desk  ") == {
        "trace_id": "a" * 32,
        "parent_id": "b" * 24,
        "run_name": "Desk",
    }
    assert agents_identity(None, None, None, "   ") == {}


def test_arguments_and_no_agents_import(recorder: Recorder) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'model'"):
        CosttrackTracingProcessor(tracker=recorder, model="x")
    with pytest.raises(TypeError, match="tracker="):
        CosttrackTracingProcessor(tracker=object())
    code = "import costtrack, costtrack.providers, costtrack.integrations, sys; print('agents' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"
