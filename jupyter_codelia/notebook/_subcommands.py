"""``%codelia sessions | todos | cache | config | provenance | stop | compact | undo | jobs | mcp``.

The agent's state, inspected from the notebook.

``provenance`` lists the notebook cells the agent inserted or edited (their ``metadata.codelia``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .._redact import redact_secrets
from .._text import describe_exc
from .ui import renderers

if TYPE_CHECKING:
    from .run.runner import NotebookAgent


def run(nb: NotebookAgent, name: str, argument: str) -> Any:
    if name == "sessions":
        return _sessions(nb)
    if name == "todos":
        return _todos(nb)
    if name == "cache":
        return _cache(nb, argument)
    if name == "config":
        from .config import describe_settings

        print(describe_settings(nb.settings()))
        return None
    if name == "provenance":
        return _provenance(nb)
    if name == "mcp":
        return _mcp(nb, argument)
    if name == "compact":
        return _compact(nb)
    if name == "stop":
        active = nb.active
        if active is None:
            print("No codelia run is active.")
            return None
        nb.cancel(active.run_id)
        print(f"Stopping run {active.run_id}.")
        return None
    if name == "undo":
        return _undo(nb, argument)
    if name == "jobs":
        return _jobs(nb, argument)
    raise UsageError(f"Unknown subcommand {name!r}; see %codelia help.")


MCP_ADD_USAGE = (
    "Usage: %codelia mcp add NAME -- command args...  or  %codelia mcp add NAME --url URL"
)


def _mcp(nb: NotebookAgent, argument: str) -> None:
    """``%codelia mcp`` lists; ``%codelia mcp add NAME -- cmd args`` / ``--url URL`` adds."""
    import shlex

    from ..standard_tools.mcp import McpConfigError, parse_mcp_servers

    servers = nb.mcp_servers()
    if not argument:
        print(servers.describe())
        return
    try:
        words = shlex.split(argument)
    except ValueError as exc:
        raise UsageError(f"{exc}. {MCP_ADD_USAGE}") from None
    if len(words) < 3 or words[0] != "add" or words[2] not in ("--", "--url"):
        raise UsageError(MCP_ADD_USAGE)
    name, rest = words[1], words[3:]
    if not rest or (words[2] == "--url" and len(rest) != 1):
        raise UsageError(MCP_ADD_USAGE)
    entry = {"url": rest[0]} if words[2] == "--url" else {"command": rest[0], "args": rest[1:]}
    try:
        config = parse_mcp_servers({name: entry}, "%codelia mcp add")[name]
    except McpConfigError as exc:
        raise UsageError(str(exc)) from None
    servers.add(name, config)
    print(
        f"Added MCP server {name!r} ({config.describe()}); it starts with the next run. "
        'To keep it, add it to "mcpServers" in the codelia config file.'
    )


def _compact(nb: NotebookAgent) -> None:
    agent = nb.agent
    if agent is None:
        print("No codelia session yet: run %%codelia first.")
        return
    if nb.active is not None:
        raise UsageError(
            "A codelia run is active: wait for it (or %codelia stop it), then compact."
        )
    outcome: list[Any] = []

    def work() -> None:
        # The kernel's own loop runs this cell, so the compaction gets a loop of its own.
        try:
            outcome.append(asyncio.run(agent.compact()))
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=work, name="codelia-compact", daemon=True)
    worker.start()
    worker.join()
    result = outcome[0]
    if isinstance(result, Exception):
        raise UsageError(f"Could not compact the conversation: {describe_exc(result)}")
    if result:
        print(f"Compacted session {agent.session_id}: the next turn continues from a summary.")
    else:
        print("Nothing to compact yet, or the model gave no summary; the history is unchanged.")


def _undo(nb: NotebookAgent, argument: str) -> None:
    from .kernel_tools.undo import UndoError

    target = argument.strip() or None
    try:
        lines = nb.undo.undo(target)
    except UndoError as exc:
        raise UsageError(str(exc)) from None
    print("\n".join(lines))


def _jobs(nb: NotebookAgent, argument: str) -> None:
    words = argument.split()
    if words[:1] == ["stop"]:
        if len(words) != 2:
            raise UsageError("Usage: %codelia jobs stop JOB_ID (see %codelia jobs).")
        from ..standard_tools.jobs import JobNotFoundError

        try:
            job = nb.jobs.get(words[1])
        except JobNotFoundError as exc:
            raise UsageError(str(exc)) from None
        job.stop()
        print(f"Asked {job.job_id} to stop.")
        return
    if words:
        raise UsageError("Usage: %codelia jobs, or %codelia jobs stop JOB_ID.")
    jobs = nb.jobs.jobs()
    if not jobs:
        print("No background jobs.")
        return
    for job in jobs:
        last = job.output.last_lines(1)
        print(job.status_line() + (f"\n  {last[-1][:200]}" if last else ""))


def _sessions(nb: NotebookAgent) -> None:
    from IPython.display import display

    sessions = nb.session_store().list_sessions()
    if not sessions:
        print("No saved sessions yet: run %%codelia to start one.")
        return
    current = nb.agent.session_id if nb.agent is not None else None
    columns = (
        renderers.Column("session", code=True, keep=True),
        renderers.Column("updated", keep=True),
        renderers.Column("messages", keep=True),
        renderers.Column("title"),
    )
    rows = [
        (
            summary.session_id,
            renderers.format_time(summary.updated_at),
            f"{summary.message_count}" + (" (current)" if summary.session_id == current else ""),
            (summary.title or summary.last_user_message or "")[:120],
        )
        for summary in sessions
    ]
    after = "Resume one with <code>%%codelia --resume SESSION_ID</code>."
    display(renderers.table_bundle(columns, rows, after=after), raw=True)


def _todos(nb: NotebookAgent) -> None:
    from IPython.display import HTML, display

    session_id, todos = nb.todos()
    if session_id is None:
        print("No codelia session yet: run %%codelia first.")
        return
    # The store keeps what the model wrote; only what is shown is masked.
    display(HTML(renderers.todos_to_html(redact_secrets(todos))))


def _provenance(nb: NotebookAgent) -> None:
    from IPython.display import display

    from ..tools import ToolError
    from .notebook_tools.cell_tools import NotebookContext, provenance_table

    try:
        snapshot = NotebookContext(nb.shell, nb.frontend).snapshot_now()
    except ToolError as exc:
        raise UsageError(str(exc)) from None
    rows = provenance_table(snapshot)
    where = "the live notebook" if snapshot.source == "live" else f"{snapshot.path} (as saved)"
    if not rows:
        print(f"No cell of {where} was made or changed by the agent.")
        return
    columns = (
        renderers.Column("cell", keep=True),
        renderers.Column("id", code=True, keep=True),
        renderers.Column("action", keep=True),
        renderers.Column("at", keep=True),
        renderers.Column("run", code=True, keep=True),
        renderers.Column("model", keep=True),
        renderers.Column("prompt"),
    )
    table = [
        (
            f"#{row['index']}",
            str(row.get("id") or ""),
            str(row.get("action") or ""),
            renderers.format_time(str(row.get("at") or "")),
            str(row.get("run_id") or "")[:8],  # a run's first 8 characters tell it apart
            str(row.get("model") or ""),
            str(row.get("prompt") or ""),
        )
        for row in rows
    ]
    before = f"{len(rows)} agent-edited cell(s) in {where}:"
    display(renderers.table_bundle(columns, table, before=before), raw=True)


def _cache(nb: NotebookAgent, argument: str) -> Any:
    """The cache browser, or its static form where no front end renders widgets."""
    from IPython.display import display

    from .ui._viewer import renders_widgets
    from .ui.cache_browser import CacheBrowser, ordered_entries, static_bundle

    store = nb.output_store()
    entries = ordered_entries(store)
    ref_id = argument.strip()
    if ref_id and ref_id not in {e.ref_id for e in entries}:
        raise UsageError(
            f"No cached output {ref_id!r}; %codelia cache lists the {len(entries)} entries."
        )
    if not renders_widgets(nb.shell):
        display(static_bundle(store, ref_id or None, entries=entries), raw=True)
        return None
    browser = CacheBrowser(store)
    if ref_id:
        browser.select(ref_id)
    return browser
