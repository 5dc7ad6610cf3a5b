"""The run loop end to end: the real SDKs against scripted servers, once per provider."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any

import pytest
from PIL import Image

from jupyter_codelia.agent import Agent, AgentRunError, ConfirmResponse, RetryConfig
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent.permissions import PermissionPolicy
from jupyter_codelia.llm import ChatModel
from jupyter_codelia.llm.messages import AssistantMessage, ImagePart, ToolMessage
from jupyter_codelia.testing import ScriptedServer, fault, reply, text, tool_use
from jupyter_codelia.tools import (
    CancelSignal,
    RunCancelled,
    ToolContext,
    define_tool,
    done_tool,
    risk_of,
)

from .conftest import OVERLOADED_STATUS, NoInput, add


def _boom(params: NoInput, ctx: ToolContext) -> str:
    raise RuntimeError("disk is on fire")


boom = define_tool(name="boom", description="Always fails", input=NoInput, execute=_boom)


async def _hang(params: NoInput, ctx: ToolContext) -> str:
    ctx.send(ev.TextEvent(content="hang started"))
    await asyncio.sleep(3600)
    return "never"


hang = define_tool(name="hang", description="Waits forever", input=NoInput, execute=_hang)


def _png(width: int = 4, height: int = 3) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


snapshot = define_tool(
    name="snapshot",
    description="Returns a picture",
    input=NoInput,
    execute=lambda p, ctx: [
        {"type": "text", "text": "here is the picture"},
        ImagePart.from_bytes(_png(), "image/png"),
    ],
)


async def collect(agent: Agent, prompt: str, **kwargs: Any) -> list[Any]:
    return [e async for e in agent.run_stream(prompt, **kwargs)]


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events if e.type not in ("text_delta", "usage")]


@pytest.mark.asyncio
async def test_multi_step_tool_run_streams_and_ends_with_final(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(text("Adding."), tool_use("add", {"a": 2, "b": 3})),
        reply(text("Now again."), tool_use("add", {"a": 5, "b": 10})),
        reply(text("The total is 15.")),
    )
    agent = make_agent(chat, [add], system_prompt="You add numbers.")
    events = await collect(agent, "add things")
    assert types(events) == [
        "text",
        "step_start",
        "tool_call",
        "tool_result",
        "step_complete",
        "text",
        "step_start",
        "tool_call",
        "tool_result",
        "step_complete",
        "final",
    ]
    results = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert [r.result for r in results] == ["5", "15"]
    assert events[-1] == ev.FinalEvent(content="The total is 15.", seq=len(events) - 1)
    deltas = "".join(e.delta for e in events if isinstance(e, ev.TextDeltaEvent))
    assert "The total is 15." in deltas
    usage = [e for e in events if isinstance(e, ev.UsageEvent)]
    assert len(usage) == 3 and usage[-1].total_output_tokens > 0
    # The second request carries the first tool result back to the model.
    assert server.requests[1].tool_results()[0]["text"] == "5"
    assert "You add numbers." in json.dumps(server.requests[0].json)


@pytest.mark.asyncio
async def test_done_tool_ends_the_turn_with_its_message(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("done", {"message": "All finished."}), tool_use("add", {"a": 1, "b": 1}))
    )
    agent = make_agent(chat, [done_tool(), add])
    events = await collect(agent, "finish")
    assert events[-1] == ev.FinalEvent(content="All finished.", seq=len(events) - 1)
    # The call after `done` never ran and left no dangling tool_use in history.
    assert not any(isinstance(e, ev.ToolResultEvent) and e.tool == "add" for e in events)
    calls = [
        c for m in agent.history if isinstance(m, AssistantMessage) for c in m.tool_calls or []
    ]
    assert [c.function.name for c in calls] == ["done"]
    assert len(server.requests) == 1


@pytest.mark.asyncio
async def test_unknown_tool_and_exceptions_reach_the_model_and_loop_continues(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("nope", {}), tool_use("boom", {})),
        reply(text("Sorry, both failed.")),
    )
    agent = make_agent(chat, [boom, add])
    events = await collect(agent, "try")
    results = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert results[0].is_error and results[0].result.startswith("Error: Unknown tool 'nope'")
    assert "Available tools: boom, add" in results[0].result
    assert results[1].result == "Error executing tool: disk is on fire"
    completes = [e for e in events if isinstance(e, ev.StepCompleteEvent)]
    assert [c.status for c in completes] == ["error", "error"]
    assert events[-1].content == "Sorry, both failed."


@pytest.mark.asyncio
async def test_invalid_arguments_are_repaired_on_the_next_turn(
    server: ScriptedServer, chat: ChatModel, make_agent: Any, provider: str
) -> None:
    server.add(
        reply(tool_use("add", {"a": 1, "c": 2})),
        reply(tool_use("add", {"a": 1, "b": 2})),
        reply(text("3")),
    )
    agent = make_agent(chat, [add])
    events = await collect(agent, "add")
    first = [e for e in events if isinstance(e, ev.ToolResultEvent)][0]
    assert first.is_error
    assert 'Unrecognized key: "c" (accepted keys: a, b)' in first.result
    assert 'missing required field "b"' in first.result
    sent = server.requests[1].tool_results()[-1]
    assert sent["is_error"] is (True if provider == "anthropic" else None)
    assert "Tool input validation failed for add" in sent["text"]
    assert events[-1].content == "3"


def _write_policy() -> PermissionPolicy:
    return PermissionPolicy(mode="minimal")


@pytest.mark.asyncio
async def test_denial_with_reason_lets_the_model_continue(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("OK, I will not add.")))
    asked: list[ev.PermissionRequestEvent] = []

    async def confirm(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        asked.append(request)
        return ConfirmResponse(decision="deny", reason="  use a calculator  ")

    agent = make_agent(chat, [add], permissions=_write_policy(), confirm=confirm)
    events = await collect(agent, "add")
    assert asked[0].tool == "add" and asked[0].args == {"a": 1, "b": 2}
    result = [e for e in events if isinstance(e, ev.ToolResultEvent)][0]
    assert result.result == "Permission denied: use a calculator"
    kinds = types(events)
    assert kinds.index("permission.request") < kinds.index("permission.resolved")
    assert kinds.index("permission.resolved") < kinds.index("tool_result")
    assert events[-1].content == "OK, I will not add."
    assert len(server.requests) == 2


@pytest.mark.asyncio
async def test_tool_duration_excludes_the_wait_for_approval(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(tool_use("add", {"a": 2, "b": 2})))
    server.add(reply(text("done")))

    async def confirm(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        await asyncio.sleep(0.5)  # the person thinks it over
        return ConfirmResponse(decision="allow_remember")

    agent = make_agent(chat, [add], permissions=_write_policy(), confirm=confirm)
    started = time.monotonic()
    events = await collect(agent, "add twice")
    elapsed_ms = (time.monotonic() - started) * 1000
    first, second = [e for e in events if isinstance(e, ev.StepCompleteEvent)]
    assert first.approval_wait_ms is not None and first.approval_wait_ms >= 500
    # The tool's own time is what is left of the whole run once the wait is taken out.
    assert first.duration_ms <= elapsed_ms - first.approval_wait_ms
    assert second.approval_wait_ms is None  # "always allow": nobody was asked


@pytest.mark.asyncio
async def test_denial_without_reason_stops_the_turn(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})))

    async def confirm(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        return ConfirmResponse(decision="deny")

    agent = make_agent(chat, [add], permissions=_write_policy(), confirm=confirm)
    events = await collect(agent, "add")
    assert events[-1].content.startswith("Permission request was denied. Turn stopped.")
    assert len(server.requests) == 1


@pytest.mark.asyncio
async def test_no_confirm_callback_means_deny(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("denied")))
    agent = make_agent(chat, [add], permissions=_write_policy(), confirm=None)
    events = await collect(agent, "add")
    result = [e for e in events if isinstance(e, ev.ToolResultEvent)][0]
    assert result.result == "Permission denied: UI confirm not supported"


@pytest.mark.asyncio
async def test_allow_remember_persists_and_skips_the_next_confirm(
    server: ScriptedServer, chat: ChatModel, tmp_path: Any, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("add", {"a": 1, "b": 2})),
        reply(tool_use("add", {"a": 3, "b": 4})),
        reply(text("7")),
    )
    asked: list[str] = []

    async def confirm(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        asked.append(request.tool)
        return ConfirmResponse(decision="allow_remember")

    config = tmp_path / "permissions.json"
    policy = PermissionPolicy(mode="minimal", config_path=config)
    agent = make_agent(chat, [add], permissions=policy, confirm=confirm)
    events = await collect(agent, "add twice")
    assert asked == ["add"]
    assert [e.result for e in events if isinstance(e, ev.ToolResultEvent)] == ["3", "7"]
    fresh = PermissionPolicy(mode="minimal", config_path=config)
    assert fresh.evaluate("add", {}, risk_of(add)).kind == "allow"


@pytest.mark.asyncio
async def test_cancel_during_streaming_repairs_history(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(text("a long answer " * 50), delay_s=0.05),
        reply(text("fresh start")),
    )
    agent = make_agent(chat, [add])
    signal = CancelSignal()
    seen: list[Any] = []
    with pytest.raises(RunCancelled):
        async for event in agent.run_stream("talk", signal=signal):
            seen.append(event)
            if isinstance(event, ev.TextDeltaEvent):
                signal.cancel("user pressed stop")
    assert not any(isinstance(e, ev.FinalEvent) for e in seen)
    assert server.requests[0].wait_aborted(timeout=10)
    assert not agent.is_running
    # The next turn works and the provider accepts the history.
    assert await agent.run("again") == "fresh start"


@pytest.mark.asyncio
async def test_cancel_during_a_tool_by_task_cancellation(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(tool_use("hang", {}), tool_use("add", {"a": 1, "b": 1})), reply(text("ok")))
    agent = make_agent(chat, [hang, add])
    started = asyncio.Event()

    async def consume() -> None:
        async for event in agent.run_stream("wait"):
            if isinstance(event, ev.TextEvent) and event.content == "hang started":
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), timeout=30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # No dangling tool_use: the interrupted batch is dropped from history.
    assert not any(isinstance(m, AssistantMessage) and m.tool_calls for m in agent.history)
    assert not any(isinstance(m, ToolMessage) for m in agent.history)
    assert await agent.run("continue") == "ok"


@pytest.mark.asyncio
async def test_rate_limit_and_overload_are_retried_with_the_providers_delay(
    server: ScriptedServer, chat: ChatModel, make_agent: Any, provider: str
) -> None:
    server.add(fault.rate_limit(retry_after=1), fault.overloaded(), reply(text("finally")))
    retry = RetryConfig(max_attempts=3, base_delay_s=0.2, jitter=0.0)
    agent = make_agent(chat, [], retry=retry)
    events = await collect(agent, "hi")
    retries = [e for e in events if isinstance(e, ev.LlmRetryEvent)]
    assert [(r.failure_kind, r.delay_source, r.next_attempt) for r in retries] == [
        ("rate_limit", "retry-after", 2),
        ("overloaded", "backoff", 3),
    ]
    assert retries[0].delay_ms == 1000 and retries[0].status == 429
    assert retries[1].delay_ms == 400
    assert retries[1].status == OVERLOADED_STATUS[provider]
    assert events[-1].content == "finally"
    assert len(server.requests) == 3


@pytest.mark.asyncio
async def test_retries_exhausted_raise_a_clear_error(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(fault.server_error(500), fault.server_error(502))
    agent = make_agent(chat, [], retry=RetryConfig(max_attempts=2, base_delay_s=0.01))
    with pytest.raises(AgentRunError, match="after 2 attempts") as info:
        await collect(agent, "hi")
    assert info.value.kind == "provider"


@pytest.mark.asyncio
async def test_bad_request_is_not_retried(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(fault.status(400, "invalid_request_error", "messages: bad shape"))
    agent = make_agent(chat, [])
    with pytest.raises(AgentRunError, match="bad shape") as info:
        await collect(agent, "hi")
    assert info.value.kind == "bad_request"
    assert len(server.requests) == 1


@pytest.mark.asyncio
async def test_dropped_stream_ends_the_run_and_the_next_request_is_valid(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    dropped = reply(text("I was saying something important"), tool_use("add", {"a": 1, "b": 2}))
    server.add(fault.drop(after_events=4, reply=dropped), reply(text("back")))
    agent = make_agent(chat, [add], retry=RetryConfig(max_attempts=1))
    with pytest.raises(AgentRunError) as info:
        await collect(agent, "first")
    assert info.value.kind == "network"
    assert await agent.run("second") == "back"
    roles = [m["role"] for m in server.requests[1].messages]
    assert roles == ["user"], roles  # the two user turns were merged, nothing dangling
    assert "first" in str(server.requests[1].messages[0]["content"])


@pytest.mark.provider("anthropic")  # Anthropic's wire format; OpenAI's: tests/llm
@pytest.mark.asyncio
async def test_image_tool_results_are_sent_as_image_blocks(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(tool_use("snapshot", {})), reply(text("A red square.")))
    agent = make_agent(chat, [snapshot])
    events = await collect(agent, "look")
    result = [e for e in events if isinstance(e, ev.ToolResultEvent)][0]
    assert result.result == "here is the picture[image]"
    assert result.parts is not None and result.parts[1]["type"] == "image_url"
    blocks = [
        b
        for m in server.requests[1].messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    inner = blocks[0]["content"]
    assert [b["type"] for b in inner] == ["text", "image"]
    assert inner[1]["source"]["type"] == "base64"
    assert inner[1]["source"]["media_type"] == "image/png"


@pytest.mark.provider("anthropic")  # Anthropic's wire format; OpenAI's: tests/llm
@pytest.mark.asyncio
async def test_prompt_cache_markers_are_present(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("3")))
    agent = make_agent(chat, [add], system_prompt="Be brief.")
    await collect(agent, "add")
    body = server.requests[1].json
    assert "cache_control" in str(body["system"])
    assert body["tools"][-1].get("cache_control") == {"type": "ephemeral"}
    last = body["messages"][-1]["content"][-1]
    assert last.get("cache_control") == {"type": "ephemeral"}


@pytest.mark.asyncio
async def test_max_iterations_ends_with_a_summary_call_without_tools(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(
        reply(tool_use("add", {"a": 1, "b": 1})),
        reply(tool_use("add", {"a": 2, "b": 2})),
        reply(text("Added twice; nothing pending.")),
    )
    agent = make_agent(chat, [add], max_iterations=2)
    events = await collect(agent, "keep adding")
    assert events[-1].content == "[Max Iterations Reached]\n\nAdded twice; nothing pending."
    assert "tools" not in server.requests[2].json
    # The summary request is not kept in history.
    assert "maximum number of steps" not in str([m.dump() for m in agent.history])


@pytest.mark.asyncio
async def test_require_done_tool_keeps_going_after_plain_text(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(text("thinking out loud")), reply(tool_use("done", {"message": "fin"})))
    agent = make_agent(chat, [done_tool()], require_done_tool=True)
    events = await collect(agent, "go")
    assert types(events)[0] == "text"
    assert events[-1].content == "fin"


@pytest.mark.asyncio
async def test_a_second_concurrent_run_is_refused(
    server: ScriptedServer, chat: ChatModel, make_agent: Any
) -> None:
    server.add(reply(text("slow " * 40), delay_s=0.02))
    agent = make_agent(chat, [])
    stream = agent.run_stream("one")
    first = await stream.__anext__()
    assert first is not None
    with pytest.raises(AgentRunError, match="already in progress"):
        await agent.run("two")
    async for _ in stream:
        pass


def test_max_iterations_below_one_is_refused(chat: ChatModel) -> None:
    with pytest.raises(ValueError, match="max_iterations must be at least 1"):
        Agent(chat, [], max_iterations=0)
