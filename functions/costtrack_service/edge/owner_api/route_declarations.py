"""How an owners' route is declared, said once for every route of the owners' API
(``edge/owner_api/app.py``, ``edge/owner_api/budget_routes.py``).

A route is a function of its typed query, path and body parameters (Powertools validates them)
that returns its answer's JSON body. :class:`OwnerRoutes` registers it on the resolver with what
every owners' route shares: the admin token as its security requirement, its documented answer
with the refusals all owners' routes share (:func:`owner_responses.documented`), its operation id
from its name (``list_keys`` → ``listKeys``), its summary (and description) from its docstring,
and its result sent as JSON with the status its answer documents, so the document and the
answer cannot disagree. Every change that succeeds (any method but GET) is logged here, with the
workspace and the route's path parameters, never its body or answer (a new key's secret is in it).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from costtrack_service.edge.owner_api.http import json_response
from costtrack_service.edge.owner_api.responses import ADMIN_TOKEN, Answers

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

#: What an owners' route returns: the JSON body of its documented answer, or a whole response
#: (a statement as CSV).
Answer = Mapping[str, Any] | Response[str]
Route = Callable[..., Answer]


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
    def __init__(self, app: APIGatewayHttpResolver, workspace_id: Callable[[], str], logger: Logger) -> None:
        self.app = app
        #: The request's workspace: the admin token's (it authenticated the request), the only
        #: one a route may act on.
        self.workspace_id = workspace_id
        self._logger = logger

    def route(self, method: str, path: str, answers: Answers) -> Callable[[Route], Route]:
        path_names = re.findall(r"<(\w+)>", path)

        def register(route: Route) -> Route:
            operation = operation_id(route.__name__)

            @functools.wraps(route)
            def respond(**params: Any) -> Response[str]:
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
            respond.__signature__ = signature.replace(return_annotation=Response[str])  # type: ignore[attr-defined]
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

    get = functools.partialmethod(route, "GET")
    post = functools.partialmethod(route, "POST")
    put = functools.partialmethod(route, "PUT")
    patch = functools.partialmethod(route, "PATCH")
    delete = functools.partialmethod(route, "DELETE")
