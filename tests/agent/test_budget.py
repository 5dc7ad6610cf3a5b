"""Budgets per run and per session: the real SDK against the scripted server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jupyter_codelia.agent import Agent, BudgetLimits
from jupyter_codelia.agent import events as ev
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.messages import ChatInvokeUsage, ToolMessage
from jupyter_codelia.llm.pricing import cost_usd
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use, usage
from jupyter_codelia.tools import ToolContext, define_tool

from .conftest import FAKE_KEY, NoInput, add

SUMMARY = "Summary: added some numbers."


async def collect(agent: Agent, prompt: str) -> list[Any]:
    return [e async for e in agent.run_stream(prompt)]


def of_type(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


@pytest.mark.asyncio
async def test_tool_call_budget_ends_the_run_exactly_at_its_limit(
    server: ScriptedAnthropicServer, chat: AnthropicChat, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("add", {"a": 1, "b": 1})),
        reply(tool_use("add", {"a": 2, "b": 2})),
        # Without the budget the next request would get this reply as the model's last word.
        reply(text(SUMMARY)),
    )
    agent = make_agent(chat, [add])
    agent.budget.configure(run=BudgetLimits(max_tool_calls=2))
    events = await collect(agent, "add things")
    assert len(of_type(events, ev.ToolResultEvent)) == 2
    final = of_type(events, ev.FinalEvent)[-1].content
    assert final == f"[Budget Reached: run budget of 2 tool calls reached (2)]\n\n{SUMMARY}"
    reached = [e for e in of_type(events, ev.BudgetEvent) if e.reached]
    assert [e.reached for e in reached] == ["run budget of 2 tool calls reached (2)"]
    assert reached[0].run_spent["tool_calls"] == 2
    assert reached[0].run_limits == {"max_tool_calls": 2.0}
    # Two tool replies and the summary call, which has no tools and says why it is asked.
    assert len(server.requests) == 3
    summary_request = server.requests[-1]
    assert summary_request.json.get("tool_choice", {}).get("type") in (None, "none")
    assert "The budget for this work has been reached" in str(summary_request.messages[-1])


@pytest.mark.asyncio
@pytest.mark.provider("anthropic")  # prices a Claude model; the chat is Anthropic's
async def test_cost_budget_stops_before_the_tools_of_the_reply_that_reached_it(
    server: ScriptedAnthropicServer, chat: AnthropicChat, make_agent: Any
) -> None:
    per_call = cost_usd(ChatInvokeUsage(model="claude-sonnet-5-5", input_tokens=1000))
    assert per_call is not None and per_call > 0
    spend = usage(1000, 0)
    server.add(
        reply(tool_use("add", {"a": 1, "b": 1}), usage=spend),
        reply(tool_use("add", {"a": 2, "b": 2}), usage=spend),
        reply(tool_use("add", {"a": 3, "b": 3}), tool_use("add", {"a": 4, "b": 4}), usage=spend),
        reply(text(SUMMARY), usage=spend),
    )
    agent = make_agent(chat, [add])
    agent.budget.configure(run=BudgetLimits(max_cost_usd=per_call * 2.5))
    events = await collect(agent, "add things")
    assert len(of_type(events, ev.ToolResultEvent)) == 2
    final = of_type(events, ev.FinalEvent)[-1].content
    assert final.startswith(f"[Budget Reached: run budget of ${per_call * 2.5:.4f} cost reached")
    assert final.endswith(SUMMARY)
    skipped = [
        m for m in agent.history if isinstance(m, ToolMessage) and "Not run" in str(m.content)
    ]
    assert len(skipped) == 2
    assert str(skipped[0].content).startswith("Not run: the run budget of $")
    assert agent.budget.run.cost_usd == pytest.approx(per_call * 4)


@pytest.mark.asyncio
async def test_session_budget_spans_runs_and_a_token_budget_counts_both_directions(
    server: ScriptedAnthropicServer, chat: AnthropicChat, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("add", {"a": 1, "b": 1}), usage=usage(100, 50)),
        reply(text("first done"), usage=usage(100, 50)),
        reply(text(SUMMARY), usage=usage(10, 10)),
    )
    agent = make_agent(chat, [add])
    agent.budget.configure(session=BudgetLimits(max_tokens=300))
    first = await collect(agent, "one")
    assert of_type(first, ev.FinalEvent)[-1].content == "first done"
    second = await collect(agent, "two")
    final = of_type(second, ev.FinalEvent)[-1].content
    assert final == f"[Budget Reached: session budget of 300 tokens reached (300)]\n\n{SUMMARY}"
    assert of_type(second, ev.ToolResultEvent) == []
    assert agent.budget.session.tokens == 320


@pytest.mark.asyncio
async def test_wall_time_budget_never_cuts_a_tool_in_half(
    server: ScriptedAnthropicServer, chat: AnthropicChat, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("long_step", {}), tool_use("long_step", {})),
        reply(text(SUMMARY)),
    )
    agent: Agent = make_agent(chat, [])
    finished: list[str] = []

    async def long_step(params: NoInput, ctx: ToolContext) -> str:
        # The limit passes while the tool runs (no clock race: it is set from inside the tool).
        agent.budget.configure(run=BudgetLimits(max_wall_seconds=0.001))
        await asyncio.sleep(0.05)
        finished.append("step")
        return "rested"

    agent.tools = [define_tool(name="long_step", description="Works", input=NoInput,
                               execute=long_step)]  # fmt: skip
    events = await collect(agent, "rest")
    results = of_type(events, ev.ToolResultEvent)
    assert [r.result for r in results] == [
        "rested"
    ]  # the first step finished; the second never ran
    assert finished == ["step"]
    assert "run budget of 0.0 s wall time reached" in of_type(events, ev.FinalEvent)[-1].content


@pytest.mark.asyncio
@pytest.mark.provider("anthropic")  # prices a Claude model; the chat is Anthropic's
async def test_a_cost_budget_with_an_unknown_price_is_reported_not_ignored(
    server: ScriptedAnthropicServer,
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 1})), reply(text(SUMMARY)))
    chat = AnthropicChat(model="claude-unpriced-test", base_url=server.url, api_key=FAKE_KEY)
    agent = Agent(chat, [add], output_cache=None)
    agent.budget.configure(run=BudgetLimits(max_cost_usd=1.0))
    events = await collect(agent, "add")
    final = of_type(events, ev.FinalEvent)[-1].content
    assert final.startswith(
        "[Budget Reached: run budget of $1.0000 cost cannot be checked: the model's price is "
        "unknown]"
    )
    assert of_type(events, ev.ToolResultEvent) == []


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="greater than 0"):
        BudgetLimits(max_cost_usd=0)
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        BudgetLimits.model_validate({"max_dollars": 1})
