"""``costtrack.instrument`` on google-genai's ``Client`` (generate_content and its stream, sync and
``client.aio``) and on boto3's ``bedrock-runtime`` client (Converse and ConverseStream, through
botocore's events), against the canned provider; each event is the one ``from_gemini`` /
``from_bedrock_converse`` makes of the same response."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any, List

import pytest
from canned_provider import (
    Canned,
    CannedProvider,
    bedrock_error,
    converse_response,
    converse_stream,
    gemini_error,
    gemini_response,
    gemini_stream,
)
from instrumented import Recorder, as_helper_gives, failed, without_latency

import costtrack
from costtrack.providers import from_bedrock_converse, from_gemini

pytestmark = pytest.mark.filterwarnings("ignore:Boto3 will no longer support Python")

GEMINI = "gemini-2.5-flash"
GEMINI_USAGE = {
    "promptTokenCount": 1200,
    "candidatesTokenCount": 300,
    "thoughtsTokenCount": 500,
    "cachedContentTokenCount": 1000,
    "totalTokenCount": 2000,
}
GENERATE = f"/v1beta/models/{GEMINI}:generateContent"
STREAM = f"/v1beta/models/{GEMINI}:streamGenerateContent"


def genai_client(canned: CannedProvider, timeout_ms: int = 10_000) -> Any:
    genai = pytest.importorskip("google.genai")
    options = genai.types.HttpOptions(base_url=canned.url, api_version="v1beta", timeout=timeout_ms)
    return genai.Client(api_key="test", http_options=options)


def test_generate_content_sync_and_async(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", GENERATE, Canned(body=gemini_response(GEMINI, GEMINI_USAGE)))
    client = costtrack.instrument(genai_client(canned), tracker=recorder, feature="summaries")
    response = client.models.generate_content(model=GEMINI, contents="Capital of France?")
    as_helper_gives(recorder.event, from_gemini(response, feature="summaries"))
    assert recorder.event["reasoning_tokens"] == 500

    async def main() -> Any:
        return await client.aio.models.generate_content(model=GEMINI, contents="Capital of France?")

    response = asyncio.run(main())
    assert without_latency(recorder.events[1]) == without_latency(recorder.events[0])


def stream_usages() -> List[Any]:
    first = {"promptTokenCount": 1200, "candidatesTokenCount": 10, "totalTokenCount": 1210}
    return [first, {**first, "candidatesTokenCount": 150, "totalTokenCount": 1350}, GEMINI_USAGE]


def test_a_stream_is_tracked_from_its_last_chunk(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", STREAM, Canned(body=gemini_stream(GEMINI, stream_usages()), content_type="text/event-stream"))
    client = costtrack.instrument(genai_client(canned), tracker=recorder)
    chunks = list(client.models.generate_content_stream(model=GEMINI, contents="Capital of France?"))
    assert len(chunks) == 3
    as_helper_gives(recorder.event, from_gemini(chunks[-1]))

    async def main() -> List[Any]:
        stream = await client.aio.models.generate_content_stream(model=GEMINI, contents="Capital of France?")
        return [chunk async for chunk in stream]

    assert len(asyncio.run(main())) == 3
    assert without_latency(recorder.events[1]) == without_latency(recorder.events[0])


def test_a_stream_left_midway_is_cancelled(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", STREAM, Canned(body=gemini_stream(GEMINI, stream_usages()), content_type="text/event-stream"))
    client = costtrack.instrument(genai_client(canned), tracker=recorder)
    stream = client.models.generate_content_stream(model=GEMINI, contents="Capital of France?")
    first = next(stream)
    stream.close()
    event = recorder.event
    assert event["status"] == "cancelled"
    assert (event["prompt_tokens"], event["completion_tokens"]) == (1200, 10)  # what the first chunk said
    assert first.usage_metadata.candidates_token_count == 10


def test_gemini_errors_and_timeouts(canned: CannedProvider, recorder: Recorder) -> None:
    errors = pytest.importorskip("google.genai.errors")
    canned.route("POST", GENERATE, gemini_error(500))
    client = costtrack.instrument(genai_client(canned), tracker=recorder)
    with pytest.raises(errors.ServerError):
        client.models.generate_content(model=GEMINI, contents="Capital of France?")
    assert without_latency(recorder.event) == failed("google", GEMINI, "error")

    canned.route("POST", GENERATE, Canned(body=gemini_response(GEMINI, GEMINI_USAGE), delay=1.0))
    slow = costtrack.instrument(genai_client(canned, timeout_ms=200), tracker=recorder)
    timeout = pytest.importorskip("httpx2" if importlib.util.find_spec("httpx2") else "httpx").TimeoutException
    with pytest.raises(timeout):  # google-genai lets its HTTP client's timeout through
        slow.models.generate_content(model=GEMINI, contents="Capital of France?")
    assert without_latency(recorder.events[1]) == failed("google", GEMINI, "timeout")


# -- Bedrock Runtime ---------------------------------------------------------------------------

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_PATH = BEDROCK_MODEL.replace(":", "%3A")  # as boto3 quotes it in the URL
CONVERSE = converse_response(1200, 300, 10000, 3000, [{"ttl": "1h", "inputTokens": 3000}], service_tier="flex")
MESSAGES = [{"role": "user", "content": [{"text": "Capital of France?"}]}]


def bedrock_client(canned: CannedProvider, read_timeout: float = 10) -> Any:
    boto3 = pytest.importorskip("boto3")
    config = pytest.importorskip("botocore.config")
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=canned.url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=config.Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=read_timeout),
    )


def test_converse_through_botocore_events(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route("POST", f"/model/{BEDROCK_PATH}/converse", Canned(body=CONVERSE))
    client = bedrock_client(canned)
    assert costtrack.instrument(client, tracker=recorder, customer_id="cus_7") is client
    response = client.converse(modelId=BEDROCK_MODEL, messages=MESSAGES)
    event = recorder.event
    assert event["latency_ms"] != 850  # measured here, not the service's metrics.latencyMs
    as_helper_gives(event, from_bedrock_converse(response, model=BEDROCK_MODEL, customer_id="cus_7", latency_ms=0))

    costtrack.uninstrument(client)
    client.converse(modelId=BEDROCK_MODEL, messages=MESSAGES)
    assert len(recorder.events) == 1


def test_converse_stream(canned: CannedProvider, recorder: Recorder) -> None:
    canned.route(
        "POST",
        f"/model/{BEDROCK_PATH}/converse-stream",
        Canned(body=converse_stream(CONVERSE), content_type="application/vnd.amazon.eventstream"),
    )
    client = costtrack.instrument(bedrock_client(canned), tracker=recorder)
    events = list(client.converse_stream(modelId=BEDROCK_MODEL, messages=MESSAGES)["stream"])
    assert [next(iter(event)) for event in events][-1] == "metadata"
    as_helper_gives(recorder.event, from_bedrock_converse(CONVERSE, model=BEDROCK_MODEL, latency_ms=0))

    stream = client.converse_stream(modelId=BEDROCK_MODEL, messages=MESSAGES)["stream"]
    next(iter(stream))
    stream.close()
    assert without_latency(recorder.events[1]) == failed("bedrock", BEDROCK_MODEL, "cancelled")


def test_bedrock_errors_and_timeouts(canned: CannedProvider, recorder: Recorder) -> None:
    exceptions = pytest.importorskip("botocore.exceptions")
    canned.route("POST", f"/model/{BEDROCK_PATH}/converse", bedrock_error(400))
    client = costtrack.instrument(bedrock_client(canned), tracker=recorder)
    with pytest.raises(exceptions.ClientError) as raised:
        client.converse(modelId=BEDROCK_MODEL, messages=MESSAGES)
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert without_latency(recorder.event) == failed("bedrock", BEDROCK_MODEL, "error")

    canned.route("POST", f"/model/{BEDROCK_PATH}/converse", Canned(body=CONVERSE, delay=1.0))
    slow = costtrack.instrument(bedrock_client(canned, read_timeout=0.2), tracker=recorder)
    with pytest.raises(exceptions.ReadTimeoutError):
        slow.converse(modelId=BEDROCK_MODEL, messages=MESSAGES)
    assert without_latency(recorder.events[1]) == failed("bedrock", BEDROCK_MODEL, "timeout")
