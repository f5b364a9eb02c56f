"""``costtrack.instrument`` on the official ``anthropic`` clients against the canned provider:
Messages sync and async, ``create(stream=True)`` and ``messages.stream(...)`` (whole and closed
midway), HTTP errors and timeouts, the Bedrock client of the same SDK; the event is the one
``from_anthropic`` makes of the same message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from canned_provider import Canned, CannedProvider, anthropic_error, anthropic_message, anthropic_stream
from instrumented import Recorder, as_helper_gives, failed, without_latency

import costtrack
from costtrack.providers import from_anthropic

anthropic = pytest.importorskip("anthropic")

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

MODEL = "claude-sonnet-4-5-20250929"
USAGE = {
    "input_tokens": 1200,
    "cache_creation_input_tokens": 3000,
    "cache_read_input_tokens": 10000,
    "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    "output_tokens": 500,
    "service_tier": "standard",
}
MESSAGE = anthropic_message(MODEL, USAGE)
REQUEST: Any = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [{"role": "user", "content": "Hi"}]}


def client_for(canned: CannedProvider, cls: Any = None, timeout: float = 10) -> Any:
    cls = cls or anthropic.Anthropic
    return cls(base_url=canned.url, api_key="test", max_retries=0, timeout=timeout)


def stream_reply(canned: CannedProvider) -> None:
    canned.route("POST", "/v1/messages", Canned(body=anthropic_stream(MODEL, USAGE), content_type="text/event-stream"))


def test_a_message_is_tracked_as_from_anthropic_prices_it(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/messages", Canned(body=MESSAGE))
    client = costtrack.instrument(client_for(canned), tracker=recorder, feature="support")
    message = client.messages.create(**REQUEST)
    assert isinstance(message, anthropic.types.Message)
    as_helper_gives(recorder.event, from_anthropic(message, feature="support"))
    assert recorder.event["metadata"]["cache_write_1h_tokens"] == 2000


def test_async_message(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/messages", Canned(body=MESSAGE))

    async def main() -> Any:
        client = costtrack.instrument(client_for(canned, anthropic.AsyncAnthropic), tracker=recorder)
        message = await client.messages.create(**REQUEST)
        await client.close()
        return message

    message = asyncio.run(main())
    as_helper_gives(recorder.event, from_anthropic(message))


def test_a_raw_stream_adds_up_to_the_message(canned: CannedProvider, recorder: Recorder) -> None:
    stream_reply(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    events = list(client.messages.create(**REQUEST, stream=True))
    assert [event.type for event in events][-1] == "message_stop"
    as_helper_gives(recorder.event, from_anthropic(MESSAGE))


def test_the_stream_helper_and_its_final_message(canned: CannedProvider, recorder: Recorder) -> None:
    stream_reply(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with client.messages.stream(**REQUEST) as stream:
        final = stream.get_final_message()
    assert final.usage.output_tokens == 500
    as_helper_gives(recorder.event, from_anthropic(final))


def test_the_stream_helper_closed_midway(canned: CannedProvider, recorder: Recorder) -> None:
    stream_reply(canned)
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with client.messages.stream(**REQUEST) as stream:
        for event in stream:
            if event.type == "message_start":
                break
    event = recorder.event
    assert event["status"] == "cancelled" and event["model"] == MODEL
    assert event["prompt_tokens"] == 1200 and event["completion_tokens"] == 1  # what message_start said


def test_async_stream_helper(canned: CannedProvider, recorder: Recorder) -> None:
    stream_reply(canned)

    async def main() -> Any:
        client = costtrack.instrument(client_for(canned, anthropic.AsyncAnthropic), tracker=recorder)
        async with client.messages.stream(**REQUEST) as stream:
            final = await stream.get_final_message()
        await client.close()
        return final

    message = asyncio.run(main())
    as_helper_gives(recorder.event, from_anthropic(message))


def test_an_http_error_and_a_timeout(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", "/v1/messages", anthropic_error(529))
    client = costtrack.instrument(client_for(canned), tracker=recorder)
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(**REQUEST)
    assert raised.value.status_code == 529
    assert without_latency(recorder.event) == failed("anthropic", "claude-sonnet-4-5", "error")

    canned.route("POST", "/v1/messages", Canned(body=MESSAGE, delay=1.0))
    slow = costtrack.instrument(client_for(canned, timeout=0.2), tracker=recorder)
    with pytest.raises(anthropic.APITimeoutError):
        slow.messages.create(**REQUEST)
    assert without_latency(recorder.events[1]) == failed("anthropic", "claude-sonnet-4-5", "timeout")


def test_the_bedrock_client_of_the_sdk_is_tracked_as_bedrock(canned: CannedProvider, recorder: Recorder) -> None:
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    canned.route("POST", f"/model/{model}/invoke", Canned(body=MESSAGE))
    client = anthropic.AnthropicBedrock(
        base_url=canned.url, aws_region="us-east-1", aws_access_key="test", aws_secret_key="test", max_retries=0
    )
    costtrack.instrument(client, tracker=recorder)
    message = client.messages.create(**{**REQUEST, "model": model})
    as_helper_gives(recorder.event, from_anthropic(message, provider="bedrock"))
