"""The widget classes codelia draws with: live ipywidgets, or the same classes that open no comm.

Where a front end renders widgets (JupyterLab, Notebook 7, VS Code) a panel is live ipywidgets.
Where none does (nbclient, papermill, ``jupyter execute``), a live widget would only be saved:
nbclient stores the state of every widget model ever opened, so 150 small runs made a 7 MB
notebook. There the panel is built from :data:`QUIET`, subclasses of the same ipywidgets classes
whose comm is a :class:`comm.DummyComm` that sends nothing (no ``comm_open``, no updates), and
only its static output (``_static``) is displayed. The panel code is the same in both cases,
and so is the static output a person sees.

Which kit a cell gets is decided from that cell's own execute request (``_frontend``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import ipywidgets as widgets
from comm import DummyComm
from ipywidgets.widgets.trait_types import InstanceDict


@dataclass(frozen=True)
class WidgetKit:
    """The ipywidgets classes one panel is made of."""

    live: bool
    HTML: type[widgets.HTML]
    VBox: type[widgets.VBox]
    HBox: type[widgets.HBox]
    Box: type[widgets.Box]
    Accordion: type[widgets.Accordion]
    Image: type[widgets.Image]
    Button: type[widgets.Button]
    Text: type[widgets.Text]
    Layout: type[widgets.Layout]
    Output: type[widgets.Output]
    FloatProgress: type[widgets.FloatProgress]


def _kit(make: Any, live: bool) -> WidgetKit:
    return WidgetKit(
        live=live,
        HTML=make(widgets.HTML),
        VBox=make(widgets.VBox),
        HBox=make(widgets.HBox),
        Box=make(widgets.Box),
        Accordion=make(widgets.Accordion),
        Image=make(widgets.Image),
        Button=make(widgets.Button),
        Text=make(widgets.Text),
        Layout=make(widgets.Layout),
        Output=make(widgets.Output),
        FloatProgress=make(widgets.FloatProgress),
    )


LIVE = _kit(lambda cls: cls, live=True)


class _SilentComm(DummyComm):
    """The comm of a widget no front end shows: it sends nothing and is registered nowhere."""

    def close(
        self,
        data: Any = None,
        metadata: Any = None,
        buffers: Any = None,
        deleting: bool = False,
    ) -> None:
        self._closed = True


@cache
def _quiet(cls: type[widgets.Widget]) -> type[widgets.Widget]:
    """``cls`` with a comm that sends nothing, and quiet default sub-widgets (layout, style)."""
    parts = {
        name: trait.klass
        for name, trait in cls.class_traits().items()
        if isinstance(trait, InstanceDict)
        and isinstance(trait.klass, type)
        and issubclass(trait.klass, widgets.Widget)
    }

    def __init__(self: widgets.Widget, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        for name, klass in parts.items():
            if name not in kwargs:  # (not setdefault: an unused default would stay registered)
                kwargs[name] = _quiet(klass)()
        cls.__init__(self, *args, **kwargs)

    def open(self: widgets.Widget) -> None:
        if self.comm is None:
            self.comm = _SilentComm(target_name="jupyter.widget", primary=False)

    return type(cls.__name__, (cls,), {"__init__": __init__, "open": open, "__module__": __name__})


QUIET = _kit(_quiet, live=False)


def kit_for(live: bool) -> WidgetKit:
    return LIVE if live else QUIET
