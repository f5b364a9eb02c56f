"""Budgets and their alerts: a budget and its scope (``budget.py``), what each budget or template
instance has spent and holds (``instances.py``), the ``budget_exceeded`` warning on ingestion
(``watch.py``), alert notifications (``alerts.py``) and webhook endpoints (``webhooks.py``)."""
