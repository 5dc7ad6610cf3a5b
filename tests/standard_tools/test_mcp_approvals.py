"""An MCP tool's annotations and config feed the approval decision and the approval card."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.agent import Agent, BudgetLimits
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent._approvals import ConfirmResponse
from jupyter_codelia.agent.permissions import PermissionPolicy, PermissionRule
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.standard_tools.mcp import McpServerConfig, McpServers
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use, usage

SERVER_SCRIPT = str(Path(__file__).parent / "_mcp_server.py")


@pytest.fixture(scope="module")
def servers() -> Iterator[McpServers]:
    config = McpServerConfig(
        command=sys.executable, args=[SERVER_SCRIPT, "stdio"], auto_approve=["echo"]
    )
    mcp = McpServers({"t": config})
    yield mcp
    mcp.close()


def run(
    servers: McpServers, name: str, args: dict[str, Any], policy: PermissionPolicy,
    monkeypatch: pytest.MonkeyPatch, *, script: list[Any] | None = None,
    budget: BudgetLimits | None = None, sent: list[Any] | None = None,
) -> tuple[list[Any], list[ev.PermissionRequestEvent]]:  # fmt: skip
    """One run calling ``name`` (or playing ``script``); a person allows what is asked.

    ``sent`` gets the requests the model received."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    asked: list[ev.PermissionRequestEvent] = []

    async def person(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        asked.append(request)
        return ConfirmResponse(decision="allow")

    tools, _ = servers.tools()
    turns = script or [reply(tool_use(name, args)), reply(text("ok"))]
    with ScriptedAnthropicServer(turns) as model:
        chat = AnthropicChat(base_url=model.url, api_key="sk-ant-test")
        agent = Agent(chat, tools, permissions=policy, confirm=person, output_cache=None)
        agent.budget.configure(run=budget)

        async def events() -> list[Any]:
            return [e async for e in agent.run_stream("go")]

        produced = asyncio.run(events())
        if sent is not None:
            sent.extend(model.requests)
        return produced, asked


def test_a_read_only_tool_runs_without_asking_in_minimal_mode(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, asked = run(
        servers, "t__lookup", {"key": "k"}, PermissionPolicy("minimal"), monkeypatch
    )
    assert asked == []
    assert next(e for e in events if isinstance(e, ev.ToolResultEvent)).result == "value of k"
    call = next(e for e in events if isinstance(e, ev.ToolCallEvent))
    assert call.display_name == "Look up (MCP: t)"  # the annotation's title names the card


def test_a_deny_rule_still_blocks_a_read_only_tool(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = PermissionPolicy("minimal", deny=[PermissionRule(tool="t__lookup")])
    events, asked = run(servers, "t__lookup", {"key": "k"}, policy, monkeypatch)
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert asked == [] and result.is_error and "deny rule" in result.result


def test_a_destructive_tool_asks_and_the_card_says_what_the_server_says(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, asked = run(servers, "t__wipe", {}, PermissionPolicy("minimal"), monkeypatch)
    assert len(asked) == 1
    assert asked[0].message.endswith(
        "The server says this tool may change or delete things. It reaches outside (the web, "
        "other services)."
    )


def test_auto_approve_from_the_config_runs_without_asking(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, asked = run(servers, "t__echo", {"text": "x"}, PermissionPolicy("minimal"), monkeypatch)
    assert asked == []


def test_a_servers_log_lines_reach_the_tool_card(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, _ = run(
        servers, "t__slow_steps", {"steps": 2}, PermissionPolicy("full-access"), monkeypatch
    )
    call = next(e for e in events if isinstance(e, ev.ToolCallEvent))
    lines = [e for e in events if isinstance(e, ev.ToolProgressEvent) and e.level]
    assert [(e.level, e.message) for e in lines] == [("info", "did step 1"), ("info", "did step 2")]
    assert {e.tool_call_id for e in lines} == {call.tool_call_id}
    steps = [e for e in events if isinstance(e, ev.ToolProgressEvent) and e.level is None]
    assert [(e.progress, e.total) for e in steps] == [(1, 2), (2, 2)]
    assert next(e for e in events if isinstance(e, ev.ToolResultEvent)).result == "done"


def test_sampling_is_refused_once_the_runs_budget_is_reached(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The turn that calls the tool stays under the limit; the first sampling reaches it.
    script = [
        reply(tool_use("t__ask_model", {"times": 2}), usage=usage(40, 10)),
        reply(text("Teal."), usage=usage(400, 100)),
        reply(text("Asked the model once."), usage=usage(40, 10)),  # the budget summary
    ]
    sent: list[Any] = []
    events, asked = run(
        servers, "", {}, PermissionPolicy("full-access"), monkeypatch, script=script,
        budget=BudgetLimits(max_tokens=200), sent=sent,
    )  # fmt: skip
    first, second = next(e for e in events if isinstance(e, ev.ToolResultEvent)).result.split("\n")
    assert first == "Teal."
    assert second == "refused: the run budget of 200 tokens reached (550)"
    assert [q.kind for q in asked] == ["sampling"]  # a refused one is not put to the person
    assert len(sent) == 3  # the turn, one sampling, the summary: the second never reached it
    assert "a colour?" in json.dumps(sent[1].json["messages"])
    assert "budget" in json.dumps(sent[2].json["messages"])
    final = next(e for e in events if isinstance(e, ev.FinalEvent)).content
    assert final.startswith("[Budget Reached: run budget of 200 tokens reached (")
