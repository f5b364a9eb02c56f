"""A workspace's run-anomaly settings, for ``/v1/workspace/run-anomalies`` and ``costtrack admin
runs anomalies`` (the rule is the domain's: ``domain/runs/anomalies.py``)."""

from __future__ import annotations

from typing import Any

from costtrack_service.domain.runs.anomalies import SettingsStore, changed_settings


class AnomalySettingsService:
    """``GET``/``PUT /v1/workspace/run-anomalies`` and ``costtrack admin runs anomalies``."""

    def __init__(self, store: SettingsStore) -> None:
        self.store = store

    def get(self, workspace_id: str) -> dict[str, Any]:
        return self.store.get_anomaly_settings(workspace_id).to_dict()

    def change(self, workspace_id: str, body: object) -> dict[str, Any]:
        settings = changed_settings(self.store.get_anomaly_settings(workspace_id), body)
        self.store.put_anomaly_settings(workspace_id, settings)
        return settings.to_dict()
