"""Lambda entry point of the key owners' API and dashboard: ``/v1/workspace/...``, ``/dashboard``.

Traced (botocore patched) and measured per request (:class:`Powertools`): ``Requests``,
``Refused`` (4xx), ``Failed`` (5xx) and ``ColdStart`` under the service ``costtrack-api``.
"""

from costtrack_service.handlers.init_phase import init_phase

with init_phase():
    from costtrack_service.edge.owner_api.app import create_handler
    from costtrack_service.handlers.powertools import Powertools

    tools = Powertools("costtrack-api")
    handler = tools.http_entry_point(create_handler())
