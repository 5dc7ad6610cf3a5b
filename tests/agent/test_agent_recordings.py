"""The agent loop against recorded Messages API responses (tests/llm/recordings), real SDK.

A tool call cut off by ``max_tokens`` is answered, not run; a paused turn is resumed with the
paused reply's blocks unchanged; a reply that fails mid-stream is retracted before the retry.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.agent import Agent
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent._agent import MAX_PAUSE_CONTINUATIONS
from jupyter_codelia.agent._retry import RetryConfig
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.session import SessionStore
from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.testing import ScriptedAnthropicServer, recorded, reply

# Recorded Messages API traffic: these play only against the Anthropic pair.
pytestmark = pytest.mark.provider("anthropic")


async def collect(agent: Agent, prompt: str) -> list[Any]:
    return [e async for e in agent.run_stream(prompt)]


@pytest.mark.asyncio
async def test_a_write_cut_off_by_max_tokens_is_not_run_and_the_file_is_untouched(
    server: ScriptedAnthropicServer,
    chat: AnthropicChat,
    make_agent: Any,
    recordings: Path,
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    report = workspace / "report.txt"
    report.write_text("the old report\n")
    server.add(
        recorded(recordings / "write_cut_off_by_max_tokens.http"),
        reply("I'll write it in parts next."),
    )
    agent = make_agent(chat, standard_tools(root=workspace, include_web=False))
    events = await collect(agent, "write the report")
    assert report.read_text() == "the old report\n"
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert result.is_error
    assert result.tool_call_id == "toolu_01Ge7kS3bXq9WmZr4TfJvNh2"
    assert result.result.startswith(
        "Not run: this write call was cut off at the output limit (max_tokens=32000) before its "
        "arguments were complete (only 740 characters of them arrived), so nothing was "
        "executed or written."
    )
    assert "edit or apply_patch" in result.result
    assert isinstance(events[-1], ev.FinalEvent)
    assert events[-1].content == "I'll write it in parts next."
    # The model hears about it as the call's tool_result.
    answer = server.requests[1].messages[2]
    assert answer["role"] == "user"
    assert answer["content"][0]["type"] == "tool_result"
    assert answer["content"][0]["tool_use_id"] == "toolu_01Ge7kS3bXq9WmZr4TfJvNh2"
    assert answer["content"][0]["is_error"] is True
    assert answer["content"][0]["content"] == result.result
    assert server.requests[1].messages[1]["content"][1]["input"] == {}


@pytest.mark.asyncio
async def test_a_paused_turn_is_resumed_with_the_paused_blocks_unchanged(
    server: ScriptedAnthropicServer,
    chat: AnthropicChat,
    make_agent: Any,
    recordings: Path,
    streamed_blocks: Any,
) -> None:
    server.add(
        recorded(recordings / "web_search_paused.http"),
        recorded(recordings / "web_search_answer_with_citations.http"),
    )
    agent = make_agent(chat)
    events = await collect(agent, "What is the latest pandas release?")
    final = events[-1]
    assert isinstance(final, ev.FinalEvent)
    assert final.content == "The latest release is pandas 3.1.0, released on 12 November 2026."
    assert "[other:" not in final.content
    assert final.citations == [
        ev.Citation(
            title="Release notes: pandas 3.1 — pandas documentation",
            url="https://pandas.pydata.org/docs/whatsnew/v3.1.0.html",
            cited_text="pandas 3.1.0 (November 2026) — These are the changes in pandas 3.1.0. ",
        ),
        ev.Citation(
            title="pandas · PyPI",
            url="https://pypi.org/project/pandas/",
            cited_text="pandas 3.1.0 · pip install pandas · Released: Nov 12, 2026 ",
        ),
    ]
    assert len(server.requests) == 2
    resumed = server.requests[1].messages
    assert [m["role"] for m in resumed] == ["user", "assistant"]
    # Thinking, server_tool_use and the encrypted search results go back byte for byte.
    assert json.dumps(resumed[1]["content"]) == json.dumps(
        streamed_blocks("web_search_paused.http")
    )
    usage = [e for e in events if isinstance(e, ev.UsageEvent)]
    assert [u.web_search_requests for u in usage] == [1, None]
    assert agent.usage.web_search_requests == 1


@pytest.mark.asyncio
async def test_pausing_forever_stops_after_the_bound_with_a_note(
    chat: AnthropicChat, make_agent: Any, recordings: Path
) -> None:
    paused = recorded(recordings / "web_search_paused.http")
    with ScriptedAnthropicServer(lambda request: paused) as server:
        looping = AnthropicChat(model="claude-sonnet-5-5", base_url=server.url, api_key="k")
        events = await collect(make_agent(looping), "search")
    assert len(server.requests) == MAX_PAUSE_CONTINUATIONS + 1
    final = events[-1]
    assert isinstance(final, ev.FinalEvent)
    assert final.content == (
        f"(The model paused its reply {MAX_PAUSE_CONTINUATIONS} times while working with server "
        "tools; codelia stopped resuming it. Ask again to continue.)"
    )


@pytest.mark.asyncio
async def test_text_of_a_reply_that_failed_mid_stream_is_retracted_before_the_retry(
    server: ScriptedAnthropicServer, chat: AnthropicChat, make_agent: Any, recordings: Path
) -> None:
    server.add(recorded(recordings / "overloaded_mid_stream.http"), reply("The whole answer."))
    agent = make_agent(chat, retry=RetryConfig(base_delay_s=0.01, jitter=0))
    events = await collect(agent, "q")
    kinds = [e.type for e in events if e.type != "usage"]
    discarded = kinds.index("text_discarded")
    assert kinds[discarded + 1] == "llm.retry"
    assert set(kinds[:discarded]) == {"text_delta"}
    retried = "".join(e.delta for e in events[discarded:] if isinstance(e, ev.TextDeltaEvent))
    assert retried == "The whole answer."
    assert isinstance(events[-1], ev.FinalEvent)
    assert events[-1].content == "The whole answer."


@pytest.mark.asyncio
async def test_a_resumed_session_replays_server_blocks_and_citations_unchanged(
    server: ScriptedAnthropicServer,
    chat: AnthropicChat,
    make_agent: Any,
    recordings: Path,
    streamed_blocks: Any,
) -> None:
    server.add(
        recorded(recordings / "web_search_paused.http"),
        recorded(recordings / "web_search_answer_with_citations.http"),
        reply("numpy 3.0."),
    )
    store = SessionStore()
    first = make_agent(chat, session_store=store)
    await first.run("What is the latest pandas release?")
    await first.flush()
    resumed = make_agent(chat, session_store=store, session_id=first.session_id)
    assert await resumed.run("And numpy?") == "numpy 3.0."
    sent = server.requests[2].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    paused = streamed_blocks("web_search_paused.http")
    answer = streamed_blocks("web_search_answer_with_citations.http")
    replayed = sent[1]["content"]
    # The paused reply's blocks (thinking, server tool call, encrypted results) byte for byte,
    # then the answer's text blocks with their citations.
    assert json.dumps(replayed[: len(paused)]) == json.dumps(paused)
    assert replayed[len(paused) :] == answer


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stop_reason", "note"),
    [
        ("max_tokens", "(This answer was cut off at the output limit, max_tokens=32000.)"),
        (
            "model_context_window_exceeded",
            "(This answer was cut off: the conversation filled the model's context window.)",
        ),
    ],
)
async def test_an_answer_cut_off_by_a_limit_says_so(
    server: ScriptedAnthropicServer,
    chat: AnthropicChat,
    make_agent: Any,
    stop_reason: str,
    note: str,
) -> None:
    server.add(reply("The first half of the", stop_reason=stop_reason))
    assert await make_agent(chat).run("explain") == f"The first half of the\n{note}"
