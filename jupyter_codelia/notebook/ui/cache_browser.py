"""The cache browser widget (``%codelia cache``): browse the tool-output cache like the model does.

Lists entries (time, tool, size, line count, ref, and whose they are: this kernel's session
first, then this kernel's other sessions, then this notebook's, then the rest), pages through
one entry by offset and limit, greps it (literal or regex, with context lines), opens a
character window of one long line, and shows the images of entries stored as typed parts.
Every view is produced by the store's own readers, so the person sees exactly the text the
model would get.

Its display data carries a static twin (:func:`static_bundle`: the entry table and the selected
entry's first page), which is all that is shown where no front end renders widgets, and what a
saved notebook keeps.
"""

from __future__ import annotations

import uuid
from typing import Any

import ipywidgets as widgets

from . import renderers

PAGE_LINES = 200
STATIC_ROWS = 50
"""Entries listed by the static form (the newest of the browsing kernel's first)."""

# The entry list is a <select>: a monospace font lines its padded columns up (theme-aware).
_STYLE = (
    "<style>.codelia-cache-browser select{font-family:var(--jp-code-font-family,monospace);"
    "font-size:var(--jp-code-font-size,12px);color:var(--jp-content-font-color1);"
    "background:var(--jp-layout-color1)}</style>"
)


