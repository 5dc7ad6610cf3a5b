"""The output store reaches the agent however the tool list is built, and nothing is cut
without a ref the model can read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import Agent
from jupyter_codelia.agent import events as ev
from jupyter_codelia.cache import ToolOutputCache, ToolOutputCacheStore
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use
from jupyter_codelia.tools import ToolSet, define_tool

BIG = "\n".join(f"row {i} " + "x" * 60 for i in range(2000))  # ~130 KB, over the 50 KB cap


class NoInput(BaseModel):
    pass


big_tool = define_tool(
    name="big", description="A big table", input=NoInput, execute=lambda p, ctx: BIG
)


def tool_results(server: ScriptedAnthropicServer, request: int) -> list[str]:
    return [
        block["content"] if isinstance(block["content"], str) else json.dumps(block["content"])
        for message in server.requests[request].messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_adding_a_list_keeps_the_toolset_and_its_shared_state(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path / "cache")
    tools = standard_tools(root=tmp_path, output_store=store, include_web=False)
    for combined in ([big_tool] + tools, tools + [big_tool]):  # noqa: RUF005 - the point
        assert isinstance(combined, ToolSet)
        assert combined.output_store is store and combined.state_hooks == tools.state_hooks
        assert "big" in combined.names() and len(combined) == len(tools) + 1


@pytest.mark.provider("anthropic")  # reads the Messages API wire format
@pytest.mark.asyncio
@pytest.mark.parametrize("build", ["plain list", "explicit store"])
async def test_a_big_output_is_cut_only_with_a_ref_the_model_reads_back(
    server: ScriptedAnthropicServer, chat: AnthropicChat, tmp_path: Path, build: str
) -> None:
    store = ToolOutputCacheStore(tmp_path / "cache")
    if build == "plain list":
        # Unpacking into a plain list loses the ToolSet; the reader tools still carry the store.
        agent = Agent(chat, [big_tool, *standard_tools(root=tmp_path, output_store=store)])
    else:
        agent = Agent(chat, [big_tool], output_store=store)
    server.add(
        reply(tool_use("big", {}, id="call_big")),
        reply(tool_use("tool_output_cache", {"ref_id": "call_big", "offset": 1999}))
        if build == "plain list"
        else reply(text("seen")),
        reply(text("done")),
    )
    events = [e async for e in agent.run_stream("show the table")]
    first = tool_results(server, 1)[0]
    assert first.endswith("[tool output truncated; ref=call_big]")
    assert store.read("call_big", 1999, 1) == " 2000  " + BIG.splitlines()[-1]
    if build == "plain list":
        results = [e.result for e in events if isinstance(e, ev.ToolResultEvent)]
        assert BIG.splitlines()[-1] in results[-1]


@pytest.mark.provider("anthropic")  # reads the Messages API wire format
@pytest.mark.asyncio
async def test_without_a_store_nothing_is_cut(
    server: ScriptedAnthropicServer, chat: AnthropicChat
) -> None:
    server.add(reply(tool_use("big", {})), reply(text("seen")))
    agent = Agent(chat, [big_tool])
    await agent.run("show")
    assert tool_results(server, 1) == [BIG]


def test_output_cache_and_output_store_together_are_refused(
    chat: AnthropicChat, tmp_path: Path
) -> None:
    store = ToolOutputCacheStore(tmp_path / "cache")
    with pytest.raises(ValueError, match=r"pass either output_cache=.* or output_store=store"):
        Agent(chat, [], output_cache=ToolOutputCache(store), output_store=store)


@pytest.mark.provider("anthropic")  # reads the Messages API wire format
@pytest.mark.asyncio
async def test_two_sessions_reusing_call_ids_keep_their_own_outputs(
    server: ScriptedAnthropicServer, chat: AnthropicChat, tmp_path: Path
) -> None:
    """Two agents (two sessions, as two notebooks would) share one cache directory and get
    the same tool-call id from the model: each output gets its own ref, each session's ref
    reads back its own output, and the entries record which session wrote them."""
    answers = iter(["first session's table", "second session's table"])
    table = define_tool(
        name="table", description="A table", input=NoInput, execute=lambda p, ctx: next(answers)
    )
    agents = [
        Agent(chat, [table], output_store=ToolOutputCacheStore(tmp_path / "cache"))
        for _ in range(2)
    ]
    refs: list[str | None] = []
    for agent in agents:
        server.add(reply(tool_use("table", {}, id="toolu_1")), reply(text("done")))
        events = [e async for e in agent.run_stream("show the table")]
        refs += [e.output_ref for e in events if isinstance(e, ev.ToolResultEvent)]
    assert refs == ["toolu_1", "toolu_1-2"]
    reader = ToolOutputCacheStore(tmp_path / "cache")
    assert reader.read("toolu_1") == "    1  first session's table"
    assert reader.read("toolu_1-2") == "    1  second session's table"
    sessions = {e.ref_id: e.session_id for e in reader.list_entries()}
    assert sessions == {"toolu_1": agents[0].session_id, "toolu_1-2": agents[1].session_id}
    assert agents[0].session_id != agents[1].session_id


def test_a_tool_set_whose_output_store_is_not_a_store_is_refused_by_name() -> None:
    chat = AnthropicChat(api_key="sk-ant-test-0000", base_url="http://127.0.0.1:9")
    with pytest.raises(TypeError, match="output_store must be a ToolOutputCacheStore, not"):
        Agent(chat, ToolSet([big_tool], output_store="/tmp/cache"))
