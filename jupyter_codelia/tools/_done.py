"""The ``done`` tool: ends the run with a final message."""

from __future__ import annotations

from typing import NoReturn

from pydantic import BaseModel, ConfigDict, Field

from ._context import ToolContext
from ._define import FunctionTool, define_tool
from ._errors import TaskComplete
from ._risk import ToolRisk


class DoneInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(description="Final user-facing message summarising what was done.")


def _finish(params: DoneInput, ctx: ToolContext) -> NoReturn:
    raise TaskComplete(params.message)


def done_tool() -> FunctionTool:
    return define_tool(
        name="done",
        description=(
            "Mark the task complete and return a final message to the user. Call it once, when "
            "the whole request is finished."
        ),
        input=DoneInput,
        execute=_finish,
        risk=ToolRisk(kind="agent_state"),
    )
