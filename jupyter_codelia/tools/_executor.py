"""Executing one tool call for the agent (spec/core.md §5, design §2.2).

Whatever happens inside a tool, the agent gets a well-formed ToolMessage back: unknown tools,
permission denials, bad arguments and exceptions all become error messages the model can read.
Only cancellation propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..llm.messages import ToolCall, ToolMessage
from ._context import ToolContext
from ._define import Tool
from ._errors import TaskComplete
from ._results import result_content

STOP_TURN_MESSAGE = (
    "Permission request was denied. Turn stopped. Please send your next input to continue."
)
ERROR_PREFIX = "Error executing tool: "


@dataclass(frozen=True)
class PermissionDecision:
    decision: Literal["allow", "deny"]
    reason: str | None = None
    stop_turn: bool = False

    @classmethod
    def allow(cls) -> PermissionDecision:
        return cls("allow")

    @classmethod
    def deny(cls, reason: str | None = None, *, stop_turn: bool = False) -> PermissionDecision:
        return cls("deny", reason, stop_turn)


PermissionHook = Callable[[ToolCall, str, ToolContext], Awaitable[PermissionDecision]]


@dataclass
class ToolExecution:
    message: ToolMessage
    done: bool = False
    final_message: str | None = None


def find_tool(tools: Sequence[Tool], name: str) -> Tool | None:
    for candidate in tools:
        if candidate.name == name:
            return candidate
    return None


def error_message(call: ToolCall, text: str) -> ToolMessage:
    return ToolMessage(
        tool_call_id=call.id, tool_name=call.function.name, content=text, is_error=True
    )


async def execute_tool_call(
    call: ToolCall,
    tools: Sequence[Tool],
    ctx: ToolContext | None = None,
    *,
    can_execute_tool: PermissionHook | None = None,
) -> ToolExecution:
    """Run ``call`` against ``tools``; never raises except for cancellation."""
    base = ctx if ctx is not None else ToolContext()
    name = call.function.name
    tool = find_tool(tools, name)
    if tool is None:
        available = ", ".join(t.name for t in tools) or "(none)"
        return ToolExecution(
            error_message(call, f"Error: Unknown tool '{name}'. Available tools: {available}")
        )
    if can_execute_tool is not None:
        try:
            decision = await can_execute_tool(
                call, call.function.arguments, base.fork(tool_call_id=call.id, tool_name=name)
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ToolExecution(error_message(call, f"Permission check failed: {exc}"))
        if decision.decision == "deny":
            text = f"Permission denied: {decision.reason}" if decision.reason else "Permission denied"
            if decision.stop_turn:
                return ToolExecution(error_message(call, text), True, STOP_TURN_MESSAGE)
            return ToolExecution(error_message(call, text))
    try:
        result = await tool.execute_raw(
            call.function.arguments, base.fork(tool_call_id=call.id, tool_name=name)
        )
    except asyncio.CancelledError:
        raise
    except TaskComplete as done:
        message = ToolMessage(tool_call_id=call.id, tool_name=name, content="Task complete")
        return ToolExecution(message, True, done.final_message)
    except Exception as exc:
        return ToolExecution(error_message(call, f"{ERROR_PREFIX}{exc}"))
    try:
        content = result_content(result)
        return ToolExecution(ToolMessage(tool_call_id=call.id, tool_name=name, content=content))
    except Exception as exc:
        return ToolExecution(
            error_message(call, f"{ERROR_PREFIX}tool returned an invalid result: {exc}")
        )
