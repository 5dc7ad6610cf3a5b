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

from .._text import compact_json

DIFF_TOOLS = frozenset({"write", "edit", "apply_patch"})

_TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}
_TODO_STYLES = {
    "pending": "",
    "in_progress": "font-weight:600;",
    "completed": "color:#777;text-decoration:line-through;",
}


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown_to_html(text: str) -> str:
    """CommonMark (plus tables) to HTML with raw HTML escaped."""
    return str(_markdown().render(text))


def escape(text: str) -> str:
    return html.escape(text, quote=True)


def pre(text: str, *, max_height: str = "24em") -> str:
    """Monospace block that keeps whitespace and scrolls when long."""
    style = (
        f"white-space:pre-wrap;word-break:break-word;max-height:{max_height};overflow:auto;"
        "margin:0;font-family:var(--jp-code-font-family,monospace);font-size:12px;"
    )
    return f'<pre style="{style}">{escape(text)}</pre>'


def diff_to_html(diff: str) -> str:
    """A unified diff coloured with pygments' DiffLexer, inline styles (no stylesheet needed)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DiffLexer

    formatter = HtmlFormatter(noclasses=True, nowrap=False, style="default")
    body = highlight(diff, DiffLexer(), formatter)
    style = "max-height:28em;overflow:auto;font-size:12px;border:1px solid #ddd;"
    return f'<div class="codelia-diff" style="{style}">{body}</div>'


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
        return '<div class="codelia-todos" style="color:#777">No todos.</div>'
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
) -> str:
    colours = {
        "running": "#1a73e8",
        "awaiting approval": "#e37400",
        "completed": "#188038",
        "cancelled": "#777",
        "error": "#d93025",
    }
    colour = colours.get(status, "#444")
    session = escape(session_id[:8]) if session_id else "new"
    context = f"{context_left_percent}% context left" if context_left_percent is not None else ""
    cells = [
        f"<b>codelia</b> · {escape(model)}",
        f'session <code title="{escape(session_id or "")}">{session}</code>',
        f'<span style="color:{colour};font-weight:600">{escape(status)}</span>',
        f"{format_tokens(input_tokens)} in / {format_tokens(output_tokens)} out",
        escape(format_cost(cost_usd)),
    ]
    if context:
        cells.append(context)
    joined = " &nbsp;|&nbsp; ".join(cells)
    return f'<div class="codelia-header" style="font-size:12px">{joined}</div>'
