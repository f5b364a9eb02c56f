"""The owners' API and dashboard on Powertools' resolver (``handlers.api``)."""
