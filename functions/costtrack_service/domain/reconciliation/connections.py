"""A workspace's connection to a provider account: which provider, and the ARN of the Secrets
Manager secret that holds its admin key (costtrack stores the ARN, never the key).

The owner creates the secret under the name prefix :data:`SECRET_PREFIX`; the import function's
IAM policy reads only secrets under that prefix, so an ARN outside it is refused here rather
than failing at the first import. Bedrock needs no secret (Cost Explorer of the stack's own
account)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal, get_args

from costtrack_service.domain.errors import invalid

#: The providers whose bills are imported.
Provider = Literal["openai", "anthropic", "bedrock"]
PROVIDERS: tuple[Provider, ...] = get_args(Provider)
SECRET_PREFIX = "costtrack/billing/"  # noqa: S105 (a name prefix, not a secret)
#: arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-<6 random characters>
SECRET_ARN = re.compile(
    r"^arn:aws(?:-[a-z]+)*:secretsmanager:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:secret:(?P<name>[A-Za-z0-9/_+=.@-]{1,512})$"
)
#: Days a provider may still revise, imported again on every run (see each importer).
REVISION_DAYS = {"openai": 3, "anthropic": 3, "bedrock": 3}
#: How far back a first import reaches.
FIRST_IMPORT_DAYS = 31


@dataclass(frozen=True)
class Connection:
    provider: str
    secret_arn: str | None

    @classmethod
    def parse(cls, provider: object, secret_arn: object) -> Connection:
        if provider not in PROVIDERS:
            raise invalid("provider", f"provider must be one of {', '.join(PROVIDERS)}")
        if provider == "bedrock":
            if secret_arn not in (None, ""):
                raise invalid("secret_arn", "a Bedrock connection reads Cost Explorer and takes no secret")
            return cls("bedrock", None)
        if not isinstance(secret_arn, str):
            raise invalid("secret_arn", "secret_arn must be the ARN of a Secrets Manager secret")
        match = SECRET_ARN.match(secret_arn)
        if match is None:
            raise invalid("secret_arn", "secret_arn must be the ARN of a Secrets Manager secret")
        if not match.group("name").startswith(SECRET_PREFIX):
            raise invalid(
                "secret_arn", f"the secret's name must start with {SECRET_PREFIX} (the importer may read only those)"
            )
        return cls(str(provider), secret_arn)


def days_to_import(provider: str, today: date, last_imported: date | None) -> tuple[date, date] | None:
    """The UTC days one run imports: from the day after the last import, or the provider's
    revision window if that starts earlier, up to yesterday (today is not over)."""
    last = today - timedelta(days=1)
    revise_from = today - timedelta(days=REVISION_DAYS[provider])
    first = (
        today - timedelta(days=FIRST_IMPORT_DAYS)
        if last_imported is None
        else min(last_imported + timedelta(days=1), revise_from)
    )
    return (first, last) if first <= last else None


@dataclass(frozen=True)
class ConnectionState:
    """A stored connection: the workspace's, with what its imports did so far. ``last_error``
    is the importer's one-line reason (it never holds a key: ``ImportFailed`` quotes no header)."""

    workspace_id: str
    connection: Connection
    created_at: str
    last_imported: str | None = None  # the last day (YYYY-MM-DD) an import wrote
    last_run_at: str | None = None
    last_error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "provider": self.connection.provider,
            "secret_arn": self.connection.secret_arn,
            "created_at": self.created_at,
            "last_imported": self.last_imported,
            "last_run_at": self.last_run_at,
            "last_error": self.last_error,
            "revision_days": REVISION_DAYS[self.connection.provider],
        }
