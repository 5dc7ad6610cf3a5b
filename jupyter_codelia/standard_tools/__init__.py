"""The standard tools and ``standard_tools(...)``, which builds the default set.

>>> tools = standard_tools(root=".")          # doctest: +SKIP
>>> [t.name for t in tools][:3]               # doctest: +SKIP
['done', 'todo_read', 'todo_new']

The returned :class:`StandardToolSet` is a :class:`~jupyter_codelia.tools.ToolSet`: a list of
tools that also carries what they share: the output-cache store (the agent saves every result
there), the todo list's :class:`TodoSessionHook` (saved in the session snapshot) and the
sandbox. ``Agent(llm, standard_tools(...))`` wires all of it, and so does
``Agent(llm, [my_tool] + standard_tools(...))``: adding a list keeps a ToolSet.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._approval import ApprovalMode
from ..tools import Tool, ToolSet, done_tool
from ._sandbox import Sandbox, SecurityError
from .todos import TODO_SESSION_KEY

if TYPE_CHECKING:
    from ..cache import ToolOutputCacheStore
    from .jobs import JobRegistry
    from .todos import TodoStore
    from .web import WebConfig


class TodoSessionHook:
    """Keeps the todo list of the agent's current session and saves it in snapshot meta."""

    META_KEY = TODO_SESSION_KEY

    def __init__(self, store: TodoStore) -> None:
        self.store = store
        self.session_id: str | None = None

    def current(self) -> str | None:
        return self.session_id

    def bind_session(self, session_id: str) -> None:
        self.session_id = session_id

    def save_meta(self, session_id: str, meta: dict[str, Any]) -> None:
        value = self.store.export_meta(session_id)
        if value is None:
            meta.pop(self.META_KEY, None)
        else:
            meta[self.META_KEY] = value

    def restore_meta(self, session_id: str, meta: dict[str, Any]) -> None:
        self.session_id = session_id
        self.store.restore_meta(session_id, meta.get(self.META_KEY))


class StandardToolSet(ToolSet):
    """The standard tools' set: a :class:`~jupyter_codelia.tools.ToolSet` that also holds the
    sandbox its file tools share (the crash journal and the working directory live there)."""

    def __init__(self, tools: Iterable[Tool], *, sandbox: Sandbox, **shared: Any) -> None:
        super().__init__(tools, sandbox_root=sandbox.root, **shared)
        self.sandbox = sandbox


def standard_tools(
    root: str | Path | None = None,
    *,
    approval_mode: ApprovalMode = "minimal",
    output_store: ToolOutputCacheStore | None = None,
    cache_dir: str | Path | None = None,
    todo_store: TodoStore | None = None,
    web: WebConfig | None = None,
    include_web: bool = True,
    include_shell: bool = True,
    jobs: JobRegistry | None = None,
    extra: Iterable[Tool] = (),
) -> StandardToolSet:
    """Every built-in tool, sandboxed at ``root`` (default: the working directory).

    ``output_store`` defaults to a store in ``cache_dir`` or
    ``<JUPYTER_CODELIA_HOME>/cache/tool-output``; ``todo_store`` to a fresh one. Web tools use
    ``web`` (default ``WebConfig()``). With a ``jobs`` registry the ``job_*`` tools are included
    and ``shell`` can start background jobs in it; a registry without an output store of its own
    streams each job's whole output into ``output_store``.
    """
    from ..cache import ToolOutputCacheStore
    from .files import file_tools
    from .output_cache import output_cache_tools
    from .todos import TodoStore, todo_tools

    sandbox = Sandbox(Path(root) if root is not None else Path.cwd(), approval_mode=approval_mode)
    if output_store is None:
        if cache_dir is None:
            from ..session import default_home

            cache_dir = default_home() / "cache" / "tool-output"
        output_store = ToolOutputCacheStore(Path(cache_dir))
    todos = todo_store if todo_store is not None else TodoStore()
    todo_hook = TodoSessionHook(todos)
    tools: list[Tool] = [
        done_tool(),
        *todo_tools(todos, todo_hook.current),
        *file_tools(sandbox, output_store),
        *output_cache_tools(output_store),
    ]
    if include_web:
        from .web import WebConfig, web_tools

        tools.extend(web_tools(web or WebConfig()))
    if include_shell:
        from .shell import shell_tool

        tools.append(shell_tool(sandbox.root, output_store, jobs=jobs))
    if jobs is not None:
        from .jobs import job_tools

        if jobs.output_store is None:  # each job's whole output goes to this set's cache
            store = output_store
            jobs.output_store = lambda: store
        tools.extend(job_tools(jobs))
    tools.extend(extra)
    return StandardToolSet(
        tools, sandbox=sandbox, output_store=output_store, state_hooks=[todo_hook]
    )


__all__ = ["Sandbox", "SecurityError", "StandardToolSet", "TodoSessionHook", "standard_tools"]
