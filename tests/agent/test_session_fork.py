"""Two agents (two kernels) resuming one session: neither one's turns are dropped."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import Agent
from jupyter_codelia.agent import events as ev
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.session import SessionConflictError, SessionState, SessionStore
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use
from jupyter_codelia.tools import define_tool


def kernel_agent(chat: AnthropicChat, home: Path, session_id: str | None, tools: Any = ()) -> Agent:
    """An agent with a store of its own, as in a separate kernel."""
    return Agent(chat, tools, session_store=SessionStore(home), session_id=session_id,
                 output_cache=None)  # fmt: skip


async def started_session(chat: AnthropicChat, home: Path) -> str:
    first = kernel_agent(chat, home, None)
    await first.run("start")
    await first.flush()
    return first.session_id


def user_texts(store: SessionStore, session_id: str) -> list[str]:
    state = store.load_state(session_id)
    return [json.dumps(m["content"]) for m in state.messages if m["role"] == "user"]


@pytest.mark.asyncio
async def test_a_resume_that_another_kernel_saved_meanwhile_forks_with_a_note(
    server: ScriptedAnthropicServer, chat: AnthropicChat, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    server.add(*(reply(text(t)) for t in ("started", "A1", "B1", "A2", "B2")))
    session_id = await started_session(chat, home)
    kernel_a = kernel_agent(chat, home, session_id)
    kernel_b = kernel_agent(chat, home, session_id)
    await kernel_a.run("from A 1")
    await kernel_a.flush()
    await kernel_b.run("from B 1")  # B resumes after A's save: it sees A's turn
    await kernel_b.flush()
    events = [e async for e in kernel_a.run_stream("from A 2")]  # A's copy is stale now
    await kernel_a.flush()
    forked = [e for e in events if isinstance(e, ev.SessionForkedEvent)]
    assert len(forked) == 1 and forked[0].forked_from == session_id
    assert kernel_a.session_id == forked[0].session_id != session_id
    store = SessionStore(home)
    ours = [t for t in user_texts(store, session_id) if "from" in t]
    assert ours == ['"from A 1"', '"from B 1"']
    fork = store.load_state(kernel_a.session_id)
    assert [t for t in user_texts(store, fork.session_id) if "from" in t] == [
        '"from A 1"',
        '"from A 2"',
    ]
    assert fork.meta["codelia_forked_from"] == session_id
    # B saved last and keeps the session: its next turn is not forked.
    assert not any(
        [isinstance(e, ev.SessionForkedEvent) async for e in kernel_b.run_stream("from B 2")]
    )
    await kernel_b.flush()
    assert user_texts(store, session_id)[-1] == '"from B 2"'


class NoInput(BaseModel):
    pass


@pytest.mark.asyncio
async def test_a_save_racing_another_kernels_save_forks_and_the_next_turn_says_so(
    server: ScriptedAnthropicServer, chat: AnthropicChat, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    gate = asyncio.Event()

    async def wait_for_a(params: NoInput, ctx: Any) -> str:
        await gate.wait()
        return "waited"

    wait_tool = define_tool(name="wait", description="Wait", input=NoInput, execute=wait_for_a)
    server.add(reply(text("started")))
    session_id = await started_session(chat, home)
    kernel_a = kernel_agent(chat, home, session_id)
    kernel_b = kernel_agent(chat, home, session_id, [wait_tool])
    server.add(reply(tool_use("wait", {})))  # B's turn starts and blocks in its tool

    async def turn_b() -> list[Any]:
        return [e async for e in kernel_b.run_stream("from B")]

    b_task = asyncio.ensure_future(turn_b())
    while len(server.requests) < 2:
        await asyncio.sleep(0.01)
    server.add(reply(text("A here")))
    await kernel_a.run("from A")  # A saves while B is mid-turn
    await kernel_a.flush()
    server.add(reply(text("B here")))
    gate.set()
    first_turn = await b_task
    assert not any(isinstance(e, ev.SessionForkedEvent) for e in first_turn)
    await kernel_b.flush()
    store = SessionStore(home)
    assert [t for t in user_texts(store, session_id) if "from" in t] == ['"from A"']
    server.add(reply(text("B again")))
    second_turn = [e async for e in kernel_b.run_stream("B again")]
    forked = [e for e in second_turn if isinstance(e, ev.SessionForkedEvent)]
    assert len(forked) == 1 and forked[0].forked_from == session_id
    await kernel_b.flush()
    texts = user_texts(store, kernel_b.session_id)
    assert any("from B" in t for t in texts) and any("B again" in t for t in texts)


def test_the_store_refuses_a_save_over_a_newer_generation(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    assert store.save_state(SessionState(session_id="s"), expected_generation=0) == 1
    assert store.save_state(SessionState(session_id="s"), expected_generation=1) == 2
    with pytest.raises(SessionConflictError) as caught:
        store.save_state(SessionState(session_id="s"), expected_generation=1)
    assert str(caught.value) == (
        "session s was saved by another process meanwhile (generation 2, this writer expected 1)"
    )
    assert store.load_state("s").generation == 2
    assert store.save_state(SessionState(session_id="s")) == 3  # no expectation: last one wins
