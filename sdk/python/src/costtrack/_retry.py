"""When to try an event again: exponential backoff with full jitter, ``Retry-After`` as a floor."""

from __future__ import annotations

import email.utils
import random
import time
from typing import Optional

__all__ = ["backoff_delay", "parse_retry_after"]

#: Ceiling of the first retry's delay; each further retry doubles it ...
BACKOFF_BASE_S = 0.25
#: ... up to this ceiling.
BACKOFF_CAP_S = 8.0
#: A server's ``Retry-After`` is honoured up to this many seconds, so one answer cannot park a
#: batch (and one of the few delivery threads) for an hour.
RETRY_AFTER_CAP_S = 30.0


def backoff_delay(retry_number: int, retry_after: Optional[float] = None, rng: Optional[random.Random] = None) -> float:
    """Seconds to wait before retry ``retry_number`` (1 for the first retry).

    Full jitter (a uniform draw between 0 and the exponential ceiling) spreads the retries of
    many clients that failed together, instead of having them all come back at once.
    """
    exponent = max(0, min(retry_number - 1, 16))
    ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * (2**exponent))
    delay = (rng or random).uniform(0.0, ceiling)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP_S))
    return delay


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date; ``None`` if unusable."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment is None:  # Python 3.9 returns None instead of raising for some inputs.
        return None
    current = time.time() if now is None else now
    return max(0.0, moment.timestamp() - current)
