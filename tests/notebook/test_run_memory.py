"""A finished run leaves nothing of the notebook layer alive in the kernel.

A real kernel, with live widgets (a front end that renders them) and headless (nbclient-like):
every run panel, run sink, live-run state, job-card box and ipywidget made during a blocking
run, a background run and a failed run is followed by a weak reference, and after the runs and
``gc.collect()`` none may be alive. A failure names what is alive and what refers to it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from jupyter_codelia.testing import ScriptedAnthropicServer, fault, reply, text, tool_use

TRACK = """\
import gc as _gc, weakref as _weakref
import ipywidgets as _ipywidgets
from jupyter_codelia.notebook.run._sink import LiveRun as _LiveRun, RunSink as _RunSink
from jupyter_codelia.notebook.ui.job_cards import JobCards as _JobCards
from jupyter_codelia.notebook.ui.panel import RunPanel as _RunPanel

_tracked = []

def _track(cls):
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if type(self) is cls or cls is _ipywidgets.Widget:
            _tracked.append((type(self).__name__, _weakref.ref(self)))

    cls.__init__ = __init__

for _cls in (_RunPanel, _RunSink, _LiveRun, _JobCards, _ipywidgets.Widget):
    _track(_cls)
"""
"""Follows every object of those classes made from now on (widgets: every subclass too)."""

ALIVE = """\
import json as _json, sys as _sys, types as _types
_gc.collect()

def _where(ref):
    if isinstance(ref, _types.CellType):
        holders = [type(h).__qualname__ + ":" + getattr(h, "__qualname__", "")
                   for h in _gc.get_referrers(ref) if not isinstance(h, _types.FrameType)]
        return str(holders[:3])
    if isinstance(ref, _types.MethodType):
        return ":" + ref.__func__.__qualname__
    return ""

def _referrers(obj):
    names = []
    for ref in _gc.get_referrers(obj):
        if isinstance(ref, _types.FrameType):
            continue
        names.append(type(ref).__qualname__ + _where(ref))
    return names[:6]

_alive = [ref for _name, ref in _tracked if ref() is not None]
print(_json.dumps({
    "made": len(_tracked),
    "alive": sorted(
        f"{type(ref()).__name__} <- {', '.join(_referrers(ref()))}" for ref in _alive
    ),
}))
del _alive
"""


def python_call(i: int) -> list[Any]:
    return [
        reply(text(f"Checking {i}."), tool_use("python", {"code": f"v{i} = {i}\nprint(v{i})"})),
        reply(text(f"Done: {i}.")),
    ]


@pytest.mark.parametrize("widgets", [True, False], ids=["live-widgets", "headless"])
def test_a_finished_run_leaves_no_notebook_object_alive(start_kernel: Any, widgets: bool) -> None:
    script = [
        *python_call(1),
        *python_call(2),
        *python_call(3),
        fault.status(400, "invalid_request_error", "this run fails"),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(
            server.url, widgets=widgets, JUPYTER_CODELIA_APPROVAL_MODE="full-access"
        )
        assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
        assert kernel.execute(TRACK).status == "ok"
        assert kernel.execute("%%codelia\nfirst").status == "ok"
        assert kernel.execute("%%codelia\nsecond").status == "ok"
        assert kernel.execute("%%codelia --background\nthird").status == "ok"
        waited = kernel.execute("_result = await _\nprint(_result.status)")
        assert waited.stream_text().strip() == "completed", waited.reply["content"]
        failed = kernel.execute("%%codelia\nfourth")
        assert failed.status == "error" and "this run fails" in json.dumps(failed.reply["content"])
        assert server.remaining == 0
        # A finished background run's cards are made static on the job-card clock.
        kernel.execute("import time; time.sleep(1.5)")
        report = alive(kernel)
        kept_open = report["alive"] if widgets else []
        # With a widget front end, the background run's frame stays open (within a budget) for
        # front ends without jupyter-codelia; with the budget at 0 it goes too.
        kernel.execute(
            "from jupyter_codelia.notebook.ui._finals import FINALS as _FINALS\n"
            "_FINALS.max_open = 0\n"
            "_FINALS.close_over_budget()"
        )
        after_budget = alive(kernel)
    assert report["made"] > 20, report  # the tracking saw the runs' panels and widgets
    assert [entry.split(" <- ")[0] for entry in kept_open] in ([], ["Layout", "Output"]), kept_open
    assert not after_budget["alive"], "alive after the runs:\n" + "\n".join(after_budget["alive"])


def alive(kernel: Any) -> dict[str, Any]:
    """What the tracking made, and what of it is alive (with what refers to it)."""
    return dict(json.loads(kernel.execute(ALIVE).stream_text().strip().splitlines()[-1]))


def test_finished_widgets_kept_open_are_bounded() -> None:
    from jupyter_codelia.notebook.ui._finals import FinalOutputs

    finals = FinalOutputs(max_open=2)
    closed: list[str] = []
    for name in ("a", "b", "c"):
        finals.finished(name, {"text/plain": name}, lambda name=name: closed.append(name))
    assert closed == ["a"]
    finals.finished("d", {"text/plain": "d"})  # closed with its cell: nothing kept open
    assert closed == ["a"]
    assert finals.states(["a", "d"]) == {
        "a": {"data": {"text/plain": "a"}},
        "d": {"data": {"text/plain": "d"}},
    }
