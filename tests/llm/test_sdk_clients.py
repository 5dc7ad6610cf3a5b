"""One chat model serves every turn of its agent: across event loops, and through credentials set
in the environment after it was made (``%env ANTHROPIC_API_KEY=...`` after a failed turn)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from jupyter_codelia.llm import LlmError
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.messages import ChatInvokeCompletion, UserMessage, answer_text
from jupyter_codelia.llm.openai import OpenAIChat
from jupyter_codelia.testing import ScriptedAnthropicServer, ScriptedOpenAIServer, reply, text

KEY = "sk-ant-test-000000000000-SECRET"


def _ask(chat: AnthropicChat | OpenAIChat) -> str:
    """One call on a fresh event loop, as each blocking notebook turn makes."""
    return _text(asyncio.run(chat.ainvoke([UserMessage(content="hi")])))


def _text(completion: ChatInvokeCompletion) -> str:
    return "".join(answer_text(m.content) for m in completion.messages)


def test_the_same_anthropic_chat_works_from_one_event_loop_to_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ScriptedAnthropicServer([reply(text("one")), reply(text("two"))]) as server:
        chat = AnthropicChat(base_url=server.url)
        assert [_ask(chat), _ask(chat)] == ["one", "two"]
        assert len(server.requests) == 2


def test_an_anthropic_chat_follows_the_environment_it_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with (
        ScriptedAnthropicServer([reply(text("from a"))]) as first,
        ScriptedAnthropicServer([reply(text("from b"))]) as second,
    ):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", first.url)
        chat = AnthropicChat()

        async def both() -> list[str]:  # one event loop: only the environment changes
            replies = [await chat.ainvoke([UserMessage(content="hi")])]
            monkeypatch.setenv("ANTHROPIC_BASE_URL", second.url)
            replies.append(await chat.ainvoke([UserMessage(content="hi")]))
            return [_text(r) for r in replies]

        assert asyncio.run(both()) == ["from a", "from b"]
        assert (len(first.requests), len(second.requests)) == (1, 1)


def test_an_explicit_base_url_is_not_overridden_by_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ScriptedAnthropicServer([reply(text("a")), reply(text("b"))]) as server:
        chat = AnthropicChat(base_url=server.url)
        _ask(chat)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
        assert _ask(chat) == "b"


def test_a_key_set_after_a_failed_call_is_used_by_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ScriptedOpenAIServer([reply(text("hello"))]) as server:
        chat = OpenAIChat(
            "qwen3-coder", base_url=server.url, provider="vllm", api_key_env="VLLM_API_KEY"
        )
        with pytest.raises(LlmError) as caught:
            _ask(chat)
        assert caught.value.kind == "auth"
        assert "set VLLM_API_KEY" in caught.value.message
        monkeypatch.setenv("VLLM_API_KEY", KEY)
        assert _ask(chat) == "hello"
        assert server.requests[0].headers["authorization"] == "[redacted]"


def test_a_local_server_gets_a_placeholder_key_when_none_is_set() -> None:
    with ScriptedOpenAIServer([reply(text("local"))]) as server:
        chat = OpenAIChat(
            "qwen3-coder",
            base_url=server.url,
            provider="ollama",
            api_key_env="OLLAMA_API_KEY",
            needs_key=False,
        )
        assert _ask(chat) == "local"


# --- clients dropped with their chat model --------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_chats_dropped_after_their_loop_closed_print_nothing(
    provider: str, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """A script calling ``asyncio.run`` per call with a new chat model each time: every dropped
    client pools a connection of a closed loop, and collecting it on a later loop used to
    print "Task exception was never retrieved ... Event loop is closed"."""
    kind = ScriptedAnthropicServer if provider == "anthropic" else ScriptedOpenAIServer
    with kind(lambda _request: reply(text("hi"))) as server:
        for _ in range(3):
            chat = _chat(provider, server.url)
            assert _ask(chat) == "hi"
            del chat

        async def later() -> None:
            gc.collect()
            await asyncio.sleep(0.05)  # where a scheduled close would fail
            gc.collect()

        asyncio.run(later())
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    assert "Event loop is closed" not in capfd.readouterr().err


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_chat_dropped_while_its_loop_runs_closes_its_client_there(provider: str) -> None:
    kind = ScriptedAnthropicServer if provider == "anthropic" else ScriptedOpenAIServer
    with kind(lambda _request: reply(text("hi"))) as server:

        async def use_and_drop() -> Any:
            chat = _chat(provider, server.url)
            await chat.ainvoke([UserMessage(content="hi")])
            client = chat.client
            del chat
            gc.collect()
            await asyncio.sleep(0.05)  # the close scheduled on this loop runs
            return client

        client = asyncio.run(use_and_drop())
    assert client._client.is_closed
    # Closed, not only marked: its pooled connection is gone.
    assert client._client._transport._pool.connections == []


def _chat(provider: str, url: str) -> AnthropicChat | OpenAIChat:
    if provider == "anthropic":
        return AnthropicChat(base_url=url, api_key=KEY)
    return OpenAIChat("gpt-4o", base_url=url, api_key=KEY)
