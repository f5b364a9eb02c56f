"""``costtrack.attributes``: attribution for every event made inside the block, across ``await``
and copied contexts; explicit fields win. And the middleware examples of sdk/python/README.md
(Starlette/FastAPI, Flask, Django) run in each framework: a request's customer reaches the event
of the instrumented OpenAI call its view makes."""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading
import types
from typing import Any, Dict

import pytest
from canned_provider import Canned, CannedProvider, chat_completion, chat_usage
from instrumented import Recorder

import costtrack

openai = pytest.importorskip("openai")

COMPLETION = chat_completion("gpt-5-mini-2025-08-07", chat_usage(100, 20))
MESSAGES = [{"role": "user", "content": "Hi"}]


def openai_client(canned: CannedProvider, recorder: Recorder, cls: Any = None, **defaults: Any) -> Any:
    canned.route("POST", "/v1/chat/completions", Canned(body=COMPLETION))
    client = (cls or openai.OpenAI)(base_url=canned.url + "/v1", api_key="test", max_retries=0)
    return costtrack.instrument(client, tracker=recorder, **defaults)


def attribution(event: Dict[str, Any]) -> Dict[str, Any]:
    names = ("feature", "customer_id", "customer_name", "environment", "metadata")
    return {name: event[name] for name in names if name in event}


def test_the_context_over_the_clients_defaults(canned: CannedProvider, recorder: Recorder) -> None:
    client = openai_client(canned, recorder, feature="default", environment="prod", metadata={"team": "a", "k": 1})
    with costtrack.attributes(customer_id="cus_1", customer_name="Acme", metadata={"k": 2}):
        with costtrack.attributes(feature="chat", customer_id="cus_2") as inner:
            assert inner == {"customer_id": "cus_2", "customer_name": "Acme", "feature": "chat", "metadata": {"k": 2}}
            client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
        client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
    client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)

    assert [attribution(event) for event in recorder.events] == [
        {
            "feature": "chat",
            "customer_id": "cus_2",
            "customer_name": "Acme",
            "environment": "prod",
            "metadata": {"team": "a", "k": 2},
        },
        {
            "feature": "default",
            "customer_id": "cus_1",
            "customer_name": "Acme",
            "environment": "prod",
            "metadata": {"team": "a", "k": 2},
        },
        {"feature": "default", "environment": "prod", "metadata": {"team": "a", "k": 1}},
    ]


def test_across_await_tasks_and_copied_threads(canned: CannedProvider, recorder: Recorder) -> None:
    async def main() -> None:
        client = openai_client(canned, recorder, cls=openai.AsyncOpenAI)

        async def call(feature: str) -> None:
            with costtrack.attributes(feature=feature):
                await asyncio.sleep(0.01)  # the other task runs in between
                await client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)

        with costtrack.attributes(customer_id="cus_async"):
            await asyncio.gather(call("a"), call("b"))
        await client.close()

    asyncio.run(main())
    sync_client = openai_client(canned, recorder)
    with costtrack.attributes(customer_id="cus_thread"):
        context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(lambda: sync_client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES),)
    )
    thread.start()
    thread.join()

    assert sorted((event.get("feature", ""), event["customer_id"]) for event in recorder.events) == [
        ("", "cus_thread"),
        ("a", "cus_async"),
        ("b", "cus_async"),
    ]


def test_explicit_track_events_take_the_context_for_what_they_lack(make_tracker: Any, sink: Any) -> None:
    tracker = make_tracker()
    with costtrack.attributes(customer_id="cus_9", feature="context", metadata={"a": 1, "b": 1}):
        tracker.track(
            {"provider": "openai", "model": "gpt-5", "prompt_tokens": 1, "feature": "mine", "metadata": {"b": 2}}
        )
    tracker.track({"provider": "openai", "model": "gpt-5", "prompt_tokens": 1})
    assert tracker.flush(5)
    # Delivered by concurrent consumers: the sink may receive them in either order.
    events = sorted((item.event for item in sink.received), key=lambda event: "customer_id" not in event)
    assert len(events) == 2
    assert attribution(events[0]) == {
        "feature": "mine",
        "customer_id": "cus_9",
        "environment": events[0]["environment"],
        "metadata": {"a": 1, "b": 2},
    }
    assert "customer_id" not in events[1]


