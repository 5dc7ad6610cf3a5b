"""Executing one tool call for the agent.

Whatever happens inside a tool, the agent gets a well-formed ToolMessage back: unknown tools,
permission denials, bad arguments and exceptions all become error messages the model can read.
Only cancellation propagates.

This is on the per-call hot path (bench/tool_dispatch.py): messages are built straight from
the validator with a dict, and FunctionTool return values skip the intermediate ToolResult.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..llm.messages import ToolCall, ToolMessage
from ._context import ToolContext
from ._define import FunctionTool, Tool, is_pending
from ._errors import TaskComplete
from ._results import COMPLETED, ToolOutcome, ToolResultData, ToolReturn, value_content

STOP_TURN_MESSAGE = (
    "Permission request was denied. Turn stopped. Please send your next input to continue."
)
ERROR_PREFIX = "Error executing tool: "

# ToolMessage(**kw) costs about twice its validator on a dict; the result is the same model.
_validate_tool_message: Callable[[dict[str, Any]], ToolMessage] = (
    ToolMessage.__pydantic_validator__.validate_python
)


@dataclass(frozen=True)
class PermissionDecision:
    decision: Literal["allow", "deny"]
    reason: str | None = None
    stop_turn: bool = False

    @classmethod
    def allow(cls) -> PermissionDecision:
        # One shared answer: most calls are allowed, and building a frozen dataclass costs
        # three object.__setattr__ calls.
        return _ALLOWED

    @classmethod
    def deny(cls, reason: str | None = None, *, stop_turn: bool = False) -> PermissionDecision:
        return cls("deny", reason, stop_turn)


_ALLOWED = PermissionDecision("allow")

PermissionHook = Callable[[ToolCall, str, ToolContext], Awaitable[PermissionDecision]]


@dataclass(slots=True)
class ToolExecution:
    """The message the model reads, and for the application how the call ended and the data its
    tool returned beside the message (``ToolReturn``)."""

    message: ToolMessage
    done: bool = False
    final_message: str | None = None
    outcome: ToolOutcome = "completed"
    data: ToolResultData | None = None

    @property
    def result_data(self) -> ToolResultData:
        """The data the application reads of this call, with how the call ended."""
        data = self.data or COMPLETED
        if data.outcome != self.outcome:
            data = data.model_copy(update={"outcome": self.outcome})
        return data


ToolIndex = dict[str, Tool]
"""Tools by name, as ``tool_index`` builds it: a per-call lookup is one dict access."""


def tool_index(tools: Iterable[Tool]) -> ToolIndex:
    """Name → tool for a run's tools, the first of each name winning as in ``find_tool``.

    A run looks up every call's tool (and its display name); scanning a list of two dozen tools
    each time costs more than the rest of the dispatch, so the agent builds this once per run.
    """
    index: ToolIndex = {}
    for candidate in tools:
        index.setdefault(candidate.name, candidate)
    return index


def find_tool(tools: Sequence[Tool] | ToolIndex, name: str) -> Tool | None:
    """The first tool called ``name`` in a sequence, or the tool an index maps it to."""
    if isinstance(tools, dict):
        return tools.get(name)
    for candidate in tools:
        if candidate.name == name:
            return candidate
    return None


def error_message(call: ToolCall, text: str) -> ToolMessage:
    return _validate_tool_message(
        {
            "tool_call_id": call.id,
            "tool_name": call.function.name,
            "content": text,
            "is_error": True,
        }
    )


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or a stand-in naming its class when its ``__str__`` itself fails."""
    try:
        return str(exc)
    except Exception:
        return f"{type(exc).__name__} (its message could not be rendered)"


async def execute_tool_call(
    call: ToolCall,
    tools: Sequence[Tool] | ToolIndex,
    ctx: ToolContext | None = None,
    *,
    can_execute_tool: PermissionHook | None = None,
) -> ToolExecution:
    """Run ``call`` against ``tools`` (a sequence, or an index from ``tool_index``); never
    raises except for cancellation."""
    base = ctx if ctx is not None else ToolContext()
    name = call.function.name
    tool = find_tool(tools, name)
    if tool is None:
        names = tools.keys() if isinstance(tools, dict) else (t.name for t in tools)
        available = ", ".join(names) or "(none)"
        return ToolExecution(
            error_message(call, f"Error: Unknown tool '{name}'. Available tools: {available}"),
            outcome="error",
        )
    if can_execute_tool is not None:
        try:
            decision = await can_execute_tool(
                call, call.function.arguments, base.fork(tool_call_id=call.id, tool_name=name)
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return ToolExecution(
                error_message(call, f"Permission check failed: {exception_text(exc)}"),
                outcome="error",
            )
        if decision.decision == "deny":
            text = "Permission denied"
            if decision.reason:
                text = f"{text}: {decision.reason}"
            if decision.stop_turn:
                return ToolExecution(
                    error_message(call, text), True, STOP_TURN_MESSAGE, outcome="denied"
                )
            return ToolExecution(error_message(call, text), outcome="denied")
    call_ctx = base.fork(tool_call_id=call.id, tool_name=name)
    try:
        if type(tool) is FunctionTool:
            value: Any = tool.start(call.function.arguments, call_ctx)
            if is_pending(value):
                value = await value
        else:
            value = await tool.execute_raw(call.function.arguments, call_ctx)
    except asyncio.CancelledError:
        raise
    except TaskComplete as done:
        message = _validate_tool_message(
            {"tool_call_id": call.id, "tool_name": name, "content": "Task complete"}
        )
        return ToolExecution(message, True, done.final_message)
    except Exception as exc:
        return ToolExecution(
            error_message(call, f"{ERROR_PREFIX}{exception_text(exc)}"), outcome="error"
        )
    data = None
    if type(value) is ToolReturn:
        data, value = value.data, value.value
    try:
        # A str is already the content: the common case spares even the call.
        content = value if type(value) is str else value_content(value)
        message = _validate_tool_message(
            {"tool_call_id": call.id, "tool_name": name, "content": content}
        )
    except Exception as exc:
        return ToolExecution(
            error_message(
                call, f"{ERROR_PREFIX}tool returned an invalid result: {exception_text(exc)}"
            ),
            outcome="error",
        )
    return ToolExecution(message, data=data)
