"""The tool framework: define tools, inject dependencies, run calls safely.

>>> from pydantic import BaseModel
>>> class AddInput(BaseModel):
...     a: int
...     b: int
>>> add = define_tool(name="add", description="Add two numbers", input=AddInput,
...                   execute=lambda p, ctx: p.a + p.b)
"""

from .._cancellation import CancelSignal, RunCancelled
from ..llm.messages import ToolMessage
from ._context import DependencyKey, Depends, ToolContext
from ._decorator import tool
from ._define import FunctionTool, Tool, define_tool
from ._done import done_tool
from ._errors import (
    TaskComplete,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolError,
    ToolInputError,
)
from ._executor import (
    PermissionDecision,
    PermissionHook,
    ToolExecution,
    ToolIndex,
    execute_tool_call,
    find_tool,
    tool_index,
)
from ._results import (
    COMPLETED,
    JsonResult,
    NamespaceChange,
    PartsResult,
    TextResult,
    ToolOutcome,
    ToolResult,
    ToolResultData,
    ToolReturn,
    coerce_result,
    result_content,
    to_tool_message,
)
from ._risk import (
    UNDECLARED,
    Approval,
    DeclaresRisk,
    Describer,
    Previewer,
    ToolKind,
    ToolPreview,
    ToolRisk,
    risk_of,
)
from ._schema import Nullable
from ._toolset import SessionStateHook, ToolSet

__all__ = [
    "COMPLETED",
    "UNDECLARED",
    "Approval",
    "CancelSignal",
    "DeclaresRisk",
    "DependencyKey",
    "Depends",
    "Describer",
    "FunctionTool",
    "JsonResult",
    "NamespaceChange",
    "Nullable",
    "PartsResult",
    "PermissionDecision",
    "PermissionHook",
    "Previewer",
    "RunCancelled",
    "SessionStateHook",
    "TaskComplete",
    "TextResult",
    "Tool",
    "ToolArgumentsError",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecution",
    "ToolIndex",
    "ToolInputError",
    "ToolKind",
    "ToolMessage",
    "ToolOutcome",
    "ToolPreview",
    "ToolResult",
    "ToolResultData",
    "ToolReturn",
    "ToolRisk",
    "ToolSet",
    "coerce_result",
    "define_tool",
    "done_tool",
    "execute_tool_call",
    "find_tool",
    "result_content",
    "risk_of",
    "to_tool_message",
    "tool",
    "tool_index",
]
