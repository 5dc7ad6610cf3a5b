"""OpenAI SDK / transport exceptions → :class:`LlmError` with a kind and a retry hint.

OpenAI-compatible servers (OpenAI, Ollama, vLLM, LM Studio, llama.cpp, OpenRouter) answer
errors as ``{"error": {"message", "type", "code"}}``; the SDK hands us the inner object. Gemini's
endpoint wraps it in a JSON array (``[{"error": {"code": 400, "message", "status"}}]``);
OpenRouter puts the upstream provider's own words in ``error.metadata.raw`` under a generic
"Provider returned error", and its error objects inside a 200 stream carry the HTTP status as a
number in ``code``. The retry hint comes, in order of trust, from ``retry-after-ms`` /
``Retry-After``, then OpenAI's ``x-ratelimit-reset-*`` durations (``"6m0s"``, ``"20ms"``),
then a wait named in the message (``"Please try again in 9m38.016s"``).

``insufficient_quota`` (out of credit, a 429 like a rate limit) is the ``quota`` kind: final,
never retried.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..._text import describe_exc
from .._http_errors import body_wait, parse_retry_after, scrub
from ..base import LlmError, LlmErrorKind, RetrySource

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# Error ``type`` / ``code`` values that name the failure better than the HTTP status.
_BODY_KINDS: dict[str, LlmErrorKind] = {
    "rate_limit_exceeded": "rate_limit",
    "insufficient_quota": "quota",
    "server_error": "provider",
    "overloaded_error": "overloaded",
    "engine_overloaded": "overloaded",
    "invalid_request_error": "bad_request",
    "invalid_api_key": "auth",
    "authentication_error": "auth",
}


def parse_duration(value: str) -> float | None:
    """``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"`` → seconds; None when not a duration."""
    text = value.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(a + u for a, u in parts) != text:
        return parse_retry_after(text)  # a bare number of seconds
    return sum(float(amount) * _DURATION_SECONDS[unit] for amount, unit in parts)


def reset_header_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds until the exhausted ``x-ratelimit-reset-{requests,tokens}`` limit resets."""
    lowered = {k.lower(): v for k, v in headers.items()}
    exhausted: list[float] = []
    others: list[float] = []
    for limit in ("requests", "tokens"):
        reset = lowered.get(f"x-ratelimit-reset-{limit}")
        wait = parse_duration(reset) if reset else None
        if wait is None:
            continue
        remaining = lowered.get(f"x-ratelimit-remaining-{limit}")
        (exhausted if remaining is not None and remaining.strip() == "0" else others).append(wait)
    if exhausted:
        return max(exhausted)
    return min(others) if others else None


def retry_hint(headers: Mapping[str, str], body: Any) -> tuple[float | None, RetrySource | None]:
    lowered = {k.lower(): v for k, v in headers.items()}
    milliseconds = parse_retry_after(lowered.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000, "retry-after"
    seconds = parse_retry_after(lowered.get("retry-after"))
    if seconds is not None:
        return seconds, "retry-after"
    seconds = reset_header_wait(lowered)
    if seconds is not None:
        return seconds, "reset-header"
    seconds = body_wait({"error": body} if isinstance(body, dict) else body)
    if seconds is not None:
        return seconds, "provider-body"
    return None, None


def _error_object(body: Any) -> Any:
    """The error object of a body: Gemini's ``[{"error": {...}}]`` and a bare
    ``{"error": {...}}`` unwrapped; anything else as it is."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]
    return body


def _error_fields(body: Any) -> tuple[str | None, str | None]:
    """(type or code, message) of an OpenAI error object (or a bare string body); OpenRouter's
    upstream reason (``metadata.raw``) is added to its generic message."""
    if isinstance(body, str):
        return None, body.strip() or None
    if not isinstance(body, dict):
        return None, None
    label = next(
        (
            body[key]
            for key in ("code", "type", "status")
            if isinstance(body.get(key), str) and body[key]
        ),
        None,
    )
    message = body.get("message")
    detail = message if isinstance(message, str) else None
    upstream = _upstream_reason(body.get("metadata"))
    if upstream:
        detail = f"{detail}: {upstream}" if detail else upstream
    return label, detail


def _upstream_reason(metadata: Any) -> str | None:
    """OpenRouter's ``metadata.raw`` (the upstream provider's answer, often JSON itself),
    with the provider's name."""
    if not isinstance(metadata, dict):
        return None
    raw = metadata.get("raw")
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            reason: str | None = raw.strip() or None
        else:
            reason = _error_fields(_error_object(parsed))[1] or raw.strip()
    elif isinstance(raw, dict):
        reason = _error_fields(_error_object(raw))[1]
    else:
        reason = None
    name = metadata.get("provider_name")
    if reason and isinstance(name, str) and name:
        return f"{name} says: {reason}"
    return reason


