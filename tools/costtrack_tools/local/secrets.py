"""The local stack's stand-in for AWS Secrets Manager: a billing connection's admin key kept in
``.costtrack/secrets.json`` (beside the state file, readable by its owner only), keyed by the
secret's ARN, so ``costtrack admin billing import`` against the local stack reads a key without
an AWS account.

Only the command line's local target uses it (``costtrack_tools`` is not in the functions'
package): the deployed ``BillImportFunction`` reads Secrets Manager and nothing else. The file
holds keys; nothing here prints or logs a value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from costtrack_service.domain.reconciliation.connections import SECRET_ARN, SECRET_PREFIX

FILE_NAME = "secrets.json"


class ResourceNotFoundException(LookupError):
    """No secret under that ARN (the importer names the class, never the ARN's value)."""


class LocalSecrets:
    """``get_secret_value(SecretId=ARN)`` as boto3's Secrets Manager client answers it, from a file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def beside(cls, state_file: Path) -> LocalSecrets:
        return cls(state_file.parent / FILE_NAME)

    def _read(self) -> dict[str, str]:
        if not self.path.is_file():
            return {}
        data = json.loads(self.path.read_text(encoding="utf-8"))
        return {str(arn): str(value) for arn, value in data.items()} if isinstance(data, dict) else {}

    def put(self, arn: str, value: str) -> None:
        """Keep ``value`` under ``arn`` (replacing it); the ARN must name a ``costtrack/billing/``
        secret, as a connection's must."""
        found = SECRET_ARN.match(arn)
        if not found or not found.group("name").startswith(SECRET_PREFIX):
            raise ValueError("not the ARN of a Secrets Manager secret named costtrack/billing/…")
        if not value.strip():
            raise ValueError("an empty secret")
        secrets = self._read() | {arn: value.strip()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(secrets, handle, indent=2)
            handle.write("\n")

    def get_secret_value(self, *, SecretId: str) -> dict[str, Any]:
        secrets = self._read()
        if SecretId not in secrets:
            raise ResourceNotFoundException("no such secret in the local stack's secrets file")
        return {"ARN": SecretId, "SecretString": secrets[SecretId]}


class CostExplorerNotLocal(RuntimeError):
    """The local stack has no Cost Explorer (a Bedrock import there fails with this name)."""


class NoCostExplorer:
    """What a Bedrock import gets on the local stack unless ``AWS_ENDPOINT_URL_COST_EXPLORER``
    names one: a refusal, never a call to AWS."""

    def get_cost_and_usage(self, **_: Any) -> dict[str, Any]:
        raise CostExplorerNotLocal("the local stack has no Cost Explorer")


class SecretsByName:
    """A billing sink's API key by its secret's name, from the same file (name → value), read
    again when the file changes, so a key put while ``costtrack dev`` runs is used at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[float, int] | None = None
        self._values: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        try:
            stat = self.path.stat()
            seen: tuple[float, int] | None = (stat.st_mtime, stat.st_size)
        except FileNotFoundError:
            seen = None
        if seen != self._seen:
            self._values = LocalSecrets(self.path)._read()
            self._seen = seen
        if name not in self._values:
            raise ResourceNotFoundException("no such secret in the local stack's secrets file")
        return self._values[name]
