"""The ``kernel_history`` tool: what the kernel really ran this session, and which cells are stale.

It reads IPython's own history (``In`` / ``Out``), so it works with no front end and no saved
file; the stale check compares that history with the notebook's cells when a snapshot is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ..._text import describe_exc
from ...tools import FunctionTool, ToolContext, ToolError, ToolRisk, define_tool
from . import cells as nbcells

if TYPE_CHECKING:
    from .cell_tools import NotebookContext

HISTORY_OUTPUT_CHARS = 300


class KernelHistoryInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    last: int = Field(default=30, ge=1, le=500, description="How many recent executions.")
    include_outputs: bool = Field(default=True, description="Show Out[n] reprs (clipped).")


HISTORY_DESCRIPTION = (
    "What the kernel really ran this session: IPython's In/Out by execution count, and which "
    "notebook cells changed after they ran (stale), so you can tell the user that a variable "
    "came from older code."
)


def kernel_history_tool(context: NotebookContext) -> FunctionTool:
    async def kernel_history(args: KernelHistoryInput, ctx: ToolContext) -> str:
        # Documented to always work: the notebook is only needed for the stale check, so any
        # failure to read it is said next to the history instead of failing the tool.
        report = _history_report(args, context)
        try:
            snapshot = await context.snapshot()
            stale = _stale_report(snapshot, context.history())
        except Exception as exc:
            detail = str(exc) if isinstance(exc, ToolError) else describe_exc(exc)
            return f"{report}\n\n(no stale check: {detail})"
        return f"{report}\n\n{stale}"

    return define_tool(
        name="kernel_history",
        description=HISTORY_DESCRIPTION,
        input=KernelHistoryInput,
        execute=kernel_history,
        risk=ToolRisk(kind="read_only"),
    )


def _history_report(args: KernelHistoryInput, context: NotebookContext) -> str:
    history = context.history()
    if history is None:
        return "This kernel keeps no IPython history (not an IPython kernel)."
    inputs = history.inputs
    first = max(1, len(inputs) - args.last)
    shown = len(inputs) - first
    lines = [f"The kernel ran {len(inputs) - 1} cells this session; the last {shown}:"]
    for count in range(first, len(inputs)):
        source = inputs[count].rstrip()
        lines.append(f"In [{count}]: " + source.replace("\n", "\n        "))
        if args.include_outputs and count in history.outputs:
            text = repr(history.outputs[count])
            if len(text) > HISTORY_OUTPUT_CHARS:
                text = text[:HISTORY_OUTPUT_CHARS] + "…"
            lines.append(f"Out[{count}]: {text}")
    return "\n".join(lines)


def _stale_report(snapshot: nbcells.NotebookSnapshot, history: nbcells.KernelHistory | None) -> str:
    label = "saved file" if snapshot.source == "saved" else "live notebook"
    stale = [(i, c) for i, c in enumerate(snapshot.cells) if nbcells.is_stale(c, history)]
    if not stale:
        return f"Stale cells ({label}): none; every cell that ran still has the source it ran."
    lines = [f"Stale cells ({label}): changed after the kernel ran them:"]
    for index, cell in stale:
        lines.append(
            f"cell #{index} (id {cell.id}) ran as [{cell.execution_count}]; what ran:\n"
            f"    {history.ran(cell.execution_count)!s}".rstrip()  # type: ignore[union-attr]
        )
    return "\n".join(lines)
