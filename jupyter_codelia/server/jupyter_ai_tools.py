"""Our kernel tools for Jupyter AI's MCP server (the ``jupyter-server-mcp`` extension).

Jupyter AI 3 hands every agent it hosts (Claude, Codex, Goose, OpenCode…) the MCP server of the
``jupyter-server-mcp`` extension, whose tools come from the entry-point group
``jupyter_server_mcp.tools``: a list of ``"module:function"`` strings, each function registered
by its signature and docstring. :func:`tool_specs` is our entry; the functions below are thin
typed fronts of the same tools ``/codelia/mcp`` serves, through the same :class:`Relay` (they run
in the Jupyter server process, where that extension runs its MCP server). Arguments left at
``None`` are not sent, so the kernel tool's own default applies.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

from ..errors import CodeliaError
from .mcp_endpoint import call_result, current_relay

CALLER = "a Jupyter AI agent"
"""How the side panel names these calls: jupyter-server-mcp does not say which agent calls."""


class KernelToolError(CodeliaError, RuntimeError):
    """The kernel tool answered with an error; the agent reads its message."""


def tool_specs() -> list[str]:
    """The entry point: every tool function of this module, as jupyter-server-mcp wants them."""
    return [f"{__name__}:{name}" for name in TOOLS]


async def _call(tool: str, arguments: dict[str, Any]) -> list[Any]:
    """Run ``tool`` with the arguments a front function got (``notebook_path`` among them)."""
    sent = {key: value for key, value in arguments.items() if value is not None}
    result = call_result(await current_relay().call(CALLER, tool, sent))
    content: list[Any] = list(result.content)
    if result.is_error:
        raise KernelToolError("\n".join(getattr(block, "text", "") for block in content))
    return content


async def notebooks() -> list[dict[str, Any]]:
    """List the notebooks open on this Jupyter server (path, kernel, state, tab open); the other
    codelia tools take one of these paths as notebook_path."""
    return await current_relay().notebooks()


async def list_variables(
    notebook_path: str, pattern: str | None = None, include_private: bool | None = None
) -> list[Any]:
    """List the user variables of the notebook's kernel (type, size, summary), without running
    code; pattern is a glob on names such as 'df*'."""
    return await _call("list_variables", locals())


async def inspect_variable(
    notebook_path: str, name: str, rows: int | None = None, max_chars: int | None = None
) -> list[Any]:
    """Describe one variable of the notebook's kernel in depth (a DataFrame's columns, dtypes
    and first rows; an array's shape; an object's attributes); name may be dotted."""
    return await _call("inspect_variable", locals())


async def kernel_history(
    notebook_path: str, last: int | None = None, include_outputs: bool | None = None
) -> list[Any]:
    """What ran in the notebook's kernel, in order, with outputs; marks cells edited since
    they ran (stale)."""
    return await _call("kernel_history", locals())


async def python(
    notebook_path: str,
    code: str,
    timeout_seconds: float | None = None,
    background: bool | None = None,
) -> list[Any]:
    """Run Python in the notebook's live namespace: output, figures as images, the variables
    it changed (undoable). Past the timeout the code goes on as a background job (job_wait)."""
    return await _call("python", locals())


async def job_list(notebook_path: str, running_only: bool | None = None) -> list[Any]:
    """List the background jobs of the notebook's kernel."""
    return await _call("job_list", locals())


async def job_output(
    notebook_path: str,
    job_id: str,
    since: Literal["new", "start"] | None = None,
    tail_lines: int | None = None,
) -> list[Any]:
    """Read a background job's output (what is new since the last read, or from the start)."""
    return await _call("job_output", locals())


async def job_wait(
    notebook_path: str, job_id: str, timeout_seconds: float | None = None
) -> list[Any]:
    """Wait for a background job to end (at most timeout_seconds); its new output."""
    return await _call("job_wait", locals())


async def job_stop(notebook_path: str, job_id: str) -> list[Any]:
    """Stop a background job of the notebook's kernel."""
    return await _call("job_stop", locals())


async def notebook_read(
    notebook_path: str,
    start: int | None = None,
    end: int | None = None,
    cell_ids: list[str] | None = None,
    search: str | None = None,
    include_outputs: bool | None = None,
    images: bool | None = None,
    source_line_offset: int | None = None,
) -> list[Any]:
    """Read the notebook as the person has it open: an outline, or cells (by index range, ids
    or search) with stable ids, sources and outputs; stale cells marked."""
    return await _call("notebook_read", locals())


async def notebook_edit(
    notebook_path: str,
    action: Literal["insert", "replace", "delete", "move"],
    cell_id: str | None = None,
    index: int | None = None,
    position: Literal["before", "after"] | None = None,
    cell_type: Literal["code", "markdown"] | None = None,
    source: str | None = None,
    old_string: str | None = None,
    new_string: str | None = None,
) -> list[Any]:
    """Change the open notebook by stable cell id (insert, replace, delete, move); refuses a
    cell the person is typing in; the edit joins their undo history, marked as an agent's."""
    return await _call("notebook_edit", locals())


async def notebook_run(
    notebook_path: str,
    cell_ids: list[str],
    wait_seconds: float | None = None,
    interrupt: bool | None = None,
) -> list[Any]:
    """Run notebook cells by id as the person would; their outputs, images included; past
    wait_seconds 'still running' (call again to wait more), never a kill."""
    return await _call("notebook_run", locals())


async def tool_output_cache(
    notebook_path: str, ref_id: str, offset: int | None = None, limit: int | None = None
) -> list[Any]:
    """Read lines of a big tool output kept in the cache (a result cut to fit names its ref)."""
    return await _call("tool_output_cache", locals())


async def tool_output_cache_line(
    notebook_path: str,
    ref_id: str,
    line_number: int,
    char_offset: int | None = None,
    char_limit: int | None = None,
) -> list[Any]:
    """Read one long line of a cached output, a window of characters at a time."""
    return await _call("tool_output_cache_line", locals())


async def tool_output_cache_grep(
    notebook_path: str,
    ref_id: str,
    pattern: str,
    regex: bool | None = None,
    before: int | None = None,
    after: int | None = None,
    max_matches: int | None = None,
) -> list[Any]:
    """Search a cached output for a text (or a regex), with lines of context."""
    return await _call("tool_output_cache_grep", locals())


TOOLS = tuple(
    name
    for name, value in list(globals().items())
    if inspect.iscoroutinefunction(value) and value.__module__ == __name__ and name[0] != "_"
)
"""The tool functions, in the order above: every public coroutine this module defines."""
