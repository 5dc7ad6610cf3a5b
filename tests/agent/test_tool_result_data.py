"""A tool result's application data: typed on the event, masked, persisted, replayed, never sent
to the model; and how each call ended (completed, error, denied, cut off)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia import wire
from jupyter_codelia.agent import Agent
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent.permissions import PermissionPolicy, PermissionRule
from jupyter_codelia.llm import ChatModel
from jupyter_codelia.session import SessionStore, read_jsonl
from jupyter_codelia.testing import ScriptedServer, reply, text, tool_use
from jupyter_codelia.tools import (
    NamespaceChange,
    ToolError,
    ToolResultData,
    ToolReturn,
    ToolRisk,
    define_tool,
)

SECRET = "correct horse battery staple"


class NoInput(BaseModel):
    pass


def _change(params: NoInput, ctx: Any) -> ToolReturn:
    diff = f"--- a.env\n+++ a.env\n@@ -1 +1 @@\n-x\n+PASSWORD={SECRET}"
    data = ToolResultData(
        diff=diff,
        edit_id="e-1",
        namespace_changes=[NamespaceChange(name="x", change="added")],
        job_id="job-1",
    )
    return ToolReturn("changed it", data)


def _fail(params: NoInput, ctx: Any) -> str:
    raise ToolError("no luck")


change = define_tool(
    name="change",
    description="Change",
    input=NoInput,
    execute=_change,
    risk=ToolRisk(kind="read_only"),
)
fail = define_tool(
    name="fail", description="Fail", input=NoInput, execute=_fail, risk=ToolRisk(kind="read_only")
)
blocked = define_tool(name="blocked", description="Blocked", input=NoInput, execute=lambda p, c: 1)


def _results(events: list[Any]) -> list[ev.ToolResultEvent]:
    return [e for e in events if isinstance(e, ev.ToolResultEvent)]


@pytest.mark.asyncio
async def test_data_reaches_the_event_masked_and_persisted_but_never_the_model(
    server: ScriptedServer, chat: ChatModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DB_PASSWORD", SECRET)
    store = SessionStore(tmp_path / "home")
    server.add(reply(tool_use("change", {})), reply(text("Done.")))
    agent = Agent(chat, [change], output_cache=None, session_store=store)
    events = [e async for e in agent.run_stream("change it")]
    await agent.flush()
    (result,) = _results(events)
    assert result.data.outcome == "completed"
    assert result.data.edit_id == "e-1" and result.data.job_id == "job-1"
    assert result.data.namespace_changes == [NamespaceChange(name="x", change="added")]
    assert result.data.diff is not None and SECRET not in result.data.diff
    assert "[REDACTED]" in result.data.diff
    # The model read only the content.
    sent = json.dumps(server.requests[1].json)
    assert "changed it" in sent and "e-1" not in sent and "job-1" not in sent
    # The run log holds the event with its data, and a replay carries it typed.
    (path,) = store.run_log_paths(agent.session_id)
    records = list(read_jsonl(path))
    assert SECRET not in path.read_text(encoding="utf-8")
    replayed = [
        m["event"]
        for m in wire.transcript_messages(records, agent.session_id or "")
        if m["type"] == "agent.event" and m["event"]["type"] == "tool_result"
    ]
    assert [ev.event_adapter.validate_python(e).data for e in replayed] == [result.data]


@pytest.mark.asyncio
async def test_each_call_says_how_it_ended(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("fail", {}, id="c1"), tool_use("blocked", {}, id="c2")),
        reply(tool_use("nope", {}, id="c3")),
        reply(text("Done.")),
    )
    policy = PermissionPolicy("minimal", deny=[PermissionRule(tool="blocked")])
    agent = make_agent(chat, [fail, blocked], permissions=policy)
    outcomes = [r.data.outcome for r in _results([e async for e in agent.run_stream("go")])]
    assert outcomes == ["error", "denied", "error"]
