"""The ``Tracker`` options, read without ever raising: an unusable option is reported to
``on_error`` as a ``ConfigurationError`` and either falls back to its default or, for the key
and the URL, turns tracking off."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Optional

from costtrack._version import __version__
from costtrack._warnings import ConfigurationError
from costtrack.validation import STRING_LIMITS, trim

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_ENVIRONMENT", "DEFAULT_FLUSH_INTERVAL_MS", "Options", "read_options"]

DEFAULT_BASE_URL = "http://127.0.0.1:3000"
DEFAULT_ENVIRONMENT = "production"
DEFAULT_TIMEOUT_MS = 5000
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_QUEUE_SIZE = 10_000
#: After a request, what is queued waits this long for more before a partial batch goes.
DEFAULT_FLUSH_INTERVAL_MS = 500

USER_AGENT = f"costtrack-python/{__version__}"


@dataclass(frozen=True)
class Options:
    api_key: str
    base_url: str
    environment: str
    timeout_s: float
    max_retries: int
    max_queue_size: int
    flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_MS / 1000.0


def read_options(
    api_key: object,
    base_url: object,
    environment: object,
    timeout_ms: object,
    max_retries: object,
    max_queue_size: object,
    flush_interval_ms: object,
    report: Callable[[ConfigurationError], None],
) -> Optional[Options]:
    """The usable options, or ``None`` (reported) when tracking cannot work at all."""
    key_problem = _api_key_problem(api_key)
    if key_problem is not None:
        report(ConfigurationError(key_problem))
        return None
    url = base_url if base_url is not None else os.environ.get("COSTTRACK_BASE_URL") or DEFAULT_BASE_URL
    if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
        report(ConfigurationError(f"base_url must be an http:// or https:// URL (got {url!r}); tracking is disabled"))
        return None
    assert isinstance(api_key, str)
    return Options(
        api_key=api_key.strip(),
        base_url=url.strip().rstrip("/"),
        environment=_environment_option(environment, report),
        timeout_s=_number_option("timeout_ms", timeout_ms, DEFAULT_TIMEOUT_MS, 1, False, report) / 1000.0,
        max_retries=int(_number_option("max_retries", max_retries, DEFAULT_MAX_RETRIES, 0, True, report)),
        max_queue_size=int(_number_option("max_queue_size", max_queue_size, DEFAULT_MAX_QUEUE_SIZE, 1, True, report)),
        flush_interval_s=_number_option(
            "flush_interval_ms", flush_interval_ms, DEFAULT_FLUSH_INTERVAL_MS, 0, False, report
        )
        / 1000.0,
    )


def _api_key_problem(api_key: object) -> Optional[str]:
    if api_key is None or (isinstance(api_key, str) and not api_key.strip()):
        return (
            "api_key is required: pass Tracker(api_key=...), usually read from an environment variable; "
            "tracking is disabled"
        )
    if not isinstance(api_key, str):
        return f"api_key must be a string (got {type(api_key).__name__}); tracking is disabled"
    if not all(33 <= ord(char) <= 126 for char in api_key.strip()):
        return "api_key must be printable ASCII without spaces; tracking is disabled"
    return None


def _environment_option(environment: object, report: Callable[[ConfigurationError], None]) -> str:
    if environment is None:
        return DEFAULT_ENVIRONMENT
    limit = STRING_LIMITS["environment"][0]
    if isinstance(environment, str) and len(trim(environment)) <= limit:
        return trim(environment) or DEFAULT_ENVIRONMENT
    problem = f"environment must be a string of at most {limit} characters; using {DEFAULT_ENVIRONMENT!r}"
    report(ConfigurationError(problem))
    return DEFAULT_ENVIRONMENT


def _number_option(
    name: str,
    value: object,
    default: int,
    minimum: int,
    integer: bool,
    report: Callable[[ConfigurationError], None],
) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if number >= minimum and math.isfinite(number) and (not integer or number.is_integer()):
            return number
    kind = "an integer" if integer else "a number"
    report(ConfigurationError(f"{name} must be {kind} >= {minimum} (got {value!r}); using {default}"))
    return float(default)
