"""Compaction near the context limit, against the scripted server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import CompactionConfig
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent._compaction import RETAIN_MARKER, SUMMARY_MARKER, parse_reply
from jupyter_codelia.llm import ChatModel
from jupyter_codelia.llm.messages import AssistantMessage, UserMessage, text_projection
from jupyter_codelia.testing import ScriptedServer, fault, reply, text, tool_use, usage
from jupyter_codelia.tools import define_tool


class AddInput(BaseModel):
    a: int
    b: int


add = define_tool(name="add", description="Add", input=AddInput, execute=lambda p, c: p.a + p.b)

FULL = usage(900, 20)  # 920 of a 1,000-token window: over the 85% threshold
SMALL = CompactionConfig(context_limit=1000)
SUMMARY_REPLY = reply(
    text("<retain>ref toolu_1; file data.csv</retain>\n<summary>We added 2 and 3.</summary>")
)


def kinds(events: list[Any]) -> list[str]:
    return [e.type for e in events if e.type not in ("text_delta", "usage")]


@pytest.mark.asyncio
async def test_compaction_before_final_rebuilds_the_history(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(text("It is 5."), usage=FULL), SUMMARY_REPLY, reply(text("Still 5.")))
    agent = make_agent(chat, [add], system_prompt="Be brief.", compaction=SMALL)
    events = [e async for e in agent.run_stream("what is 2+3?")]
    assert kinds(events) == ["compaction_start", "compaction_complete", "final"]
    assert events[-1].content == "It is 5."
    complete = next(e for e in events if isinstance(e, ev.CompactionCompleteEvent))
    assert complete.compacted is True
    # The summary request has no tools, asks for the two sections and streams nothing.
    summary_request = server.requests[1].json
    assert "tools" not in summary_request
    assert "<summary>" in str(summary_request["messages"][-1]["content"])
    assert not any(isinstance(e, ev.TextDeltaEvent) and "retain" in e.delta for e in events)
    memory, ack, prompt = agent.history[1:]
    assert isinstance(memory, UserMessage)
    texts = [p.text for p in memory.content]
    assert texts[0] == f"{RETAIN_MARKER}\nref toolu_1; file data.csv"
    assert texts[1] == f"{SUMMARY_MARKER}\nWe added 2 and 3."
    assert isinstance(ack, AssistantMessage)
    assert text_projection(prompt.content) == "what is 2+3?"
    # The next turn sends the compacted history.
    assert await agent.run("and again?") == "Still 5."
    sent = server.requests[2].conversation
    assert RETAIN_MARKER in str(sent[0]["content"])
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]


@pytest.mark.asyncio
async def test_compaction_mid_turn_continues_the_task(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(text("Adding."), tool_use("add", {"a": 2, "b": 3}), usage=FULL),
        SUMMARY_REPLY,
        reply(text("The sum is 5.")),
    )
    agent = make_agent(chat, [add], compaction=SMALL)
    events = [e async for e in agent.run_stream("add 2 and 3")]
    assert kinds(events)[-3:] == ["compaction_start", "compaction_complete", "final"]
    assert events[-1].content == "The sum is 5."
    resumed = server.requests[2].messages
    assert resumed[-1]["role"] == "user"
    assert "add 2 and 3" in str(resumed[-1]["content"])
    assert not any("tool_use" in str(m["content"]) for m in resumed)


@pytest.mark.asyncio
async def test_a_failed_compaction_keeps_the_history(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(text("It is 5."), usage=FULL),
        fault.status(400, "invalid_request_error", "prompt is too long"),
    )
    agent = make_agent(chat, [], compaction=SMALL)
    events = [e async for e in agent.run_stream("what is 2+3?")]
    complete = next(e for e in events if isinstance(e, ev.CompactionCompleteEvent))
    assert complete.compacted is False
    assert events[-1].content == "It is 5."
    assert [m.role for m in agent.history] == ["user", "assistant"]


@pytest.mark.asyncio
async def test_below_the_threshold_nothing_happens(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(text("ok"), usage=usage(100, 10)))
    agent = make_agent(chat, [], compaction=SMALL)
    events = [e async for e in agent.run_stream("hi")]
    assert kinds(events) == ["final"]
    assert len(server.requests) == 1


def test_parse_reply_with_and_without_tags() -> None:
    assert parse_reply("<RETAIN>a</RETAIN><summary> b </summary>") == ("a", "b")
    assert parse_reply("<retain>a</retain> just prose") == ("a", "just prose")
    assert parse_reply("plain summary") == (None, "plain summary")


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="threshold_ratio"):
        CompactionConfig(threshold_ratio=0)
    with pytest.raises(ValueError, match="retain_last_turns"):
        CompactionConfig(retain_last_turns=-1)


@pytest.mark.provider("anthropic")  # reads the Messages API wire format
@pytest.mark.asyncio
async def test_force_compaction_summarises_before_the_prompt_whatever_the_size(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(text("It is 5.")), SUMMARY_REPLY, reply(text("Still 5.")))
    agent = make_agent(chat, [add], system_prompt="Be brief.", compaction=None)
    assert await agent.run("what is 2+3?") == "It is 5."
    events = [e async for e in agent.run_stream("and again?", force_compaction=True)]
    assert kinds(events) == ["compaction_start", "compaction_complete", "final"]
    assert next(e for e in events if isinstance(e, ev.CompactionCompleteEvent)).compacted
    assert "tools" not in server.requests[1].json
    sent = server.requests[2].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert RETAIN_MARKER in str(sent[0]["content"])
    assert str(sent[-1]["content"]).count("and again?") == 1


@pytest.mark.asyncio
async def test_compact_now_replaces_the_history_and_saves_the_session(
    server: ScriptedServer, chat: ChatModel, make_agent: Any, tmp_path: Any
) -> None:
    from jupyter_codelia.session import SessionStore

    store = SessionStore(tmp_path / "home")
    server.add(reply(text("It is 5.")), SUMMARY_REPLY)
    agent = make_agent(chat, [add], session_store=store)
    assert await agent.compact() is False  # nothing said yet: no request is made
    await agent.run("what is 2+3?")
    assert await agent.compact() is True
    await agent.flush()
    saved = store.load_state(agent.session_id).messages
    assert SUMMARY_MARKER in json.dumps(saved)
    assert len(server.requests) == 2


@pytest.mark.asyncio
async def test_force_compaction_on_an_empty_history_runs_the_prompt(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(text("Hello.")))
    agent = make_agent(chat, [add], system_prompt="Be brief.", compaction=None)
    events = [e async for e in agent.run_stream("hi", force_compaction=True)]
    assert kinds(events) == ["compaction_start", "compaction_complete", "final"]
    assert events[-1].content == "Hello."
    assert next(e for e in events if isinstance(e, ev.CompactionCompleteEvent)).compacted is False
    assert len(server.requests) == 1  # nothing to summarise: no summary request
