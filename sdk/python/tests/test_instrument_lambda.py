"""In AWS Lambda: the events of an instrumented OpenAI client, called inside a handler wrapped by
``flush_after`` / ``Tracker.lambda_handler``, have been delivered when the handler returns (the
environment may be frozen right after)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest
from canned_provider import Canned, CannedProvider, chat_completion, chat_stream, chat_usage

import costtrack

openai = pytest.importorskip("openai")

MODEL = "gpt-5-mini-2025-08-07"
MESSAGES = [{"role": "user", "content": "Hi"}]


class LambdaContext:
    """What the handler's second argument offers (the flush ends before the invocation's time does)."""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def test_sync_handler_flushes_instrumented_calls(
    canned: CannedProvider, make_tracker: Callable[..., Any], sink: Any
) -> None:
    canned.route("POST", "/v1/chat/completions", Canned(body=chat_completion(MODEL, chat_usage(100, 20))))
    tracker = make_tracker()
    client = costtrack.instrument(
        openai.OpenAI(base_url=canned.url + "/v1", api_key="test", max_retries=0), tracker=tracker, feature="lambda"
    )

    @tracker.lambda_handler
    def handler(event: Any, context: Any) -> Any:
        completion = client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
        return {"statusCode": 200, "body": completion.choices[0].message.content}

    assert handler({}, LambdaContext()) == {"statusCode": 200, "body": "Paris."}
    # Delivered before the handler returned: no waiting here.
    assert [item.event["prompt_tokens"] for item in sink.received] == [100]
    assert sink.received[0].event["feature"] == "lambda" and sink.received[0].event["status"] == "success"


def test_async_handler_with_a_stream(canned: CannedProvider, make_tracker: Callable[..., Any], sink: Any) -> None:
    canned.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=chat_stream(MODEL, chat_usage(300, 40)), content_type="text/event-stream"),
    )
    tracker = make_tracker()
    client = costtrack.instrument(
        openai.AsyncOpenAI(base_url=canned.url + "/v1", api_key="test", max_retries=0), tracker=tracker
    )

    @costtrack.flush_after(tracker)
    async def handler(event: Any, context: Any) -> Any:
        with costtrack.attributes(customer_id=event["customer"]):
            stream = await client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES, stream=True)
            text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
        return {"statusCode": 200, "body": text}

    assert asyncio.run(handler({"customer": "cus_l"}, LambdaContext()))["statusCode"] == 200
    assert [(item.event["prompt_tokens"], item.event["customer_id"]) for item in sink.received] == [(300, "cus_l")]
