"""``%codelia sessions | todos | cache | config | provenance | stop | compact | undo | jobs | mcp``.

The agent's state, inspected from the notebook.

``provenance`` lists the notebook cells the agent inserted or edited (their ``metadata.codelia``).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
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
    "Usage: %codelia mcp add NAME [--env KEY=VALUE]... [--timeout S] [--startup-timeout S] "
    "-- command args...\n"
    "   or: %codelia mcp add NAME [--header 'Name: value']... [--timeout S] [--sse] --url URL"
)
MCP_PROMPT_USAGE = "Usage: %codelia mcp prompt SERVER NAME [key=value ...]"


def _mcp(nb: NotebookAgent, argument: str) -> None:
    """``%codelia mcp`` lists; ``%codelia mcp add NAME ...`` adds (see MCP_ADD_USAGE)."""
    from ..standard_tools.mcp import McpConfigError, parse_one_server

    servers = nb.mcp_servers()
    if not argument:
        print(servers.describe())
        return
    words = _split(argument, MCP_ADD_USAGE)
    if words[0] == "prompt":
        raise UsageError(f"{MCP_PROMPT_USAGE} (it runs the prompt as a turn of its own)")
    if words[0] == "logout":
        return _mcp_logout(nb, words[1:])
    if len(words) < 3 or words[0] != "add":
        raise UsageError(MCP_ADD_USAGE)
    name = words[1]
    entry = _mcp_add_entry(words[2:])
    try:
        config = parse_one_server(name, entry, "%codelia mcp add")
    except McpConfigError as exc:
        raise UsageError(str(exc)) from None
    servers.add(name, config)
    print(
        f"Added MCP server {name!r} ({config.describe()}); it starts with the next run. "
        'To keep it, add it to "mcpServers" in the codelia config file.'
    )


def _mcp_logout(nb: NotebookAgent, names: list[str]) -> None:
    """``%codelia mcp logout NAME``: forget a server's OAuth tokens (it signs in again)."""
    from ..standard_tools.mcp.oauth import remove_tokens

    if len(names) != 1:
        raise UsageError("Usage: %codelia mcp logout NAME")
    token_dir = nb.home() / "mcp-oauth"
    if remove_tokens(token_dir, names[0]):
        print(f"Forgot the sign-in of MCP server {names[0]!r}; it asks again on its next start.")
    else:
        print(f"No stored sign-in for MCP server {names[0]!r} (in {token_dir}).")


def _split(argument: str, usage: str) -> list[str]:
    import shlex

    try:
        words = shlex.split(argument)
    except ValueError as exc:
        raise UsageError(f"{exc}. {usage}") from None
    if not words:
        raise UsageError(usage)
    return words


def _mcp_add_entry(words: list[str]) -> dict[str, Any]:
    """The ``mcpServers`` entry ``%codelia mcp add``'s options describe."""
    entry: dict[str, Any] = {}
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            command = words[index + 1 :]
            if not command:
                raise UsageError(f"Give the command after --. {MCP_ADD_USAGE}")
            entry.update(command=command[0], args=command[1:])
            break
        if word == "--sse":
            entry["type"] = "sse"
            index += 1
            continue
        if word not in ("--url", "--env", "--header", "--timeout", "--startup-timeout"):
            raise UsageError(f"Unknown option {word!r}. {MCP_ADD_USAGE}")
        if index + 1 >= len(words):
            raise UsageError(f"{word} needs a value. {MCP_ADD_USAGE}")
        value = words[index + 1]
        index += 2
        if word == "--url":
            entry["url"] = value
        elif word == "--env":
            key, sep, text = value.partition("=")
            if not sep or not key:
                raise UsageError(f"--env takes KEY=VALUE, got {value!r}")
            env[key] = text
        elif word == "--header":
            key, sep, text = value.partition(":")
            if not sep or not key.strip():
                raise UsageError(f"--header takes 'Name: value', got {value!r}")
            headers[key.strip()] = text.strip()
        else:
            try:
                seconds = float(value)
            except ValueError:
                raise UsageError(f"{word} takes seconds, got {value!r}") from None
            entry["timeout" if word == "--timeout" else "startup_timeout"] = seconds
    if "command" not in entry and "url" not in entry:
        raise UsageError(MCP_ADD_USAGE)
    if env:
        entry["env"] = env
    if headers:
        entry["headers"] = headers
    return entry


def mcp_prompt_text(nb: NotebookAgent, argument: str) -> str:
    """``%codelia mcp prompt SERVER NAME key=value ...``: the prompt's text, filled in."""
    from ..standard_tools.mcp import McpServerError

    words = _split(argument, MCP_PROMPT_USAGE)
    if len(words) < 3 or words[0] != "prompt":
        raise UsageError(MCP_PROMPT_USAGE)
    server, name = words[1], words[2]
    arguments: dict[str, str] = {}
    for word in words[3:]:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise UsageError(f"Prompt arguments are key=value, got {word!r}. {MCP_PROMPT_USAGE}")
        arguments[key] = value
    servers = nb.mcp_servers()
    try:
        text: str = servers.run_blocking(servers.prompt(server, name, arguments))
    except McpServerError as exc:
        raise UsageError(str(exc)) from None
    return text


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
    from .._redact import redact_secrets

    jobs = nb.jobs.jobs()
    previous = nb.jobs.previous_lines()
    if not jobs and not previous:
        print("No background jobs.")
        return
    lines = []
    for job in jobs:
        last = job.output.last_lines(1)
        summary = f" ({job.summary})" if job.summary else ""
        lines.append(job.status_line() + summary + (f"\n  {last[-1][:200]}" if last else ""))
    if previous:
        lines.append("Jobs of the kernel before the last restart (none of them runs any more):")
        lines += [f"  {line}" for line in previous]
    print(redact_secrets("\n".join(lines)))


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
    # The file's name, as the outline says it: the absolute path is the server's business.
    saved = Path(snapshot.path).name if snapshot.path else "the notebook"
    where = "the live notebook" if snapshot.source == "live" else f"{saved} (as saved)"
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
