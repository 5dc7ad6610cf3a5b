"""Provider-neutral pieces of error classification: retry waits and safe error messages.

``Retry-After`` (seconds or an HTTP date), a wait named in an error body, and scrubbing the
credentials out of (and clipping) a message before it becomes an :class:`~.base.LlmError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

# One part of a wait as written in error messages: "900ms", "12 seconds", "9m", "1h".
_WAIT_PART = (
    r"(\d+(?:\.\d+)?)\s*(milliseconds?|ms|hours?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])"
)
# "try again in 9m38.016s" (OpenAI's Go-style durations), "retry after 12 seconds".
_BODY_WAIT = re.compile(
    rf"(?:retry|try again)\s+(?:after|in)\s+((?:{_WAIT_PART}\s*)+)", re.IGNORECASE
)
_PART = re.compile(_WAIT_PART, re.IGNORECASE)
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_MAX_MESSAGE_CHARS = 500


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds (``"3"``, ``"1.5"``) or an HTTP date; None if unparsable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())
    return max(0.0, seconds) if seconds == seconds else None  # NaN check


def body_wait(body: Any) -> float | None:
    """A wait the error body names: a ``retry_after`` field, or "try again in 12 seconds" /
    "try again in 9m38.016s" in its message."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        for key in ("retry_after", "retry_after_s", "retry_after_seconds"):
            value = error.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                return float(value)
        message = error.get("message")
    else:
        message = body if isinstance(body, str) else None
    if isinstance(message, str):
        match = _BODY_WAIT.search(message)
        if match:
            return sum(
                float(amount) * _unit_seconds(unit) for amount, unit in _PART.findall(match[1])
            )
    return None


def _unit_seconds(unit: str) -> float:
    lowered = unit.lower()
    if lowered.startswith("mil") or lowered == "ms":
        return 0.001
    return _UNIT_SECONDS[lowered[0]]


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with ``secrets`` replaced and clipped to a readable length."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    if len(text) > _MAX_MESSAGE_CHARS:
        text = text[: _MAX_MESSAGE_CHARS - 1] + "…"
    return text


__all__ = ["body_wait", "parse_retry_after", "scrub"]
