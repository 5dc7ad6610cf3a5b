"""HTML renderers for the widget panel: markdown, coloured diffs, todo lists, tool summaries.

Pure functions from data to HTML strings (no widgets), so they are testable alone and shared by
the panel and the cache browser. Model text is rendered with raw HTML disabled: the model's
output must never inject markup or scripts into the notebook.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from ..._text import compact_json

MUTED = "var(--jp-ui-font-color2,#777)"
"""Secondary text: JupyterLab's theme colour (readable in dark themes), grey elsewhere."""
BORDER = "var(--jp-border-color2,#ddd)"

_TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}
_TODO_STYLES = {
    "pending": "",
    "in_progress": "font-weight:600;",
    "completed": f"color:{MUTED};text-decoration:line-through;",
}


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


# An ipywidgets HTML widget sets the inline-widget height (28 px) as its line height so labels
# line up with buttons; prose inside it would look double-spaced without its own line height.
PROSE_STYLE = "line-height:var(--jp-content-line-height,1.6)"


def markdown_to_html(text: str) -> str:
    """CommonMark (plus tables) to HTML with raw HTML escaped, spaced as prose."""
    return f'<div class="codelia-prose" style="{PROSE_STYLE}">{_markdown().render(text)}</div>'


def escape(text: str) -> str:
    return html.escape(text, quote=True)


def pre(text: str, *, max_height: str = "24em") -> str:
    """Monospace block that keeps whitespace and scrolls when long."""
    style = (
        f"white-space:pre-wrap;word-break:break-word;max-height:{max_height};overflow:auto;"
        "margin:0;font-family:var(--jp-code-font-family,monospace);font-size:12px;"
    )
    return f'<pre style="{style}">{escape(text)}</pre>'


_DIFF_LINE_STYLES = {
    "added": "background:rgba(46,160,67,0.22)",
    "removed": "background:rgba(248,81,73,0.22)",
    "hunk": "color:var(--jp-info-color1,#0969da)",
    "file": f"font-weight:600;color:{MUTED}",
    "context": "",
}


