"""Resuming a session: the current system prompt wins, and the model is told what changed."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import Agent
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.session import SessionState, SessionStore
from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text
from jupyter_codelia.tools import define_tool


class NoInput(BaseModel):
    pass


ping = define_tool(name="ping", description="Ping", input=NoInput, execute=lambda p, c: "pong")
pong = define_tool(name="pong", description="Pong", input=NoInput, execute=lambda p, c: "ping")


def saved_session(store: SessionStore, meta: dict[str, Any]) -> str:
    store.save_state(
        SessionState(
            session_id="s-old",
            updated_at="2020-01-01T10:00:00.000Z",
            messages=[
                {"role": "system", "content": "OLD SYSTEM PROMPT"},
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
            ],
            meta=meta,
        )
    )
    return "s-old"


def sent_text(server: ScriptedAnthropicServer) -> str:
    return json.dumps(server.requests[-1].messages)


@pytest.mark.provider("anthropic")  # reads the Messages API wire format
@pytest.mark.asyncio
async def test_resume_replaces_the_stored_system_prompt_and_lists_what_changed(
    server: ScriptedAnthropicServer, chat: AnthropicChat, tmp_path: Path
) -> None:
    store = SessionStore(tmp_path / "home")
    old_context = {
        "model": "claude-old-1",
        "root": "/old/project",
        "tools": ["gone_tool", "ping"],
        "date": "2020-01-01",
    }
    session_id = saved_session(store, {"codelia_context": old_context})
    server.add(reply(text("ok")), reply(text("ok again")))
    tools = [ping, pong] + standard_tools(root=tmp_path, include_web=False)  # noqa: RUF005
    agent = Agent(chat, tools, system_prompt="NEW SYSTEM PROMPT", session_store=store,
                  session_id=session_id)  # fmt: skip
    await agent.run("continue")
    request = server.requests[0]
    assert "NEW SYSTEM PROMPT" in json.dumps(request.system)
    assert "OLD SYSTEM PROMPT" not in json.dumps(request.json)
    sent = request.messages
    last = json.dumps(sent[-1])
    today = datetime.now(timezone.utc).date().isoformat()
    for line in (
        "<system-reminder>",
        "This session was resumed. Since it was saved:",
        "- The model is now claude-sonnet-5-5 (was claude-old-1).",
        f"- The sandbox root is now {tmp_path} (was /old/project)",
        "- Tools added: apply_patch, done, edit, glob, grep, pong, read,",
        "- Tools removed (do not call them): gone_tool.",
        f"- Today is {today} (the session was saved 2020-01-01).",
    ):
        assert line in json.loads(last)["content"][0]["text"], line
    # The reminder is a context block of its own: the prompt's block is what the person typed.
    assert json.loads(last)["content"][1]["text"] == "continue"
    # Said once: the next turn carries no new reminder, and the snapshot records the context.
    await agent.run("and now?")
    assert sent_text(server).count("<system-reminder>") == 1
    await agent.flush()
    context = store.load_state(session_id).meta["codelia_context"]
    assert context["model"] == "claude-sonnet-5-5" and context["root"] == str(tmp_path)
    assert "gone_tool" not in context["tools"] and "pong" in context["tools"]


@pytest.mark.asyncio
async def test_an_unchanged_context_adds_no_reminder(
    server: ScriptedAnthropicServer, chat: AnthropicChat, tmp_path: Path
) -> None:
    store = SessionStore(tmp_path / "home")
    server.add(reply(text("first")), reply(text("second")))
    first = Agent(chat, [ping], session_store=store, output_cache=None)
    await first.run("hello")
    await first.flush()
    resumed = Agent(chat, [ping], session_store=store, session_id=first.session_id,
                    output_cache=None)  # fmt: skip
    await resumed.run("again")
    assert "<system-reminder>" not in sent_text(server)


@pytest.mark.provider("anthropic")  # reads the Messages API wire format
@pytest.mark.asyncio
async def test_a_snapshot_without_a_context_record_is_compared_on_its_run_logs_model(
    server: ScriptedAnthropicServer, chat: AnthropicChat, tmp_path: Path
) -> None:
    """Saved by an older version (or another client): the newest run log says the model."""
    store = SessionStore(tmp_path / "home")
    session_id = saved_session(store, {})
    for run_id, model in (("run-1", "claude-old-1"), ("run-2", "claude-old-2")):
        log = store.open_run_log(
            run_id=run_id,
            session_id=session_id,
            header={"model": {"provider": "anthropic", "name": model}},
        )
        log.close()
    server.add(reply(text("ok")))
    agent = Agent(chat, [ping], session_store=store, session_id=session_id, output_cache=None)
    await agent.run("continue")
    sent = json.loads(json.dumps(server.requests[0].messages[-1]))["content"][0]["text"]
    assert sent.startswith(
        "<system-reminder>\nThis session was resumed. Since it was saved:\n"
        "- The model is now claude-sonnet-5-5 (was claude-old-2).\n</system-reminder>"
    )
