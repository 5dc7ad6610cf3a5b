"""Codelia's cell output in static form: a widget tree as HTML, live widgets with a static twin.

While a run goes, the panel is live ipywidgets; once it ends, the cell keeps a plain rich output
instead (HTML, the first image as ``image/png``, a markdown and a text fallback) that a saved
notebook, ``nbconvert``, GitHub, VS Code and a restarted kernel all render, and every widget of
the panel is closed so a long session does not pile up live models in the kernel.

Every live widget codelia shows (:func:`show`) carries its static form in the same display data
(``text/html`` and ``text/plain`` beside the widget view, marked in the output's metadata), so a
file saved mid-run, or whose widgets are gone, still reads. A widget that finishes after its cell
(a background run, job cards) cannot be replaced by display id in JupyterLab: its final bundle
is kept (``_finals``) and announced to the notebook tabs, whose jupyter-codelia extension swaps
it in (and asks for it again when a notebook is reopened).

The conversion walks the widget tree generically (boxes, HTML, images, accordions), so new kinds
of cards made of those widgets become static without changes here. Inputs (buttons, text boxes)
are dropped: their outcome is already written next to them.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets

from . import renderers
from ._finals import FINALS
from ._kit import WidgetKit

_LAYOUT_STYLES = ("border", "padding", "margin", "max_width", "width")


@dataclass
class StaticPanel:
    """The HTML of a widget tree and the images found in it (format, bytes), in order."""

    html: str
    images: list[tuple[str, bytes]] = field(default_factory=list)


def to_static(root: widgets.Widget) -> StaticPanel:
    images: list[tuple[str, bytes]] = []
    return StaticPanel(html=_html(root, images), images=images)


def _hidden(widget: widgets.Widget) -> bool:
    layout = getattr(widget, "layout", None)
    return layout is not None and (layout.display == "none" or layout.visibility == "hidden")


_PLAIN_BOX = "box-sizing:border-box"


def _box_style(widget: widgets.Widget) -> str:
    layout = widget.layout
    styles = [
        f"{name.replace('_', '-')}:{getattr(layout, name)}"
        for name in _LAYOUT_STYLES
        if getattr(layout, name, None)
    ]
    if isinstance(widget, widgets.HBox):
        styles.append("display:flex;flex-wrap:wrap;gap:4px;align-items:center")
    # A full-width box counts its padding and border in its width, so the output area never
    # scrolls sideways by a few pixels.
    styles.append(_PLAIN_BOX)
    return ";".join(styles)


def _html(widget: widgets.Widget, images: list[tuple[str, bytes]]) -> str:
    if _hidden(widget):
        return ""
    if isinstance(widget, widgets.Image):
        fmt = widget.format or "png"
        images.append((fmt, bytes(widget.value)))
        data = base64.b64encode(bytes(widget.value)).decode("ascii")
        return (
            f'<img src="data:image/{renderers.escape(fmt)};base64,{data}" alt="image" '
            'style="max-width:100%;height:auto;display:block">'
        )
    if isinstance(widget, widgets.Accordion):
        parts = []
        for index, child in enumerate(widget.children):
            title = widget.get_title(index) or ""
            opened = " open" if widget.selected_index == index else ""
            parts.append(
                f"<details{opened}><summary>{renderers.escape(title)}</summary>"
                f"{_html(child, images)}</details>"
            )
        return "".join(parts)
    if isinstance(widget, widgets.Box):
        classes = " ".join(renderers.escape(c) for c in widget._dom_classes)
        inner = "".join(_html(child, images) for child in widget.children)
        if not inner:
            return ""
        style = _box_style(widget)
        if not classes and style == _PLAIN_BOX:
            return inner  # a box that only groups (the panel's row blocks): no wrapper needed
        return f'<div class="{classes}" style="{style}">{inner}</div>'
    if isinstance(widget, widgets.HTML):
        return str(widget.value)
    if isinstance(widget, widgets.Label):
        return f"<span>{renderers.escape(str(widget.value))}</span>"
    return ""  # buttons, text inputs: their outcome is shown beside them


def _widget_tree(root: widgets.Widget) -> Iterator[widgets.Widget]:
    """Every widget reachable from ``root`` through its traits (children, layout, style)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        widget = stack.pop()
        if id(widget) in seen:
            continue
        seen.add(id(widget))
        yield widget
        for name in widget.keys:
            value = getattr(widget, name, None)
            if isinstance(value, widgets.Widget):
                stack.append(value)
            elif isinstance(value, (tuple, list)):
                stack.extend(v for v in value if isinstance(v, widgets.Widget))


def close_tree(root: widgets.Widget) -> None:
    """Close ``root`` and every widget under it, so the kernel keeps none of their models."""
    # Leaves first: a front end then never removes a child view from a parent already gone.
    for widget in reversed(list(_widget_tree(root))):
        widget.close()


def mime_bundle(static: StaticPanel, *, markdown: str, plain: str) -> dict[str, Any]:
    """The display bundle of a finished run: HTML first, the first image, markdown, text."""
    bundle: dict[str, Any] = {
        "text/html": f'<div class="codelia-static">{static.html}</div>',
        "text/markdown": markdown,
        "text/plain": plain,
    }
    pngs = [data for fmt, data in static.images if fmt == "png"]
    if pngs:
        bundle["image/png"] = base64.b64encode(pngs[0]).decode("ascii")
    return bundle


def display_static(display_id: str, bundle: dict[str, Any]) -> None:
    """Replace the output shown under ``display_id`` with ``bundle`` (its cell is running)."""
    from IPython.display import update_display

    update_display(bundle, raw=True, display_id=display_id)


def display_static_later(display_id: str, bundle: dict[str, Any]) -> None:
    """Replace the output under ``display_id`` after its cell finished.

    Sent from a thread of its own, so ipykernel files the update under the request running now
    rather than the long-finished cell: a client that follows one cell at a time (nbclient,
    papermill) then still applies it to the output it belongs to.
    """
    sender = threading.Thread(
        target=display_static, args=(display_id, bundle), name="codelia-static", daemon=True
    )
    sender.start()
    sender.join()


OUTPUT_METADATA = "jupyter_codelia"
"""The key of a codelia output's metadata: ``{"fallback": true}`` says its ``text/html`` is the
static form of the widget view beside it (shown when the widget is gone)."""


def show(
    root: widgets.Widget,
    kit: WidgetKit,
    bundle: dict[str, Any],
    *,
    display_id: str,
    replace: bool = False,
) -> None:
    """Display ``root`` live with ``bundle`` (its static form now) in the same display data,
    or, where no front end renders widgets, ``bundle`` alone; ``replace``: in place of the
    output this cell shows under ``display_id``."""
    from IPython.display import display, update_display

    metadata: dict[str, Any] = {}
    data = bundle
    if kit.live:
        data = dict(root._repr_mimebundle_())
        data["text/plain"] = bundle.get("text/plain", "")
        data["text/html"] = bundle.get("text/html", "")
        metadata = {OUTPUT_METADATA: {"fallback": True}}
        FINALS.showing(root.model_id)
    if replace:
        update_display(data, raw=True, metadata=metadata, display_id=display_id)
    else:
        display(data, raw=True, metadata=metadata, display_id=display_id)
