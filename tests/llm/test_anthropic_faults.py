"""Provider failures → LlmError kinds and retry hints, acted out by a real server."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest

from jupyter_codelia.llm import LlmError, UserMessage
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.testing import ScriptedAnthropicServer, fault, reply, text

API_KEY = "sk-ant-test-SECRET-0123456789"


async def failure_of(turn: Any, **chat_options: Any) -> tuple[LlmError, ScriptedAnthropicServer]:
    with ScriptedAnthropicServer([turn]) as server:
        chat = AnthropicChat(base_url=server.url, api_key=API_KEY, **chat_options)
        with pytest.raises(LlmError) as caught:
            await chat.ainvoke([UserMessage(content="hello")])
    return caught.value, server


@pytest.mark.asyncio
async def test_429_with_retry_after_seconds_is_a_rate_limit() -> None:
    error, server = await failure_of(fault.rate_limit(retry_after=7))
    assert error.kind == "rate_limit"
    assert error.status == 429
    assert error.retry_after_s == 7.0
    assert error.retry_source == "retry-after"
    assert error.retryable
    assert "rate_limit_error" in error.message
    assert "exceeded your rate limit" in error.message
    assert len(server.requests) == 1  # no retry inside the SDK


@pytest.mark.asyncio
async def test_retry_after_as_an_http_date() -> None:
    when = datetime.now(timezone.utc) + timedelta(seconds=120)
    error, _ = await failure_of(fault.rate_limit(retry_after=format_datetime(when, usegmt=True)))
    assert error.kind == "rate_limit"
    assert error.retry_source == "retry-after"
    assert error.retry_after_s is not None
    assert 60 < error.retry_after_s <= 121


@pytest.mark.asyncio
async def test_rate_limit_reset_headers_are_used_without_retry_after() -> None:
    reset = (datetime.now(timezone.utc) + timedelta(seconds=90)).isoformat()
    soon = (datetime.now(timezone.utc) + timedelta(seconds=5)).isoformat()
    headers = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": reset,
        "anthropic-ratelimit-requests-remaining": "40",
        "anthropic-ratelimit-requests-reset": soon,
    }
    error, _ = await failure_of(fault.rate_limit(headers=headers))
    assert error.kind == "rate_limit"
    assert error.retry_source == "reset-header"
    assert error.retry_after_s is not None
    assert 60 < error.retry_after_s <= 91  # the exhausted limit, not the sooner one


@pytest.mark.asyncio
async def test_a_wait_named_in_the_error_body_is_the_last_resort() -> None:
    error, _ = await failure_of(
        fault.status(429, "rate_limit_error", "Too many requests, please try again in 12 seconds.")
    )
    assert error.retry_after_s == 12.0
    assert error.retry_source == "provider-body"


@pytest.mark.asyncio
async def test_rate_limit_without_any_hint_leaves_the_wait_to_the_caller() -> None:
    error, _ = await failure_of(fault.rate_limit())
    assert error.kind == "rate_limit"
    assert error.retry_after_s is None
    assert error.retry_source is None


@pytest.mark.asyncio
async def test_500_is_a_retryable_provider_error() -> None:
    error, _ = await failure_of(fault.server_error(500, "boom inside"))
    assert (error.kind, error.status, error.retryable) == ("provider", 500, True)
    assert "boom inside" in error.message


@pytest.mark.asyncio
async def test_529_is_overloaded() -> None:
    error, _ = await failure_of(fault.overloaded(retry_after=3))
    assert (error.kind, error.status, error.retryable) == ("overloaded", 529, True)
    assert error.retry_after_s == 3.0


@pytest.mark.asyncio
async def test_an_error_event_inside_the_stream_is_classified_by_its_type() -> None:
    error, server = await failure_of(fault.error_event("overloaded_error", after_events=4))
    assert error.kind == "overloaded"
    assert error.status is None
    assert error.retryable
    assert "error event in the response stream" in error.message
    assert [name for name, _ in server.requests[0].events][:2] == ["message_start", "ping"]


@pytest.mark.asyncio
async def test_a_connection_dropped_mid_stream_is_a_network_error() -> None:
    long_reply = reply(text(" ".join(f"w{i}" for i in range(50))))
    error, server = await failure_of(fault.drop(after_events=5, reply=long_reply))
    assert (error.kind, error.retryable, error.status) == ("network", True, None)
    assert len(server.requests[0].events) == 5


@pytest.mark.asyncio
async def test_a_stream_that_ends_before_message_stop_is_a_network_error() -> None:
    # A clean end of the body after a few events: nothing at the transport level went wrong.
    error, server = await failure_of(fault.truncate(after_events=4))
    assert error.kind == "network"
    assert "ended before message_stop" in error.message
    assert "message_stop" not in [name for name, _ in server.requests[0].events]


@pytest.mark.asyncio
async def test_malformed_sse_is_a_network_error() -> None:
    error, _ = await failure_of(fault.malformed_sse(after_events=3))
    assert error.kind == "network"
    assert "malformed" in error.message


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "bad_request"), (404, "bad_request"), (413, "bad_request"), (422, "bad_request")],
)
@pytest.mark.asyncio
async def test_client_errors_are_bad_requests_and_not_retried(status: int, kind: str) -> None:
    error, _ = await failure_of(fault.status(status, message="prompt is too long"))
    assert (error.kind, error.status, error.retryable) == (kind, status, False)
    assert "prompt is too long" in error.message


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.asyncio
async def test_auth_failures_never_echo_the_key(status: int) -> None:
    error, server = await failure_of(fault.status(status, message=f"invalid x-api-key: {API_KEY}"))
    assert (error.kind, error.status, error.retryable) == ("auth", status, False)
    assert API_KEY not in error.message
    assert API_KEY not in str(error)
    assert API_KEY not in repr(error)
    assert "[redacted]" in error.message
    recorded = server.requests[0]
    assert recorded.headers["authorization"] == "[redacted]"
    assert API_KEY not in repr(recorded.headers)
    assert API_KEY not in repr(recorded.to_json())


@pytest.mark.asyncio
async def test_running_out_of_script_is_reported_clearly() -> None:
    with ScriptedAnthropicServer([reply("only one")]) as server:
        chat = AnthropicChat(base_url=server.url, api_key=API_KEY)
        await chat.ainvoke([UserMessage(content="q")])
        with pytest.raises(LlmError) as caught:
            await chat.ainvoke([UserMessage(content="q")])
    assert caught.value.kind == "provider"
    assert "no scripted turn left for model request #2 (the script has 1 turn(s))" in (
        caught.value.message
    )
    assert server.errors
    assert "no scripted turn left" in server.errors[0]


@pytest.mark.asyncio
async def test_an_unreachable_server_is_a_network_error() -> None:
    with ScriptedAnthropicServer([]) as server:
        url = server.url
    chat = AnthropicChat(base_url=url, api_key=API_KEY)  # the port is closed now
    with pytest.raises(LlmError) as caught:
        await chat.ainvoke([UserMessage(content="q")])
    assert caught.value.kind == "network"
    assert caught.value.message.startswith("Could not reach the Anthropic API")


@pytest.mark.asyncio
async def test_a_read_timeout_is_a_timeout() -> None:
    slow = reply(text("a b c d e f"), delay_s=2.0)
    with ScriptedAnthropicServer([slow]) as server:
        chat = AnthropicChat(base_url=server.url, api_key=API_KEY, timeout_s=0.3)
        with pytest.raises(LlmError) as caught:
            await chat.ainvoke([UserMessage(content="q")])
    assert (caught.value.kind, caught.value.retryable) == ("timeout", True)


@pytest.mark.asyncio
async def test_missing_credentials_are_an_auth_error_with_a_fix() -> None:
    with ScriptedAnthropicServer([reply("never")]) as server:
        chat = AnthropicChat(base_url=server.url)
        with pytest.raises(LlmError) as caught:
            await chat.ainvoke([UserMessage(content="q")])
    assert caught.value.kind == "auth"
    assert "pass api_key=... to AnthropicChat or set ANTHROPIC_API_KEY" in caught.value.message
    assert server.requests == []


def test_llm_error_rejects_an_unknown_kind() -> None:
    with pytest.raises(
        ValueError, match="unknown LlmError kind 'oops'; expected one of rate_limit"
    ):
        LlmError("oops", "x")  # type: ignore[arg-type]
