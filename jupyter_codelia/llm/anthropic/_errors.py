"""Anthropic SDK / transport exceptions → :class:`LlmError` with a kind and a retry hint.

The hint comes, in order of trust, from the ``Retry-After`` header (seconds or an HTTP date, or
``retry-after-ms``), the ``anthropic-ratelimit-*-reset`` headers (RFC 3339 instants), then a
wait the error body mentions; without any, ``retry_after_s`` stays None and the agent backs off.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from ..._text import describe_exc
from .._http_errors import body_wait, parse_retry_after, scrub
from ..base import LlmError, LlmErrorKind, RetrySource

_BODY_TYPE_KINDS: dict[str, LlmErrorKind] = {
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "timeout_error": "timeout",
    "api_error": "provider",
    "invalid_request_error": "bad_request",
    "not_found_error": "bad_request",
    "request_too_large": "bad_request",
    "authentication_error": "auth",
    "permission_error": "auth",
    "billing_error": "auth",
}


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _parse_instant(value: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def reset_header_wait(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds until the exhausted ``anthropic-ratelimit-*-reset`` limit resets.

    Limits whose ``-remaining`` header is 0 are the ones that blocked us; the longest of those
    counts. When none says so, the soonest reset is the best guess.
    """
    current = now or _now()
    exhausted: list[float] = []
    others: list[float] = []
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, value in lowered.items():
        if not (name.startswith("anthropic-ratelimit-") and name.endswith("-reset")):
            continue
        when = _parse_instant(value)
        if when is None:
            continue
        wait = max(0.0, (when - current).total_seconds())
        remaining = lowered.get(name[: -len("-reset")] + "-remaining")
        (exhausted if remaining is not None and remaining.strip() == "0" else others).append(wait)
    if exhausted:
        return max(exhausted)
    return min(others) if others else None


def retry_hint(
    headers: Mapping[str, str], body: Any, *, now: datetime | None = None
) -> tuple[float | None, RetrySource | None]:
    lowered = {k.lower(): v for k, v in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        seconds = parse_retry_after(milliseconds)
        if seconds is not None:
            return seconds / 1000, "retry-after"
    seconds = parse_retry_after(lowered.get("retry-after"), now=now)
    if seconds is not None:
        return seconds, "retry-after"
    seconds = reset_header_wait(lowered, now=now)
    if seconds is not None:
        return seconds, "reset-header"
    seconds = body_wait(body)
    if seconds is not None:
        return seconds, "provider-body"
    return None, None


def _body_error(body: Any) -> tuple[str | None, str | None]:
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return None, body.strip() or None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (
        kind if isinstance(kind, str) else None,
        message if isinstance(message, str) else None,
    )


def _status_kind(status: int, body_type: str | None) -> LlmErrorKind:
    if body_type in ("overloaded_error", "rate_limit_error"):
        return _BODY_TYPE_KINDS[body_type]
    if status == 429:
        return "rate_limit"
    if status == 529:
        return "overloaded"
    if status in (401, 403):
        return "auth"
    if status in (408, 504):
        return "timeout"
    if status >= 500:
        return "provider"
    if 400 <= status < 500:
        return "bad_request"
    # An error event inside a 200 stream: only the body says what happened.
    return _BODY_TYPE_KINDS.get(body_type or "", "provider")


def classify_status(
    status: int,
    headers: Mapping[str, str],
    body: Any,
    *,
    secrets: Iterable[str] = (),
    now: datetime | None = None,
) -> LlmError:
    """An HTTP error response (or an SSE ``error`` event) → :class:`LlmError`."""
    body_type, body_message = _body_error(body)
    kind = _status_kind(status, body_type)
    where = f"HTTP {status}" if status >= 400 else "error event in the response stream"
    detail = body_message or "no error message in the response"
    label = f" {body_type}" if body_type else ""
    message = scrub(f"Anthropic API{label} ({where}): {detail}", secrets)
    retry_after, source = (None, None)
    if kind in ("rate_limit", "overloaded", "provider", "timeout"):
        retry_after, source = retry_hint(headers, body, now=now)
    return LlmError(
        kind,
        message,
        status=status if status >= 400 else None,
        retry_after_s=retry_after,
        retry_source=source,
    )


def classify_exception(exc: BaseException, *, secrets: Iterable[str] = ()) -> LlmError | None:
    """An exception raised while calling or streaming → :class:`LlmError`; None if foreign."""
    import anthropic
    import httpx2

    secrets = list(secrets)
    if isinstance(exc, LlmError):
        return exc
    if isinstance(exc, anthropic.APIStatusError):
        # An in-stream ``error`` event arrives with the 200 of the stream's response.
        status = exc.status_code
        return classify_status(status, dict(exc.response.headers), exc.body, secrets=secrets)
    if isinstance(exc, (anthropic.APITimeoutError, httpx2.TimeoutException)):
        return LlmError("timeout", "Anthropic API request timed out before the reply completed")
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        reason = f": {scrub(str(cause), secrets)}" if cause is not None and str(cause) else ""
        return LlmError("network", f"Could not reach the Anthropic API{reason}")
    if isinstance(exc, anthropic.APIResponseValidationError):
        return LlmError(
            "provider",
            scrub(f"Anthropic API returned data of an unexpected shape: {exc.message}", secrets),
            status=exc.status_code,
        )
    if isinstance(exc, httpx2.TransportError):
        return LlmError(
            "network",
            scrub(f"The connection to the Anthropic API broke mid-reply: {exc}", secrets),
        )
    if isinstance(exc, TypeError) and "authentication" in str(exc).lower():
        return LlmError(
            "auth",
            "No Anthropic credentials: pass api_key=... to AnthropicChat or set ANTHROPIC_API_KEY",
        )
    return None


def malformed_stream_error(exc: BaseException, *, secrets: Iterable[str] = ()) -> LlmError:
    """The SSE stream could not be decoded (bad JSON, events out of order)."""
    return LlmError(
        "network",
        scrub(f"The Anthropic response stream was malformed: {describe_exc(exc)}", secrets),
    )


__all__ = [
    "classify_exception",
    "classify_status",
    "malformed_stream_error",
    "parse_retry_after",
    "reset_header_wait",
    "retry_hint",
]