def _diff_line_kind(line: str) -> str:
    if line.startswith(("+++", "---", "diff ")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return "context"


def diff_to_html(diff: str) -> str:
    """A unified diff, one coloured line per line, in inline styles (no stylesheet needed).

    Added and removed lines get translucent backgrounds and every line keeps the theme's text
    colour, so the diff reads in light and dark JupyterLab themes, nbconvert and GitHub alike.
    """
    rows = "".join(
        f'<span style="display:block;{_DIFF_LINE_STYLES[_diff_line_kind(line)]}">'
        f"{escape(line) or ' '}</span>"
        for line in diff.splitlines()
    )
    pre_style = (
        "margin:0;padding:2px 4px;white-space:pre;font-family:var(--jp-code-font-family,monospace);"
        "color:var(--jp-content-font-color1,inherit);background:transparent;"
    )
    style = f"max-height:28em;overflow:auto;font-size:12px;border:1px solid {BORDER};"
    return f'<div class="codelia-diff" style="{style}"><pre style="{pre_style}">{rows}</pre></div>'


def citations_to_html(citations: list[dict[str, Any]]) -> str:
    """Numbered source links under an answer (``[1] Title``); only http(s) URLs become links."""
    if not citations:
        return ""
    items = []
    for number, citation in enumerate(citations, start=1):
        url = citation.get("url") or ""
        label = escape(citation.get("title") or url or "source")
        quoted = citation.get("cited_text")
        tip = f' title="{escape(quoted)}"' if quoted else ""
        if url.startswith(("https://", "http://")):
            link = f'href="{escape(url)}" target="_blank" rel="noopener noreferrer"'
            label = f"<a {link}{tip}>{label}</a>"
        else:
            label = f"<span{tip}>{label}</span>"
        items.append(f"<div>[{number}] {label}</div>")
    return (
        '<div class="codelia-citations" style="font-size:12px;color:#555;margin:2px 0 6px">'
        + "".join(items)
        + "</div>"
    )


def todos_to_html(todos: list[dict[str, Any]]) -> str:
    """The todo list as a checklist; in-progress items show their ``activeForm`` when given."""
    if not todos:
        return f'<div class="codelia-todos" style="color:{MUTED}">No todos.</div>'
    items = []
    for todo in todos:
        status = str(todo.get("status", "pending"))
        text = todo.get("content", "")
        if status == "in_progress" and todo.get("activeForm"):
            text = todo["activeForm"]
        mark = _TODO_MARKS.get(status, "•")
        style = _TODO_STYLES.get(status, "")
        items.append(f'<li style="list-style:none;{style}">{mark} {escape(str(text))}</li>')
    return (
        '<div class="codelia-todos"><b>Todos</b>'
        f'<ul style="margin:2px 0;padding-left:4px">{"".join(items)}</ul></div>'
    )


def todos_to_markdown(todos: list[dict[str, Any]]) -> str:
    """The todo list as a markdown checklist (the static output's text fallback)."""
    if not todos:
        return "Todos: none."
    lines = ["**Todos**"]
    for todo in todos:
        status = str(todo.get("status", "pending"))
        box = "[x]" if status == "completed" else "[ ]"
        suffix = " (in progress)" if status == "in_progress" else ""
        lines.append(f"- {box} {todo.get('content', '')}{suffix}")
    return "\n".join(lines)


def args_summary(args: dict[str, Any], *, limit: int = 90) -> str:
    """A one-line summary of a call's arguments for the card header, in words (the card
    body shows the arguments whole): what the call is about, never its JSON. It goes by the
    arguments' shape, never by the tool's name."""
    summary = next(
        (s for key, summarise in _SUMMARIES if key in args and (s := summarise(args)) is not None),
        None,
    )
    if summary is None:
        summary = _main_argument(args)
    if summary is None:
        code = args.get("code")
        if isinstance(code, str) and code.strip():
            lines = code.strip().splitlines()
            more = f" (+{_count(lines[1:], 'line')})" if len(lines) > 1 else ""
            summary = _one_line(lines[0], limit - len(more)) + more
    return _one_line(summary if summary is not None else _key_values(args), limit)


def _main_argument(args: dict[str, Any]) -> str | None:
    for key in ("file_path", "url", "query", "pattern", "path", "name", "command", "job_id"):
        value = args.get(key)
        if isinstance(value, str) and value:
            where = args.get("path") if key == "pattern" else None
            return f"{value} in {where}" if isinstance(where, str) and where else value
    return None


def _count(items: Any, noun: str) -> str:
    number = len(items) if isinstance(items, list) else 0
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _todo_summary(args: dict[str, Any]) -> str | None:
    todos = args.get("todos")
    if not isinstance(todos, list):
        return None
    first = next((t.get("content") for t in todos if isinstance(t, dict)), None)
    return _count(todos, "item") + (f": {first}" if isinstance(first, str) else "")


def _todo_patch_summary(args: dict[str, Any]) -> str | None:
    updates = args.get("updates")
    if not isinstance(updates, list):
        return None
    changes = []
    for update in updates:
        if not isinstance(update, dict):
            continue
        change = "removed" if update.get("remove") else update.get("status") or "edited"
        changes.append(f"{update.get('id', '?')} → {change}")
    return ", ".join(changes) or None


def _notebook_edit_summary(args: dict[str, Any]) -> str | None:
    action = args.get("action")
    if not isinstance(action, str):
        return None
    where = args.get("cell_id") or (
        f"#{args['index']}" if isinstance(args.get("index"), int) else None
    )
    if action == "insert":
        kind = args.get("cell_type") or "code"
        place = f" {args.get('position') or 'after'} {where}" if where else ""
        return f"insert a {kind} cell{place}"
    return f"{action} {where}" if where else action


def _cell_ids_summary(args: dict[str, Any]) -> str | None:
    ids = args.get("cell_ids")
    if not isinstance(ids, list) or not ids:
        return None
    return ("cell " if len(ids) == 1 else "cells ") + ", ".join(str(i) for i in ids)


def _patch_summary(args: dict[str, Any]) -> str | None:
    patch = args.get("patch")
    if not isinstance(patch, str):
        return None
    files = [
        line.split(":", 1)[1].strip()
        for line in patch.splitlines()
        if line.startswith(("*** Update File:", "*** Add File:", "*** Delete File:"))
    ]
    return ", ".join(files) or None


def _cache_read_summary(args: dict[str, Any]) -> str | None:
    ref = args.get("ref_id")
    if not isinstance(ref, str):
        return None
    offset, limit = args.get("offset"), args.get("limit")
    if isinstance(args.get("line_number"), int):
        return f"{ref} line {args['line_number']}"
    if isinstance(offset, int) and isinstance(limit, int):
        return f"{ref} lines {offset + 1}–{offset + limit}"
    if isinstance(offset, int):
        return f"{ref} from line {offset + 1}"
    return ref


def _cache_grep_summary(args: dict[str, Any]) -> str | None:
    ref, pattern = args.get("ref_id"), args.get("pattern")
    if not isinstance(ref, str) or not isinstance(pattern, str):
        return None
    return f"{pattern} in {ref}"


def _history_summary(args: dict[str, Any]) -> str | None:
    last = args.get("last")
    return f"last {last}" if isinstance(last, int) else None


def _key_values(args: dict[str, Any]) -> str:
    """Any other call: ``name: value`` pairs, lists and objects counted rather than dumped."""
    pairs = []
    for key, value in args.items():
        if isinstance(value, list):
            shown = _count(value, "item")
        elif isinstance(value, dict):
            shown = "{…}"
        elif isinstance(value, str):
            shown = " ".join(value.split())
        else:
            shown = compact_json(value)
        pairs.append(f"{key}: {shown}")
    return ", ".join(pairs)


_SUMMARIES: tuple[tuple[str, Callable[[dict[str, Any]], str | None]], ...] = (
    ("todos", _todo_summary),
    ("updates", _todo_patch_summary),
    ("action", _notebook_edit_summary),
    ("cell_ids", _cell_ids_summary),
    ("last", _history_summary),
    ("patch", _patch_summary),
    ("ref_id", _cache_grep_summary),
    ("ref_id", _cache_read_summary),
)
"""Summaries of arguments that say little one by one (lists, actions, refs), by the argument
that marks them, in order; a summary that does not fit the arguments gives None."""


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def format_cost(cost: float | None) -> str:
    if cost is None:
        return "cost unknown"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def format_duration(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def header_html(
    *,
    model: str,
    session_id: str | None,
    status: str,
    input_tokens: int,
    output_tokens: int,
    cost_usd: float | None,
    context_left_percent: int | None,
    session_input_tokens: int | None = None,
    session_output_tokens: int | None = None,
    demo: bool = False,
) -> str:
    """The panel header. Token and cost figures are this run's (each model call counted
    once); the session's totals follow, labelled. A demo run shows no dollar figure: its
    "model" is a scripted local server."""
    colours = {
        "running": "var(--jp-brand-color1,#1a73e8)",
        "awaiting approval": "var(--jp-warn-color1,#e37400)",
        "completed": "var(--jp-success-color1,#188038)",
        "cancelled": MUTED,
        "error": "var(--jp-error-color1,#d93025)",
        "stopped by its budget": "var(--jp-warn-color1,#e37400)",
    }
    colour = colours.get(status, "var(--jp-ui-font-color1,#444)")
    session = escape(session_id[:8]) if session_id else "new"
    context = f"{context_left_percent}% context left" if context_left_percent is not None else ""
    cells = [
        f"<b>codelia</b> · {escape(model)}",
        f'session <code title="{escape(session_id or "")}">{session}</code>',
        f'<span style="color:{colour};font-weight:600">{escape(status)}</span>',
        f"this run {format_tokens(input_tokens)} in / {format_tokens(output_tokens)} out",
        '<b style="color:var(--jp-warn-color1,#e37400)">offline demo · no cost</b>'
        if demo
        else escape(format_cost(cost_usd)),
    ]
    if session_input_tokens is not None and session_output_tokens is not None:
        cells.append(
            f"session {format_tokens(session_input_tokens)} in / "
            f"{format_tokens(session_output_tokens)} out"
        )
    if context:
        cells.append(context)
    joined = " &nbsp;|&nbsp; ".join(cells)
    return f'<div class="codelia-header" style="font-size:12px">{joined}</div>'


# ---------------------------------------------------------------------- tool arguments

_CODE_KEYS = {"code": "python", "command": "bash", "patch": "diff"}
"""Argument names whose value is code, with the lexer to colour it."""


def code_to_html(code: str, language: str, *, max_height: str = "24em", prompt: str = "") -> str:
    """Source code coloured by pygments with inline styles, in a scrolling block.

    ``prompt`` (e.g. ``"$ "`` for a shell command) is shown before the code, uncoloured."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        return pre(code, max_height=max_height)
    formatter = HtmlFormatter(noclasses=True, nowrap=True, style="default")
    body = highlight(code, lexer, formatter)
    if prompt:
        body = f'<span class="codelia-prompt" style="color:{MUTED}">{escape(prompt)}</span>{body}'
    style = (
        f"white-space:pre-wrap;word-break:break-word;max-height:{max_height};overflow:auto;"
        "margin:0;padding:2px 4px;font-family:var(--jp-code-font-family,monospace);"
        "font-size:12px;background:var(--jp-cell-editor-background,#f7f7f7);"
    )
    return f'<pre class="codelia-code" style="{style}">{body}</pre>'


def _language_of_path(path: str) -> str:
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        return str(get_lexer_for_filename(path).aliases[0])
    except (ClassNotFound, IndexError):
        return "text"


def _edit_diff(path: str, old: str, new: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), path, path, n=2
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def args_html(args: dict[str, Any], *, diff_shown: bool = False) -> str:
    """A tool call's arguments as a person reads them, never as escaped JSON.

    Code is coloured (python code, shell commands, patches), a file path is shown with the
    edit as a diff (unless ``diff_shown``: an approval card already carries the preview), the
    content of a write is coloured by the file's type, a URL is shown whole, and any other
    argument is listed as ``name: value`` with its text kept as written.
    """
    parts: list[str] = []
    rest = dict(args)
    path = rest.pop("file_path", None)
    if isinstance(path, str):
        parts.append(f'<div style="font-size:12px">file <code>{escape(path)}</code></div>')
    url = rest.pop("url", None)
    if isinstance(url, str):
        parts.append(
            f'<div style="font-size:12px;word-break:break-all">url <code>{escape(url)}</code></div>'
        )
    old, new = rest.pop("old_string", None), rest.pop("new_string", None)
    if isinstance(old, str) and isinstance(new, str):
        if not diff_shown:
            parts.append(diff_to_html(_edit_diff(str(path or "file"), old, new)))
    else:
        rest.update({k: v for k, v in (("old_string", old), ("new_string", new)) if v is not None})
    # A file's whole new content (a write), coloured by the file's type.
    content = rest.pop("content", None) if isinstance(path, str) else None
    if isinstance(content, str) and not diff_shown:
        parts.append(code_to_html(content, _language_of_path(str(path or ""))))
    for key, language in _CODE_KEYS.items():
        value = rest.pop(key, None)
        if isinstance(value, str):
            prompt = "$ " if key == "command" else ""
            parts.append(
                diff_to_html(value)
                if language == "diff"
                else code_to_html(value, language, prompt=prompt)
            )
        elif value is not None:
            rest[key] = value
    if rest:
        rows = "".join(f"<div><b>{escape(k)}</b>: {_value_html(v)}</div>" for k, v in rest.items())
        parts.append(f'<div style="font-size:12px">{rows}</div>')
    return "".join(parts)


def _value_html(value: Any) -> str:
    if isinstance(value, str):
        return pre(value) if "\n" in value else escape(value)
    return escape(compact_json(value))


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class Column:
    """A table column: ``code`` cells are monospace ids, ``keep`` cells never wrap (ids,
    timestamps); the others (titles, prompts) wrap at word breaks."""

    name: str
    code: bool = False
    keep: bool = False


def table_bundle(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], *, before: str = "", after: str = ""
) -> dict[str, str]:
    """A table as a display bundle: HTML that stays left-aligned with unbroken ids and times
    in every front end (JupyterLab right-aligns table cells by default), and the same table
    as aligned plain text for the front ends that show only text."""
    cell_style = "text-align:left;vertical-align:top;padding:2px 10px 2px 0"
    head = "".join(
        f'<th style="{cell_style};white-space:nowrap">{escape(c.name)}</th>' for c in columns
    )
    body = []
    for row in rows:
        cells = []
        for column, value in zip(columns, row, strict=True):
            shown = f"<code>{escape(value)}</code>" if column.code and value else escape(value)
            wrap = "white-space:nowrap" if column.keep else "overflow-wrap:anywhere"
            cells.append(f'<td style="{cell_style};{wrap}">{shown}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    html_parts = [f"<p>{escape(before)}</p>"] if before else []
    html_parts.append(
        f'<table style="border-collapse:collapse;font-size:12px;margin:0">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
    if after:
        html_parts.append(f"<p>{after}</p>")
    plain = [before] if before else []
    plain.append(text_table([c.name for c in columns], rows))
    if after:
        plain.append(_strip_tags(after))
    return {"text/html": "".join(html_parts), "text/plain": "\n".join(plain)}


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, wide: int = 60) -> str:
    """Rows as columns of aligned plain text; a cell longer than ``wide`` is clipped."""
    clipped = [[_one_line(cell, wide) if cell else "" for cell in row] for row in rows]
    lines = [list(header), *clipped] if header else clipped
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=True)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _strip_tags(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def format_time(value: str) -> str:
    """An ISO timestamp as a person reads it: ``2026-03-01 14:05 UTC`` (no seconds)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M") + (" UTC" if moment.tzinfo is not None else "")


def progress_line(event: Any) -> str:
    """A ``tool.progress`` event as one line: ``3/5 step 3``, or a log line with its level."""
    if event.level:
        return f"[{event.level}] {event.message or ''}".strip()
    count = ""
    if event.progress is not None:
        done = f"{event.progress:g}"
        count = f"{done}/{event.total:g}" if event.total else done
    return " ".join(part for part in (count, event.message or "") if part)
