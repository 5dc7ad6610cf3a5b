"""Sessions through the agent: run logs, snapshots, resume in a fresh process, no leaked secrets."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import Agent
from jupyter_codelia.agent import events as ev
from jupyter_codelia.llm import ChatModel
from jupyter_codelia.session import SessionNotFound, SessionStore, read_jsonl
from jupyter_codelia.standard_tools import TodoSessionHook
from jupyter_codelia.standard_tools.todos import TodoStore, todo_tools
from jupyter_codelia.testing import ScriptedServer, reply, text, tool_use
from jupyter_codelia.tools import ToolContext, define_tool

from .conftest import chat_source, make_chat

FAKE_KEY = "sk-ant-test-0123456789abcdef-SECRET"


class NoInput(BaseModel):
    pass


def _leak(params: NoInput, ctx: ToolContext) -> str:
    return f"env says {os.environ['ANTHROPIC_API_KEY']} and {os.environ['MY_SERVICE_TOKEN']}"


leaky = define_tool(name="leaky", description="Prints secrets", input=NoInput, execute=_leak)


def _todo_agent(chat: ChatModel, store: SessionStore, session_id: str | None = None) -> Agent:
    todos = TodoStore()
    hook = TodoSessionHook(todos)
    return Agent(
        chat,
        todo_tools(todos, hook.current),
        output_cache=None,
        session_store=store,
        session_id=session_id,
        state_hooks=[hook],
    )


@pytest.mark.asyncio
async def test_run_log_records_the_whole_turn(
    server: ScriptedServer, chat: ChatModel, tmp_path: Path
) -> None:
    store = SessionStore(tmp_path / "home")
    server.add(
        reply(tool_use("todo_new", {"todos": [{"content": "Plot", "status": "in_progress"}]})),
        reply(text("Planned.")),
    )
    agent = _todo_agent(chat, store)
    events = [e async for e in agent.run_stream("make a plan")]
    await agent.flush()
    updated = [e for e in events if isinstance(e, ev.TodosUpdatedEvent)]
    assert updated[-1].todos[0].id == "plot"
    paths = store.run_log_paths(agent.session_id)
    assert len(paths) == 1
    records = list(read_jsonl(paths[0]))
    kinds = [r["type"] for r in records]
    assert kinds[0] == "header"
    assert kinds[1:3] == ["run.start", "run.status"]
    assert kinds[-2:] == ["run.status", "run.end"]
    assert records[-1]["outcome"] == "completed"
    assert records[-1]["final"] == "Planned."
    assert kinds.count("llm.request") == 2
    assert kinds.count("llm.response") == 2
    assert "tool.output" in kinds
    seqs = [r["seq"] for r in records if r["type"] == "agent.event"]
    assert seqs == sorted(set(seqs))
    # The log keeps the numbers the events had on the stream (deltas are streamed, not logged).
    streamed = {e.seq: e.type for e in events}
    assert [streamed[r["seq"]] for r in records if r["type"] == "agent.event"] == [
        r["event"]["type"] for r in records if r["type"] == "agent.event"
    ]
    assert [e.seq for e in events] == list(range(len(events)))
    state = store.load_state(agent.session_id)
    assert state.meta["codelia_todos"][0]["content"] == "Plot"
    assert [m["role"] for m in state.messages] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.asyncio
async def test_resume_in_a_fresh_process_restores_history_and_todos(
    server: ScriptedServer, tmp_path: Path, provider: str
) -> None:
    home = tmp_path / "home"
    server.add(
        reply(tool_use("todo_new", {"todos": [{"content": "Load CSV", "status": "pending"}]})),
        reply(text("I will remember 42.")),
        reply(text("You said 42.")),
    )
    script = textwrap.dedent(
        f"""
        import asyncio
        from jupyter_codelia.agent import Agent
        from jupyter_codelia.session import SessionStore
        from jupyter_codelia.standard_tools import TodoSessionHook
        from jupyter_codelia.standard_tools.todos import TodoStore, todo_tools

        async def main():
            todos = TodoStore()
            hook = TodoSessionHook(todos)
            chat = {chat_source(provider, server.url, "k-test-1234")}
            agent = Agent(chat, todo_tools(todos, hook.current), output_cache=None,
                          session_store=SessionStore({str(home)!r}), state_hooks=[hook])
            await agent.run("remember the number 42")
            print(agent.session_id)

        asyncio.run(main())
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    session_id = done.stdout.strip().splitlines()[-1]

    agent = _todo_agent(make_chat(provider, server), SessionStore(home), session_id)
    assert await agent.run("what number?") == "You said 42."
    sent = server.requests[-1].conversation
    assert sent[0] == {"role": "user", "content": "remember the number 42"}
    assert "I will remember 42." in json.dumps(sent)
    assert sent[-1]["role"] == "user"
    todo_hook = agent.state_hooks[0]
    assert isinstance(todo_hook, TodoSessionHook)
    assert [t["content"] for t in todo_hook.store.get(session_id)] == ["Load CSV"]


@pytest.mark.asyncio
async def test_resuming_an_unknown_session_fails_clearly(chat: ChatModel, tmp_path: Path) -> None:
    agent = _todo_agent(
        chat, SessionStore(tmp_path / "home"), "0" * 8 + "-0000-4000-8000-" + "0" * 12
    )
    with pytest.raises(SessionNotFound, match="session not found"):
        await agent.run("hello")


@pytest.mark.asyncio
async def test_no_api_key_in_any_event_log_or_session_file(
    server: ScriptedServer,
    chat: ChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-9f8e7d6c5b4a-very-private")
    home = tmp_path / "home"
    server.add(reply(tool_use("leaky", {})), reply(text("done")))
    agent = Agent(chat, [leaky], output_cache=None, session_store=SessionStore(home))
    events = [e async for e in agent.run_stream("show env")]
    await agent.flush()
    dumped = json.dumps([ev.event_to_json(e) for e in events])
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert "[REDACTED]" in result.result
    for secret in (FAKE_KEY, "tok-9f8e7d6c5b4a-very-private"):
        assert secret not in dumped
        assert secret not in json.dumps(server.requests[-1].json)
        for path in home.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
    headers = json.dumps([r.headers for r in server.requests])
    assert FAKE_KEY not in headers


@pytest.mark.asyncio
async def test_cancelled_run_is_logged_and_saved(
    server: ScriptedServer, chat: ChatModel, tmp_path: Path
) -> None:
    from jupyter_codelia.tools import CancelSignal, RunCancelled

    store = SessionStore(tmp_path / "home")
    server.add(reply(text("slow words " * 40), delay_s=0.03))
    agent = Agent(chat, [], output_cache=None, session_store=store)
    signal = CancelSignal()
    seen: list[Any] = []
    with pytest.raises(RunCancelled):
        async for event in agent.run_stream("talk", signal=signal):
            seen.append(event)
            signal.cancel()
    await agent.flush()
    records = list(read_jsonl(store.run_log_paths(agent.session_id)[0]))
    assert records[-1]["type"] == "run.end"
    assert records[-1]["outcome"] == "cancelled"
    state = store.load_state(agent.session_id)
    assert [m["role"] for m in state.messages] == ["user"]
