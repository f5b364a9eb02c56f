"""How an owners' route is declared, said once for every route of the owners' API
(:func:`build_app`, the budget routes).

A route is a function of its typed query, path and body parameters (Powertools validates them)
that returns its answer's JSON body. :class:`OwnerRoutes` registers it on the resolver with what
every owners' route shares: the admin token as its security requirement, its documented answer
with the refusals all owners' routes share (:func:`owner_responses.documented`), its operation id
from its name (``list_keys`` → ``listKeys``), its summary (and description) from its docstring,
and its result sent as JSON with the status its answer documents, so the document and the
answer cannot disagree. Every change that succeeds (any method but GET) is logged here, with the
workspace and the route's path parameters, never its body or answer (a new key's secret is in it).
A route declared ``idempotent`` takes an ``Idempotency-Key`` header: its retries are answered
from the record of the first request (docs: Concepts › Idempotency).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Header

from costtrack_service.domain.ingest.event_validation import MAX_IDEMPOTENCY_KEY_LENGTH
from costtrack_service.domain.recorded_writes import request_fingerprint
from costtrack_service.edge.owner_api.http import json_response
from costtrack_service.edge.owner_api.responses import ADMIN_TOKEN, Answers
from costtrack_service.services.write_replays import WriteReplayService

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

#: What an owners' route returns: the JSON body of its documented answer, or a whole response
#: (a statement as CSV).
Answer = Mapping[str, Any] | Response[str]
Route = Callable[..., Answer]

#: CONTRACT §4's key: 1 to 255 visible ASCII characters.
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_IDEMPOTENCY_KEY_LENGTH,
        pattern="^[!-~]+$",
        description="A retry with the same key and body gets the first answer (Idempotent-Replayed: true); "
        "the same key with another body is 422 IDEMPOTENCY_KEY_REUSED.",
    ),
]
IDEMPOTENCY_PARAMETER = "idempotency_key"


def operation_id(name: str) -> str:
    """The OpenAPI operation id of a route function: its name in camel case."""
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def summary_and_description(route: Route) -> tuple[str, str | None]:
    """A route's docstring: its first paragraph is the summary, the rest the description (each
    paragraph on one line, as the document states it)."""
    first, *rest = (" ".join(part.split()) for part in inspect.cleandoc(route.__doc__ or "").split("\n\n"))
    return first, "\n\n".join(rest) or None


class OwnerRoutes:
    def __init__(
        self,
        app: APIGatewayHttpResolver,
        workspace_id: Callable[[], str],
        logger: Logger,
        replays: WriteReplayService | None = None,
    ) -> None:
        self.app = app
        self.replays = replays
        #: The request's workspace: the admin token's (it authenticated the request), the only
        #: one a route may act on.
        self.workspace_id = workspace_id
        self._logger = logger

    def route(self, method: str, path: str, answers: Answers, *, idempotent: bool = False) -> Callable[[Route], Route]:
        path_names = re.findall(r"<(\w+)>", path)

        def register(route: Route) -> Route:
            operation = operation_id(route.__name__)

            @functools.wraps(route)
            def respond(**params: Any) -> Response[str]:
                key = params.pop(IDEMPOTENCY_PARAMETER, None)
                if key is not None and self.replays is not None:
                    return self._replayable(method, path, path_names, answers, key, route, params)
                answer = route(**params)
                if method != "GET":
                    where = {name: params[name] for name in path_names}
                    self._logger.info(
                        "workspace changed",
                        extra={"operation": operation, "workspace_id": self.workspace_id(), **where},
                    )
                return answer if isinstance(answer, Response) else json_response(answers.status, answer)

            # Powertools reads the parameters from the signature and resolves string annotations
            # in the function's own module; this one's are resolved here, where the route's
            # module is known (its __globals__).
            signature = inspect.signature(route, eval_str=True)
            parameters = list(signature.parameters.values())
            if idempotent:
                parameters.append(
                    inspect.Parameter(
                        IDEMPOTENCY_PARAMETER, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=IdempotencyKey
                    )
                )
            respond.__signature__ = signature.replace(  # type: ignore[attr-defined]
                parameters=parameters, return_annotation=Response[str]
            )
            summary, description = summary_and_description(route)
            self.app.route(
                path,
                method,
                operation_id=operation,
                summary=summary,
                description=description,
                security=ADMIN_TOKEN,
                responses=answers.responses,
            )(respond)
            return route

        return register

    def _replayable(
        self,
        method: str,
        path: str,
        path_names: list[str],
        answers: Answers,
        key: str,
        route: Route,
        params: dict[str, Any],
    ) -> Response[str]:
        """The route's answer through the record of its key: run once, replayed after."""
        event = self.app.current_event
        body = event.json_body if event.body else None
        where = {name: str(params[name]) for name in path_names}
        fingerprint = request_fingerprint(method, path, where, body)
        operation = operation_id(route.__name__)

        def write() -> tuple[int, Mapping[str, Any]]:
            answer = route(**params)
            assert not isinstance(answer, Response), "an idempotent route answers JSON"
            self._logger.info(
                "workspace changed", extra={"operation": operation, "workspace_id": self.workspace_id(), **where}
            )
            return answers.status, answer

        assert self.replays is not None
        result = self.replays.answer(self.workspace_id(), key, fingerprint, write)
        return json_response(result.status, result.body, {"Idempotent-Replayed": "true"} if result.replayed else None)

    get = functools.partialmethod(route, "GET")
    post = functools.partialmethod(route, "POST")
    put = functools.partialmethod(route, "PUT")
    patch = functools.partialmethod(route, "PATCH")
    delete = functools.partialmethod(route, "DELETE")