# Codes that say more than any status: a 429 out of credit is not a rate limit.
_DECISIVE_LABELS = frozenset(
    {"rate_limit_exceeded", "engine_overloaded", "overloaded_error", "insufficient_quota"}
)


def _status_kind(status: int | None, label: str | None) -> LlmErrorKind:
    if label in _DECISIVE_LABELS:
        return _BODY_KINDS[label]
    if status == 429:
        return "rate_limit"
    if status in (503, 529):
        return "overloaded"
    if status in (401, 403):
        return "auth"
    if status in (408, 504):
        return "timeout"
    if status is not None and status >= 500:
        return "provider"
    if status is not None and 400 <= status < 500:
        return "bad_request"
    # An error object inside a 200 stream without a status: only the body says what happened.
    return _BODY_KINDS.get(label or "", "provider")


_QUOTA_NOTE = (
    " Not retried: the account is out of credit or over its spending limit; add credit or "
    "raise the limit in the provider's billing settings, then run again."
)


def classify_error_body(
    status: int | None,
    headers: Mapping[str, str],
    body: Any,
    *,
    provider_label: str,
    secrets: Iterable[str] = (),
) -> LlmError:
    """An HTTP error response (or an error object mid-stream) → :class:`LlmError`."""
    error = _error_object(body)
    label, detail = _error_fields(error)
    where = f"HTTP {status}" if status is not None else "error in the response stream"
    code = error.get("code") if isinstance(error, dict) else None
    if status is None and isinstance(code, int) and 400 <= code <= 599:
        status = code  # OpenRouter's mid-stream errors name the status they could not send
    kind = _status_kind(status, label)
    named = f" {label}" if label else ""
    message = f"{provider_label}{named} ({where}): {detail or 'no error message in the response'}"
    message = scrub(message, secrets) + (_QUOTA_NOTE if kind == "quota" else "")
    retry_after, source = (None, None)
    if kind in ("rate_limit", "overloaded", "provider", "timeout"):
        # The composed detail: a wait may be named in OpenRouter's upstream reason.
        named_wait = {**error, "message": detail} if isinstance(error, dict) else error
        retry_after, source = retry_hint(headers, named_wait)
    return LlmError(kind, message, status=status, retry_after_s=retry_after, retry_source=source)


def classify_exception(
    exc: BaseException, *, provider_label: str, secrets: Iterable[str] = ()
) -> LlmError | None:
    """An exception raised while calling or streaming → :class:`LlmError`; None if foreign."""
    import httpx2
    import openai

    secrets = list(secrets)
    if isinstance(exc, LlmError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        return classify_error_body(
            exc.status_code,
            dict(exc.response.headers),
            exc.body,
            provider_label=provider_label,
            secrets=secrets,
        )
    if isinstance(exc, (openai.APITimeoutError, httpx2.TimeoutException)):
        return LlmError("timeout", f"{provider_label} request timed out before the reply completed")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        reason = f": {scrub(describe_exc(cause), secrets)}" if cause is not None else ""
        return LlmError("network", f"The connection to {provider_label} failed{reason}")
    if isinstance(exc, openai.APIResponseValidationError):
        return LlmError(
            "provider",
            scrub(f"{provider_label} returned data of an unexpected shape: {exc.message}", secrets),
            status=exc.status_code,
        )
    if isinstance(exc, openai.APIError):
        # Raised by the SDK for an ``{"error": ...}`` object in the middle of a stream.
        return classify_error_body(
            None, {}, exc.body, provider_label=provider_label, secrets=secrets
        )
    if isinstance(exc, httpx2.TransportError):
        return LlmError(
            "network",
            scrub(f"The connection to {provider_label} broke mid-reply: {exc}", secrets),
        )
    return None


def malformed_stream_error(
    exc: BaseException, *, provider_label: str, secrets: Iterable[str] = ()
) -> LlmError:
    """The SSE stream could not be decoded (bad JSON, chunks of the wrong shape)."""
    return LlmError(
        "network",
        scrub(f"The {provider_label} response stream was malformed: {describe_exc(exc)}", secrets),
    )


__all__ = [
    "classify_error_body",
    "classify_exception",
    "malformed_stream_error",
    "parse_duration",
    "reset_header_wait",
    "retry_hint",
]