# -- Middleware: the examples of sdk/python/README.md, each run in its framework ----------------


def test_starlette_middleware(canned: CannedProvider, recorder: Recorder) -> None:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    client = openai_client(canned, recorder, cls=openai.AsyncOpenAI)

    class CosttrackAttributes(BaseHTTPMiddleware):
        async def dispatch(self, request: Any, call_next: Any) -> Any:
            with costtrack.attributes(customer_id=request.headers.get("x-customer-id"), feature=request.url.path):
                return await call_next(request)

    async def answer(request: Any) -> Any:
        completion = await client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
        return JSONResponse({"answer": completion.choices[0].message.content})

    app = Starlette(routes=[Route("/answer", answer)], middleware=[Middleware(CosttrackAttributes)])
    with TestClient(app) as http:
        assert http.get("/answer", headers={"X-Customer-Id": "cus_starlette"}).json() == {"answer": "Paris."}
    assert attribution(recorder.event) == {"feature": "/answer", "customer_id": "cus_starlette"}


def test_flask_middleware(canned: CannedProvider, recorder: Recorder) -> None:
    flask = pytest.importorskip("flask")
    client = openai_client(canned, recorder)
    app = flask.Flask(__name__)

    @app.before_request
    def costtrack_attributes() -> None:
        attributes = costtrack.attributes(customer_id=flask.request.headers.get("X-Customer-Id"))
        attributes.__enter__()
        flask.g.costtrack_attributes = attributes

    @app.teardown_request
    def costtrack_attributes_end(error: Any = None) -> None:
        flask.g.pop("costtrack_attributes").__exit__(None, None, None)

    @app.get("/answer")
    def answer() -> Any:
        completion = client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
        return {"answer": completion.choices[0].message.content}

    response = app.test_client().get("/answer", headers={"X-Customer-Id": "cus_flask"})
    assert response.get_json() == {"answer": "Paris."}
    assert attribution(recorder.event) == {"customer_id": "cus_flask"}
    assert costtrack._attributes.current() is None  # the request's block ended with it


def costtrack_middleware(get_response: Any) -> Any:
    """The Django middleware of the README (``MIDDLEWARE = [..., "myapp.middleware.costtrack_middleware"]``)."""

    def middleware(request: Any) -> Any:
        with costtrack.attributes(customer_id=request.headers.get("X-Customer-Id")):
            return get_response(request)

    return middleware


def test_django_middleware(canned: CannedProvider, recorder: Recorder) -> None:
    pytest.importorskip("django")
    from django.conf import settings

    if not settings.configured:
        settings.configure(DEBUG=True, ALLOWED_HOSTS=["testserver"], SECRET_KEY="test", MIDDLEWARE=[])
        import django

        django.setup()
    from django.http import JsonResponse
    from django.test import Client
    from django.test.utils import override_settings
    from django.urls import path

    client = openai_client(canned, recorder)

    def answer(request: Any) -> Any:
        completion = client.chat.completions.create(model="gpt-5-mini", messages=MESSAGES)
        return JsonResponse({"answer": completion.choices[0].message.content})

    urls = types.ModuleType("costtrack_test_urls")
    urls.urlpatterns = [path("answer", answer)]  # type: ignore[attr-defined]
    sys.modules[urls.__name__] = urls
    try:
        with override_settings(ROOT_URLCONF=urls.__name__, MIDDLEWARE=[f"{__name__}.costtrack_middleware"]):
            response = Client().get("/answer", headers={"X-Customer-Id": "cus_django"})
    finally:
        del sys.modules[urls.__name__]
    assert response.json() == {"answer": "Paris."}
    assert attribution(recorder.event) == {"customer_id": "cus_django"}
