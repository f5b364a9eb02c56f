"""Lambda entry point of the key owners' API and dashboard: ``/v1/workspace/...``, ``/dashboard``."""

from costtrack_service.handlers.init_phase import init_phase

with init_phase():
    from costtrack_service.edge.workspace import create_handler

    handler = create_handler()
