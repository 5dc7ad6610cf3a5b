"""Retry hints: Retry-After (seconds, HTTP date, -ms), rate-limit reset headers, body text."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from jupyter_codelia.llm.anthropic._errors import (
    classify_status,
    parse_retry_after,
    reset_header_wait,
    retry_hint,
)

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        ("1.5", 1.5),
        ("-4", 0.0),
        ("Sun, 29 Nov 2026 12:00:30 GMT", 30.0),
        ("Sun, 29 Nov 2026 11:00:00 GMT", 0.0),
        ("soon", None),
        ("", None),
        (None, None),
        ("nan", None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


def test_reset_headers_prefer_the_exhausted_limit() -> None:
    headers = {
        "Anthropic-RateLimit-Requests-Remaining": "10",
        "anthropic-ratelimit-requests-reset": (NOW + timedelta(seconds=2)).isoformat(),
        "anthropic-ratelimit-output-tokens-remaining": "0",
        "anthropic-ratelimit-output-tokens-reset": "2026-11-29T12:00:45Z",
    }
    assert reset_header_wait(headers, now=NOW) == 45.0
    del headers["anthropic-ratelimit-output-tokens-remaining"]
    assert reset_header_wait(headers, now=NOW) == 2.0  # nothing exhausted: the soonest reset
    assert reset_header_wait({"anthropic-ratelimit-tokens-reset": "garbage"}, now=NOW) is None


def test_retry_hint_order_of_trust() -> None:
    body = {"error": {"type": "rate_limit_error", "message": "try again in 900ms"}}
    reset = {"anthropic-ratelimit-tokens-reset": "2026-11-29T12:00:10Z"}
    assert retry_hint({"retry-after-ms": "250", "retry-after": "9", **reset}, body, now=NOW) == (
        0.25,
        "retry-after",
    )
    assert retry_hint({"Retry-After": "9", **reset}, body, now=NOW) == (9.0, "retry-after")
    assert retry_hint(reset, body, now=NOW) == (10.0, "reset-header")
    assert retry_hint({}, body, now=NOW) == (0.9, "provider-body")
    assert retry_hint({}, {"error": {"retry_after": 4}}, now=NOW) == (4.0, "provider-body")
    assert retry_hint({}, {"error": {"message": "slow down"}}, now=NOW) == (None, None)


def test_bad_requests_carry_no_retry_hint_and_are_not_retryable() -> None:
    error = classify_status(
        400, {"retry-after": "5"}, {"error": {"type": "invalid_request_error", "message": "bad"}}
    )
    assert (error.kind, error.retry_after_s, error.retryable) == ("bad_request", None, False)
    assert error.message == "Anthropic API invalid_request_error (HTTP 400): bad"


def test_secrets_and_huge_bodies_are_kept_out_of_messages() -> None:
    error = classify_status(
        500,
        {},
        {"error": {"type": "api_error", "message": "key sk-1 " + "x" * 2000}},
        secrets=["sk-1"],
    )
    assert "sk-1" not in error.message
    assert len(error.message) <= 500
    assert classify_status(502, {}, "<html>bad gateway</html>").message == (
        "Anthropic API (HTTP 502): <html>bad gateway</html>"
    )
