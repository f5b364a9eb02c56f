"""What both functions' routes share (edge/http_event.py): every failure's API error, and the
answer API Gateway takes."""

from __future__ import annotations

import base64
import logging

import pytest

from costtrack_service.domain.errors import ERROR_CODES, ApiError
from costtrack_service.domain.store_errors import Conflict, NotFound, StoreUnavailable, TransitionRefused
from costtrack_service.edge.http_event import (
    ERROR_STATUS,
    HttpRequest,
    answer,
    decoded_path,
    error_answer,
    failure_error,
    http_status,
    too_large,
    unsupported_media_type,
    with_decoded_path,
)

LOGGER = logging.getLogger("test_http_event")


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (StoreUnavailable("PutItem: ThrottlingException"), 503, "UNAVAILABLE"),
        (NotFound("no such key"), 404, "NOT_FOUND"),
        (Conflict("taken"), 409, "CONFLICT"),
        (TransitionRefused("revoked keys stay revoked"), 409, "INVALID_KEY_TRANSITION"),  # a Conflict too
        (ApiError("INVALID_PAYLOAD", "bad"), 400, "INVALID_PAYLOAD"),
        (RuntimeError("a bug"), 500, "INTERNAL_ERROR"),
    ],
)
def test_every_failure_has_its_api_error(error: Exception, status: int, code: str) -> None:
    translated = failure_error(error, LOGGER)  # type: ignore[arg-type]  # any logger that logs
    assert (http_status(translated), translated.code) == (status, code)
    assert "a bug" not in translated.message


def test_every_error_code_of_the_domain_has_its_http_status_here() -> None:
    assert sorted(ERROR_STATUS) == sorted(ERROR_CODES)


def test_what_only_http_tells_apart_keeps_the_code_and_has_its_own_status() -> None:
    for refusal, status in [(too_large("body", "big"), 413), (unsupported_media_type("Content-Type", "xml"), 415)]:
        sent = error_answer(refusal, "req-1")
        assert (refusal.code, http_status(refusal), sent["statusCode"]) == ("INVALID_PAYLOAD", status, status)
        assert refusal.details[0]["field"] in sent["body"]


def test_a_503_says_when_to_retry() -> None:
    assert failure_error(StoreUnavailable("x"), LOGGER).retry_after == 1  # type: ignore[arg-type]


def test_bytes_travel_base64_encoded_and_text_as_it_is() -> None:
    binary = answer(200, "application/x-protobuf", b"\x00\xff")
    assert binary["isBase64Encoded"] and base64.b64decode(binary["body"]) == b"\x00\xff"
    text = answer(200, "application/json", "{}")
    assert not text["isBase64Encoded"] and text["body"] == "{}"
    assert text["headers"]["Content-Type"] == "application/json" and text["headers"]["Cache-Control"] == "no-store"


def test_a_request_reads_its_event() -> None:
    event = {
        "rawPath": "/v1/events",
        "headers": {"Authorization": "Bearer x"},
        "requestContext": {"http": {"method": "post"}, "requestId": "r1"},
        "body": base64.b64encode(b"{}").decode(),
        "isBase64Encoded": True,
    }
    request = HttpRequest.from_event(event)
    assert (request.method, request.path, request.body, request.request_id) == ("POST", "/v1/events", b"{}", "r1")
    assert request.headers == {"authorization": "Bearer x"}


def test_a_path_is_decoded_once_whichever_way_it_arrives() -> None:
    """API Gateway's HTTP API hands ``rawPath`` over decoded; a REST API, a function URL and the
    local stack as the client sent it: either way each segment is decoded once, and a decoded
    ``/`` cannot change the route."""
    assert decoded_path("/v1/workspace/runs/run:abc.1") == "/v1/workspace/runs/run:abc.1"
    assert decoded_path("/v1/workspace/runs/run%3Aabc.1") == "/v1/workspace/runs/run:abc.1"
    assert decoded_path("/v1/workspace/runs/%72%75%6E%3A%61") == "/v1/workspace/runs/run:a"
    assert decoded_path("/v1/reservations/a%2Fb") == "/v1/reservations/a%2Fb"
    assert decoded_path("/v1/workspace/runs/a%20b%C3%A9") == "/v1/workspace/runs/a bé"
    # Not a character a route's segment holds: still encoded, so the route answers (its check: 400).
    assert decoded_path("/v1/workspace/statements/%C2%84") == "/v1/workspace/statements/%C2%84"
    assert decoded_path("/v1/workspace/runs/a%FF") == "/v1/workspace/runs/a%EF%BF%BD"
    event = {"rawPath": "/v1/reservations/rsv%5Fx", "requestContext": {"http": {"method": "DELETE"}}}
    assert HttpRequest.from_event(event).path == "/v1/reservations/rsv_x"
    owners = with_decoded_path({"rawPath": "/a/b%3Ac", "requestContext": {"http": {"path": "/a/b%3Ac"}}})
    assert owners["rawPath"] == owners["requestContext"]["http"]["path"] == "/a/b:c"
