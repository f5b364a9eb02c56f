"""A workspace's run-anomaly settings, for ``/v1/workspace/run-anomalies`` and ``costtrack admin
runs anomalies`` (the rule is the domain's: ``domain/runs/anomalies.py``)."""

from __future__ import annotations

from typing import Any, Protocol

from costtrack_service.domain.runs.anomalies import SettingsStore, changed_settings


class AnomalyStore(Protocol):
    """The part the run-anomaly settings are kept in."""

    @property
    def anomaly_settings(self) -> SettingsStore: ...


class AnomalySettingsService:
    """``GET``/``PUT /v1/workspace/run-anomalies`` and ``costtrack admin runs anomalies``."""

    def __init__(self, store: AnomalyStore) -> None:
        self.store = store

    def get(self, workspace_id: str) -> dict[str, Any]:
        return self.store.anomaly_settings.get_anomaly_settings(workspace_id).to_dict()

    def change(self, workspace_id: str, body: object) -> dict[str, Any]:
        settings = changed_settings(self.store.anomaly_settings.get_anomaly_settings(workspace_id), body)
        self.store.anomaly_settings.put_anomaly_settings(workspace_id, settings)
        return settings.to_dict()
