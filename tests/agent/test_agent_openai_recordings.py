"""The agent loop with OpenAIChat against recorded OpenAI-side traffic (tests/llm/recordings).

What the agent says under an answer a limit or a filter stopped, and what it does with a tool
call the limit cut off, come from the completion's provider-neutral ``stop_kind``: the same
notes and the same "not run" answer as with Anthropic's stop reasons. A final provider failure
is not retried; DeepSeek's thinking mode runs a tool turn through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import Agent, AgentRunError
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent._agent import NO_ANSWER_AT_LIMIT
from jupyter_codelia.llm.openai import OpenAIChat
from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.testing import (
    ScriptedOpenAIServer,
    recorded,
    reply,
)
from jupyter_codelia.tools import define_tool

RECORDINGS = Path(__file__).parents[1] / "llm" / "recordings"
KEY = "sk-proj-test-SECRET-0099887766"


class ReadInput(BaseModel):
    file_path: str


read = define_tool(
    name="read",
    description="Read a file",
    input=ReadInput,
    execute=lambda params, ctx: "a,b\n1,2\n3,4\n5,6",
)


def rec(name: str) -> Any:
    return recorded(RECORDINGS / name)


def agent_for(chat: OpenAIChat, tools: Any = ()) -> Agent:
    return Agent(chat, list(tools), output_cache=None)


async def collect(agent: Agent, prompt: str) -> list[Any]:
    return [event async for event in agent.run_stream(prompt)]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("recording", "model", "options", "final"),
    [
        (
            "openai_chat_cut_after_one_token.http",
            "gpt-4.1",
            {"max_tokens": 1},
            '{"\n(This answer was cut off at the output limit, max_tokens=1.)',
        ),
        (
            "openai_chat_reasoning_spent_the_limit.http",
            "gpt-5-mini",
            {"max_tokens": 1926},
            NO_ANSWER_AT_LIMIT.format(limit=", max_tokens=1926"),
        ),
        (
            "openai_responses_incomplete_reasoning_only.http",
            "gpt-5",
            {"max_tokens": 1926, "api": "responses"},
            NO_ANSWER_AT_LIMIT.format(limit=", max_tokens=1926"),
        ),
        (
            "azure_chat_content_filter.http",
            "gpt-4o",
            {},
            "The scene opens in the old quarry, where\n(The provider's content filter stopped "
            "this answer, so it may be incomplete.)",
        ),
    ],
)
async def test_an_answer_a_limit_or_filter_stopped_says_so(
    recording: str, model: str, options: dict[str, Any], final: str
) -> None:
    with ScriptedOpenAIServer([rec(recording)]) as server:
        chat = OpenAIChat(model, base_url=server.url, api_key=KEY, **options)
        assert await agent_for(chat).run("go") == final


@pytest.mark.asyncio
async def test_an_answer_cut_at_a_local_servers_own_limit_says_so_without_a_number() -> None:
    with ScriptedOpenAIServer([rec("openai_chat_cut_after_one_token.http")]) as server:
        chat = OpenAIChat("qwen3-coder", base_url=server.url, provider="vllm", needs_key=False)
        assert chat.max_tokens is None
        final = await agent_for(chat).run("go")
    assert final == '{"\n(This answer was cut off at the output limit.)'


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("recording", "options"),
    [
        ("openai_chat_write_cut_by_length.http", {}),
        ("openai_responses_write_cut_off.http", {"api": "responses"}),
    ],
)
async def test_a_write_the_limit_cut_off_is_not_run_and_the_model_is_told_to_use_smaller_steps(
    recording: str, options: dict[str, Any], tmp_path: Path
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    report = workspace / "report.txt"
    report.write_text("the old report\n")
    with ScriptedOpenAIServer([rec(recording), reply("I'll write it in parts next.")]) as server:
        chat = OpenAIChat("gpt-4.1", base_url=server.url, api_key=KEY, max_tokens=32, **options)
        events = await collect(
            agent_for(chat, standard_tools(root=workspace, include_web=False)), "write"
        )
    assert report.read_text() == "the old report\n"
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert result.is_error
    assert result.result.startswith(
        "Not run: this write call was cut off at the output limit (max_tokens=32) before its "
        "arguments were complete"
    )
    assert "edit or apply_patch" in result.result
    assert events[-1].content == "I'll write it in parts next."


@pytest.mark.asyncio
async def test_a_deepseek_thinking_tool_turn_runs_through(insisting_server: Any) -> None:
    def accepts(turns: list[dict[str, Any]]) -> bool:
        return all("reasoning_content" in m for m in turns if m.get("tool_calls"))

    with insisting_server(
        "deepseek_thinking_tool_call.http",
        "deepseek_answer_after_tool.http",
        "deepseek_reasoning_not_passed_back.http",
        accepts,
    ) as server:
        chat = OpenAIChat("deepseek-v4-flash", base_url=server.url, api_key=KEY)
        events = await collect(agent_for(chat, [read]), "How many rows has data.csv?")
    assert events[-1].content == "data.csv has 3 rows."
    assert len(server.requests) == 2
    thoughts = [e.content for e in events if isinstance(e, ev.ReasoningEvent)]
    assert thoughts[0].startswith("The user wants the size of data.csv.")


@pytest.mark.asyncio
async def test_an_openrouter_error_after_a_finished_reply_is_not_retried() -> None:
    with ScriptedOpenAIServer([rec("openrouter_error_after_length.http")]) as server:
        chat = OpenAIChat(
            "minimax/minimax-m2",
            base_url=server.url,
            api_key=KEY,
            provider="openrouter",
            max_tokens=16,
        )
        events = await collect(agent_for(chat), "hi")
    assert len(server.requests) == 1
    assert not [e for e in events if isinstance(e, ev.LlmRetryEvent)]
    assert events[-1].content == NO_ANSWER_AT_LIMIT.format(limit=", max_tokens=16")


@pytest.mark.asyncio
async def test_an_account_out_of_credit_fails_at_once() -> None:
    with ScriptedOpenAIServer([rec("openai_429_insufficient_quota.http")]) as server:
        chat = OpenAIChat("gpt-4o", base_url=server.url, api_key=KEY)
        with pytest.raises(AgentRunError) as caught:
            await agent_for(chat).run("hi")
    assert len(server.requests) == 1
    assert caught.value.kind == "quota"
    assert "out of credit" in str(caught.value)
