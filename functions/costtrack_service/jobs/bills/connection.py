"""One run of a connection's import: its admin key from Secrets Manager (never logged or
returned), the days due (new days and the provider's revision window), the provider's pages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Any

from costtrack_service.domain.reconciliation.bill import Lines
from costtrack_service.domain.reconciliation.connections import Connection, days_to_import
from costtrack_service.jobs.bills import anthropic, bedrock, openai
from costtrack_service.jobs.bills.admin_pages import Api, Fetched, ImportFailed

DEFAULT_BASE_URLS = {"openai": openai.DEFAULT_BASE_URL, "anthropic": anthropic.DEFAULT_BASE_URL}
#: Environment variables that point an importer at another API root (the local stack's canned servers).
BASE_URL_VARIABLES = {"openai": "COSTTRACK_OPENAI_ADMIN_URL", "anthropic": "COSTTRACK_ANTHROPIC_ADMIN_URL"}


def admin_key(secrets: Any, secret_arn: str) -> str:
    """The secret's string: the key itself, or JSON with an ``admin_key`` (or ``api_key``) field."""
    try:
        value = secrets.get_secret_value(SecretId=secret_arn)["SecretString"]
    except Exception as error:  # ResourceNotFound, AccessDenied, …: named, never the value
        raise ImportFailed(f"the connection's secret could not be read ({type(error).__name__})") from None
    text = str(value).strip()
    if text.startswith("{"):
        try:
            fields = json.loads(text)
        except ValueError:
            raise ImportFailed("the connection's secret is not JSON nor a key") from None
        text = str(fields.get("admin_key") or fields.get("api_key") or "")
    if not text:
        raise ImportFailed("the connection's secret holds no key")
    return text


def run(
    connection: Connection,
    today: date,
    last_imported: date | None,
    *,
    secrets: Any = None,
    cost_explorer: Any = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[tuple[date, date] | None, Lines, Fetched]:
    """The days imported, their billed lines and the raw pages (nothing when nothing is due)."""
    days = days_to_import(connection.provider, today, last_imported)
    if days is None:
        return None, Lines(), Fetched()
    first, last = days
    if connection.provider == "bedrock":
        lines, fetched = bedrock.import_days(cost_explorer, first, last)
        return days, lines, fetched
    assert connection.secret_arn is not None
    key = admin_key(secrets, connection.secret_arn)
    api = Api((environ or {}).get(BASE_URL_VARIABLES[connection.provider]) or DEFAULT_BASE_URLS[connection.provider])
    importer = openai if connection.provider == "openai" else anthropic
    lines, fetched = importer.import_days(api, key, first, last)
    return days, lines, fetched