class CacheBrowser:
    """Widgets over a ``ToolOutputCacheStore``; ``.widget`` is the VBox to display."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.entries: list[Any] = []
        self.entry_list = widgets.Select(
            options=[], rows=8, layout=widgets.Layout(width="100%"), description=""
        )
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh")
        self.offset = widgets.BoundedIntText(
            value=0, min=0, max=10**12, description="offset", layout=widgets.Layout(width="170px")
        )
        self.limit = widgets.BoundedIntText(
            value=PAGE_LINES, min=1, max=100_000, description="limit",
            layout=widgets.Layout(width="170px"),
        )  # fmt: skip
        self.prev_button = widgets.Button(description="◀ Prev", layout=widgets.Layout(width="auto"))
        self.next_button = widgets.Button(description="Next ▶", layout=widgets.Layout(width="auto"))
        self.read_button = widgets.Button(description="Read", button_style="primary")
        self.pattern = widgets.Text(
            placeholder="grep pattern", layout=widgets.Layout(width="260px")
        )
        self.regex = widgets.Checkbox(value=False, description="regex", indent=False)
        self.before = widgets.BoundedIntText(
            value=0, min=0, max=1000, description="before", layout=widgets.Layout(width="150px")
        )
        self.after = widgets.BoundedIntText(
            value=0, min=0, max=1000, description="after", layout=widgets.Layout(width="150px")
        )
        self.grep_button = widgets.Button(description="Grep", icon="search")
        self.line_number = widgets.BoundedIntText(
            value=1, min=1, max=10**12, description="line", layout=widgets.Layout(width="170px")
        )
        self.char_offset = widgets.BoundedIntText(
            value=0, min=0, max=10**12, description="chars from",
            layout=widgets.Layout(width="190px"),
        )  # fmt: skip
        self.char_limit = widgets.BoundedIntText(
            value=2000, min=1, max=1_000_000, description="count",
            layout=widgets.Layout(width="170px"),
        )  # fmt: skip
        self.line_button = widgets.Button(description="Show line window")
        self.output = widgets.HTML(value="")
        self.images = widgets.Box([], layout=widgets.Layout(flex_flow="row wrap"))

        self.refresh_button.on_click(lambda _b: self.refresh())
        self.read_button.on_click(lambda _b: self.read())
        self.prev_button.on_click(lambda _b: self.page(-1))
        self.next_button.on_click(lambda _b: self.page(1))
        self.grep_button.on_click(lambda _b: self.grep())
        self.line_button.on_click(lambda _b: self.line_window())
        self.entry_list.observe(lambda _c: self._selected(), names="value")

        self.widget = widgets.VBox(
            [
                widgets.HTML(value=f"{_STYLE}<b>codelia tool-output cache</b>"),
                widgets.HBox([self.entry_list, self.refresh_button]),
                widgets.HBox(
                    [self.offset, self.limit, self.prev_button, self.next_button, self.read_button]
                ),
                widgets.HBox([self.pattern, self.regex, self.before, self.after, self.grep_button]),
                widgets.HBox(
                    [self.line_number, self.char_offset, self.char_limit, self.line_button]
                ),
                self.images,
                self.output,
            ],
            layout=widgets.Layout(border="1px solid var(--jp-border-color2, #ddd)", padding="4px"),
        )
        self.widget.add_class("codelia-cache-browser")
        self.refresh()

    def _ipython_display_(self) -> None:
        from . import _static
        from ._kit import LIVE

        bundle = static_bundle(self.store, self.ref_id, entries=self.entries)
        _static.show(self.widget, LIVE, bundle, display_id=uuid.uuid4().hex)

    # ------------------------------------------------------------------ actions

    @property
    def ref_id(self) -> str | None:
        value = self.entry_list.value
        return str(value) if value else None

    def refresh(self) -> None:
        origin = getattr(self.store, "origin", None)
        self.entries = ordered_entries(self.store)
        ref_width = max((len(e.ref_id) for e in self.entries), default=0)
        self.entry_list.options = [
            (entry_label(e, origin, ref_width=ref_width), e.ref_id) for e in self.entries
        ]
        if not self.entries:
            self._show_text("The cache is empty: tool outputs appear here after a run.")

    def select(self, ref_id: str) -> None:
        self.entry_list.value = ref_id

    def _selected(self) -> None:
        self.offset.value = 0
        self.read()

    def read(self) -> None:
        ref_id = self._require_entry()
        if ref_id is None:
            return
        self._attempt(lambda: self.store.read(ref_id, self.offset.value, self.limit.value))
        self._show_images(ref_id)

    def page(self, direction: int) -> None:
        self.offset.value = max(0, self.offset.value + direction * self.limit.value)
        self.read()

    def grep(self) -> None:
        ref_id = self._require_entry()
        if ref_id is None:
            return
        if not self.pattern.value:
            self._show_error("Type a pattern to grep for.")
            return
        self._attempt(
            lambda: self.store.grep(
                ref_id,
                self.pattern.value,
                regex=self.regex.value,
                before=self.before.value,
                after=self.after.value,
            )
        )

    def line_window(self) -> None:
        ref_id = self._require_entry()
        if ref_id is None:
            return
        self._attempt(
            lambda: self.store.read_line(
                ref_id, self.line_number.value, self.char_offset.value, self.char_limit.value
            )
        )

    # ------------------------------------------------------------------ helpers

    def _require_entry(self) -> str | None:
        ref_id = self.ref_id
        if ref_id is None:
            self._show_error("Select an entry first.")
        return ref_id

    def _attempt(self, produce: Any) -> None:
        try:
            self._show_text(produce())
        except Exception as exc:  # the store's typed errors carry actionable messages
            self._show_error(str(exc).strip("'\""))

    def _show_text(self, text: str) -> None:
        self.output.value = renderers.pre(text, max_height="32em")

    def _show_error(self, message: str) -> None:
        self.output.value = f'<div style="color:#d93025">{renderers.escape(message)}</div>'

    def _show_images(self, ref_id: str) -> None:
        entry = next((e for e in self.entries if e.ref_id == ref_id), None)
        if entry is None or not entry.has_parts:
            self.images.children = ()
            return
        try:
            parts = self.store.read_parts(ref_id)
        except Exception as exc:
            self._show_error(str(exc))
            return
        images = []
        for part in parts:
            data = part.data_bytes() if hasattr(part, "data_bytes") else None
            if data is None:
                continue
            media = part.image_url.media_type or "image/png"
            images.append(
                widgets.Image(
                    value=data,
                    format=media.split("/", 1)[1],
                    layout=widgets.Layout(max_width="48%"),
                )
            )
        self.images.children = tuple(images)


def static_bundle(
    store: Any, ref_id: str | None = None, *, entries: list[Any] | None = None
) -> dict[str, str]:
    """The cache as static output: a table of its entries (and the first page of ``ref_id``)."""
    origin = getattr(store, "origin", None)
    entries = ordered_entries(store) if entries is None else entries
    if not entries:
        empty = "codelia tool-output cache: empty (tool outputs appear here after a run)."
        return {"text/plain": empty, "text/html": f"<p>{renderers.escape(empty)}</p>"}
    columns = (
        renderers.Column("saved", keep=True),
        renderers.Column("tool", keep=True),
        renderers.Column("size", keep=True),
        renderers.Column("lines", keep=True),
        renderers.Column("ref", code=True, keep=True),
        renderers.Column("whose"),
    )
    rows = [
        (
            e.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            e.tool_name + (" [error]" if e.is_error else ""),
            _size(e.size_bytes),
            f"{e.line_count}",
            e.ref_id,
            _kinship(e, origin)[1] + (" [images]" if e.has_parts else ""),
        )
        for e in entries[:STATIC_ROWS]
    ]
    more = len(entries) - STATIC_ROWS
    after = (
        f"… and {more} older entries. " if more > 0 else ""
    ) + "Read one with <code>%codelia cache REF</code> in a live notebook."
    bundle = renderers.table_bundle(
        columns,
        rows,
        before=f"codelia tool-output cache: {len(entries)} "
        + ("entry" if len(entries) == 1 else "entries"),
        after=after,
    )
    if ref_id is not None:
        try:
            page = store.read(ref_id, 0, PAGE_LINES)
        except Exception as exc:  # the store's typed errors carry actionable messages
            page = str(exc).strip("'\"")
        bundle["text/html"] += f"<p><b>{renderers.escape(ref_id)}</b></p>" + renderers.pre(page)
        bundle["text/plain"] += f"\n\n{ref_id}:\n{page}"
    return bundle


def ordered_entries(store: Any) -> list[Any]:
    """The store's entries, the browsing kernel's own first (newest first within each group)."""
    origin = getattr(store, "origin", None)
    return sorted(store.list_entries(), key=lambda e: _kinship(e, origin)[0])


def whose(entry: Any, store: Any) -> str:
    """ "(this session)", "(this kernel)", "(this notebook)" or "(other: ...)"."""
    return _kinship(entry, getattr(store, "origin", None))[1]


def entry_label(entry: Any, origin: Any = None, *, ref_width: int = 0) -> str:
    """One row of the list in fixed-width columns: time, tool, size, lines, ref, whose, flags."""
    when = entry.created_at.strftime("%Y-%m-%d %H:%M:%S")
    kind = " [images]" if entry.has_parts else ""
    error = " [error]" if entry.is_error else ""
    size = _size(entry.size_bytes)
    lines = f"{entry.line_count} lines"
    whose = _kinship(entry, origin)[1]
    return (
        f"{when}  {entry.tool_name:<18} {size:>9}  {lines:>12}  "
        f"{entry.ref_id:<{ref_width}}  {whose}{kind}{error}"
    ).rstrip()


def _kinship(entry: Any, origin: Any) -> tuple[int, str]:
    """How close an entry is to the browsing kernel (sort rank) and the label saying so."""
    session = getattr(entry, "session_id", None)
    kernel = getattr(entry, "kernel_id", None)
    notebook = getattr(entry, "notebook", None)
    if origin is not None:
        if session is not None and session == origin.session_id:
            return 0, "(this session)"
        if kernel is not None and kernel == origin.kernel_id:
            return 1, "(this kernel)"
        if notebook is not None and notebook == origin.notebook:
            return 2, "(this notebook)"
    if notebook is not None:
        return 3, f"(other: {notebook})"
    if session is not None:
        return 3, f"(other session {session[:8]})"
    return 3, "(other)"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1024 / 1024:.1f} MB"
