"""Running a notebook's cells in its kernel from the server, for the no-tab notebook answers.

With no tab open, the kernel's ``notebook_run`` is answered by the server
(``notebook_without_tab.py``), which needs someone to run the cells: :class:`CellRuns`, its
``run_cells`` hook, runs them on the kernel's main shell through the :class:`KernelPeer`, one
after the other as a person's Run would (counted, in the history), and hands back their outputs
in nbformat form. A cell still running at ``wait_seconds`` is reported ``running`` with its
outputs so far and awaited again, never started twice, when a later call names it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from .kernel_peer import Execution, KernelPeer

_OUTPUTS = frozenset({"stream", "display_data", "execute_result", "error"})


class CellRuns:
    """The ``run_cells`` hook of one kernel; ``make_result(**fields)`` builds one cell's result
    (``cell_id``, ``status``, ``execution_count``, ``outputs``) in the answerer's own type."""

    def __init__(self, peer: KernelPeer, make_result: Callable[..., Any]) -> None:
        self.peer = peer
        self.make_result = make_result
        self._running: dict[str, Execution] = {}

    async def __call__(
        self, cells: Sequence[Any], wait_seconds: float, interrupt: bool
    ) -> list[Any]:
        if interrupt:
            await self.peer.interrupt()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        results: list[Any] = []
        for cell in cells:
            if results and results[-1].status == "running":
                # Queued behind a running cell: started by a later call once that one ended.
                results.append(self.make_result(cell_id=cell.cell_id, status="running"))
                continue
            execution = self._running.get(cell.cell_id)
            if execution is None:
                execution = self._running[cell.cell_id] = await self.peer.execute(cell.code)
            try:
                await asyncio.wait_for(execution.done.wait(), max(deadline - loop.time(), 0))
            except asyncio.TimeoutError:
                results.append(self._result(cell.cell_id, execution, "running"))
                continue
            del self._running[cell.cell_id]
            results.append(self._result(cell.cell_id, execution, _status(execution.reply)))
            if results[-1].status != "done":
                break  # the cells after a failure are not run (Run All stops there too)
        return results

    def _result(self, cell_id: str, execution: Execution, status: str) -> Any:
        reply = execution.reply or {}
        return self.make_result(
            cell_id=cell_id,
            status=status,
            execution_count=reply.get("execution_count"),
            outputs=notebook_outputs(execution.messages),
        )


def _status(reply: dict[str, Any] | None) -> str:
    if reply is None:
        return "error"  # the kernel went away before it answered
    if reply.get("status") == "ok":
        return "done"
    return "interrupted" if reply.get("ename") == "KeyboardInterrupt" else "error"


def notebook_outputs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nbformat outputs of a cell's iopub messages (``clear_output`` clears what came)."""
    from nbformat.v4 import output_from_msg

    outputs: list[dict[str, Any]] = []
    for message in messages:
        kind = message.get("header", {}).get("msg_type")
        if kind == "clear_output":
            outputs.clear()
        elif kind in _OUTPUTS:
            outputs.append(dict(output_from_msg(message)))  # type: ignore[no-untyped-call]
    return outputs
