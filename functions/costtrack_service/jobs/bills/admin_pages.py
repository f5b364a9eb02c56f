"""Paged GETs against a provider's admin API: the documented cursor (``page`` →
``next_page``), 429 answers waited out by their ``retry-after``, every page's raw text kept.

The standard library's HTTP client (httpx is a test dependency only; the function's package
stays small)."""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import Message

MAX_PAGES = 1000
MAX_RETRIES = 5
MAX_WAIT_SECONDS = 60.0
TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Api:
    """A provider's API root (``https://api.openai.com``, or a canned server's)."""

    base_url: str

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.base_url)
        loopback = parsed.scheme == "http" and parsed.hostname in ("127.0.0.1", "localhost")
        if parsed.scheme != "https" and not loopback:
            raise ValueError("a provider API is https (plain http only on 127.0.0.1)")


class ImportFailed(RuntimeError):
    """The provider did not answer usably; nothing of the import is written. The message
    never holds a key (headers are not quoted)."""


@dataclass
class RawPage:
    path: str
    params: list[tuple[str, str]]
    text: str


@dataclass
class Fetched:
    pages: list[RawPage] = field(default_factory=list)


def retry_after(headers: Message, attempt: int) -> float:
    raw = headers.get("retry-after")
    try:
        wait = float(raw) if raw is not None else 2.0**attempt
    except ValueError:
        wait = 2.0**attempt
    return min(max(wait, 0.0), MAX_WAIT_SECONDS)


def get_pages(
    api: Api,
    path: str,
    params: Sequence[tuple[str, str]],
    headers: Mapping[str, str],
    add_page: Callable[[str], str | None],
    fetched: Fetched,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """GETs ``path`` and its following pages; ``add_page`` parses one and returns the next cursor."""
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        query = [*params, *([("page", cursor)] if cursor else [])]
        text = _get(api, path, query, headers, sleep)
        fetched.pages.append(RawPage(path, query, text))
        cursor = add_page(text)
        if cursor is None:
            return
    raise ImportFailed(f"{path}: more than {MAX_PAGES} pages")


def _get(
    api: Api,
    path: str,
    query: list[tuple[str, str]],
    headers: Mapping[str, str],
    sleep: Callable[[float], None],
) -> str:
    url = api.base_url.rstrip("/") + path + "?" + urllib.parse.urlencode(query)
    for attempt in range(MAX_RETRIES + 1):
        request = urllib.request.Request(url, headers={**headers, "Accept": "application/json"})  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (Api checks the scheme)
                return str(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            status, answer_headers = error.code, error.headers
            error.close()
        except (OSError, ValueError) as error:
            raise ImportFailed(f"{path}: {type(error).__name__}") from None
        if status != 429 and status < 500:
            raise ImportFailed(f"{path}: HTTP {status}")
        if attempt < MAX_RETRIES:
            sleep(retry_after(answer_headers, attempt))
    raise ImportFailed(f"{path}: still rate-limited after {MAX_RETRIES} retries")
