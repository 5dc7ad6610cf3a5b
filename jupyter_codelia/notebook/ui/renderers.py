"""HTML renderers for the widget panel: markdown, coloured diffs, todo lists, tool summaries.

Pure functions from data to HTML strings (no widgets), so they are testable alone and shared by
the panel and the cache browser. Model text is rendered with raw HTML disabled: the model's
output must never inject markup or scripts into the notebook.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from typing import Any

from ..._text import compact_json

DIFF_TOOLS = frozenset({"write", "edit", "apply_patch", "notebook_edit"})

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


def diff_of_result(tool: str, result_text: str) -> str | None:
    """The ``diff`` field of a write / edit / apply_patch JSON result, when it has one."""
    if tool not in DIFF_TOOLS or not result_text.startswith("{"):
        return None
    try:
        payload = json.loads(result_text)
    except ValueError:
        return None
    diff = payload.get("diff") if isinstance(payload, dict) else None
    return diff if isinstance(diff, str) and diff.strip() else None


def edit_id_of_result(result_text: str) -> str | None:
    """The ``edit_id`` of a ``notebook_edit`` result (the front end can revert that edit)."""
    if not result_text.startswith("{"):
        return None
    try:
        payload = json.loads(result_text)
    except ValueError:
        return None
    edit_id = payload.get("edit_id") if isinstance(payload, dict) else None
    return edit_id if isinstance(edit_id, str) else None


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


def args_summary(tool: str, args: dict[str, Any], *, limit: int = 90) -> str:
    """A one-line summary of a call's arguments for the card header."""
    for key in ("file_path", "path", "url", "query", "pattern", "name", "command"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return _one_line(value, limit)
    code = args.get("code")
    if isinstance(code, str) and code.strip():
        return _one_line(code.strip().splitlines()[0], limit)
    if not args:
        return ""
    return _one_line(compact_json(args), limit)


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


def args_html(tool: str, args: dict[str, Any], *, diff_shown: bool = False) -> str:
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
    content = rest.pop("content", None) if tool == "write" else None
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


def progress_line(event: Any) -> str:
    """A ``tool.progress`` event as one line: ``3/5 step 3``, or a log line with its level."""
    if event.level:
        return f"[{event.level}] {event.message or ''}".strip()
    count = ""
    if event.progress is not None:
        done = f"{event.progress:g}"
        count = f"{done}/{event.total:g}" if event.total else done
    return " ".join(part for part in (count, event.message or "") if part)
