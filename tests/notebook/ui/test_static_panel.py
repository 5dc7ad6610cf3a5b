"""A finished run leaves static output and no live widgets, panel or event list in the kernel."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

REPO = Path(__file__).resolve().parents[3]
LEFTOVERS = (
    "import gc, ipywidgets\n"
    "from jupyter_codelia.notebook.ui.panel import RunPanel\n"
    "from jupyter_codelia.agent import events\n"
    "gc.collect()\n"
    "panels = sum(isinstance(o, RunPanel) for o in gc.get_objects())\n"
    # The per-turn job-cards box (and its layout) stays: jobs update it after the turn.
    "live = list(ipywidgets.widgets.widget._instances.values())\n"
    "jobs = [w for w in live if 'codelia-jobs' in getattr(w, '_dom_classes', ())]\n"
    "owned = {id(x) for box in jobs for x in (box, box.layout)}\n"
    "evs = sum(isinstance(o, events.ToolResultEvent) for o in gc.get_objects())\n"
    "print(len([w for w in live if id(w) not in owned]), panels, evs)"
)


def _script() -> list[Any]:
    return [
        reply(text("Checking."), tool_use("python", {"code": "print(40 + 2)"})),
        reply(text("The answer is **42**.")),
    ]


def test_blocking_run_is_replaced_by_static_output_and_closes_its_widgets(
    start_kernel: Any,
) -> None:
    with ScriptedAnthropicServer(_script() * 2) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia --approval-mode full-access\nwhat is 40 + 2?")
        assert run.status == "ok", run.reply["content"]
        shown = [
            m
            for m in run.messages
            if m["msg_type"] == "display_data" and m["content"].get("transient")
        ]
        # The panel's display (or the first run's "loading" line the panel replaced; the
        # job-cards box below it has one too).
        display_id = shown[0]["content"]["transient"]["display_id"]
        (update,) = [
            m
            for m in run.messages
            if m["msg_type"] == "update_display_data" and "text/markdown" in m["content"]["data"]
        ]
        assert update["content"]["transient"]["display_id"] == display_id
        data = update["content"]["data"]
        assert "<p>The answer is <strong>42</strong>.</p>" in data["text/html"]
        assert "<b>python</b>" in data["text/html"] and "completed" in data["text/html"]
        assert "The answer is **42**." in data["text/markdown"]
        assert "- **python** `print(40 + 2)`" in data["text/markdown"]
        assert data["text/plain"] == "codelia run completed: The answer is **42**."
        opened = {m["content"]["comm_id"] for m in run.messages if m["msg_type"] == "comm_open"}
        closed = {m["content"]["comm_id"] for m in run.messages if m["msg_type"] == "comm_close"}
        # Everything the run opened is closed (the job-cards box too: no job was started).
        assert opened and opened == closed
        # The static output replaces the panel before its widgets go away.
        kinds = [m["msg_type"] for m in run.messages]
        assert kinds.index("update_display_data") < kinds.index("comm_close")
        kernel.execute("%%codelia --approval-mode full-access\nand again?")
        check = kernel.execute(LEFTOVERS)
        assert check.stream_text().split() == ["0", "0", "0"]
        result = kernel.execute("print(sorted(vars(Out[2])))")
        assert result.stream_text().strip() == (
            "['error', 'final_text', 'panel_shown', 'run_id', 'session_id', 'status', 'usage']"
        )


def test_background_run_keeps_only_its_output_frame(start_kernel: Any) -> None:
    with ScriptedAnthropicServer(_script()) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute("h = %codelia --background --approval-mode full-access what is 40 + 2?")
        done = kernel.execute("r = await h\nprint(r.status)")
        assert done.stream_text().strip() == "completed"
        kernel.drain()
        (frame,) = kernel.widgets_of("OutputModel").values()
        (output,) = frame["outputs"]
        assert "<strong>42</strong>" in output["data"]["text/html"]
        check = kernel.execute(LEFTOVERS)
        # The Output widget and its layout stay: they hold the static output in the page.
        assert check.stream_text().split() == ["2", "0", "0"]


def test_demo_is_labelled_without_cost_and_its_todos_stay_listed(start_kernel: Any) -> None:
    kernel = start_kernel(None, api_key=None)
    kernel.execute("%load_ext jupyter_codelia")
    demo = kernel.execute("%codelia --demo --approval-mode full-access")
    assert demo.status == "ok", demo.reply["content"]
    (static,) = [
        m
        for m in demo.messages
        if m["msg_type"] == "update_display_data" and "text/markdown" in m["content"]["data"]
    ]
    header = static["content"]["data"]["text/html"].split("codelia-header", 1)[1][:1200]
    assert "offline demo · no cost" in header and "$" not in header
    assert "this run " in header and "session " in header
    todos = kernel.execute("%codelia todos")
    shown = json.dumps([m["content"] for m in todos.messages], ensure_ascii=False)
    assert "No codelia session yet" not in shown
    assert "☑ Plot the monthly sales" in shown
    assert "☑ Lower the tax rate in analysis.py" in shown


def _side_panel_load_code() -> str:
    """The code the side panel runs to load the extension (from its TypeScript source)."""
    source = (REPO / "labextension" / "src" / "connection.ts").read_text(encoding="utf-8")
    match = re.search(r"const LOAD_EXTENSION_CODE =\s*'([^']+)';", source)
    assert match is not None
    return match.group(1)


def test_side_panel_loading_leaves_no_already_loaded_line(start_kernel: Any) -> None:
    kernel = start_kernel(None, api_key=None)
    loaded = kernel.execute(_side_panel_load_code())
    assert loaded.status == "ok" and loaded.stream_text() == ""
    mine = kernel.execute("%load_ext jupyter_codelia")
    assert mine.status == "ok"
    assert mine.stream_text() == ""  # not "The jupyter_codelia extension is already loaded"
    again = kernel.execute("%codelia help")
    assert "--demo" in again.stream_text()


WARMED = (
    "from jupyter_codelia.notebook import _warmup\n_warmup.wait()\n"
    "from jupyter_codelia import _redact\n"
    "from jupyter_codelia.llm import pricing\n"
    "from jupyter_codelia.notebook import notebook_agent\n"
    "nb = notebook_agent(get_ipython())\n"
    "mods = ('genai_prices.data', 'jupyter_codelia.testing', 'anyio._backends._asyncio',\n"
    "        'opentelemetry.propagate', 'pygments.lexers.python', 'numpy')\n"
    "print(json.dumps({'modules': [m for m in mods if m in sys.modules],\n"
    "    'prices_looked_up': pricing._model_info.cache_info().currsize,\n"
    "    'redactor_built': _redact._cache is not None,\n"
    "    'prebuilt': nb._prebuilt is not None}))"
)


def test_warm_up_loads_what_the_first_run_would_pay_for_without_output_or_requests(
    start_kernel: Any,
) -> None:
    with ScriptedAnthropicServer(_script()) as server:
        kernel = start_kernel(server.url)
        loaded = kernel.execute("import json, sys\n%load_ext jupyter_codelia")
        warmed = kernel.execute(WARMED)
        assert loaded.stream_text() == "" and loaded.status == "ok"
        assert json.loads(warmed.stream_text()) == {
            "modules": [
                "genai_prices.data",
                "jupyter_codelia.testing",
                "anyio._backends._asyncio",
                "opentelemetry.propagate",
                "pygments.lexers.python",
                "numpy",
            ],
            "prices_looked_up": 1,
            "redactor_built": True,
            "prebuilt": True,
        }
        # Warming talks to nobody and shows nothing: no request, no widget, no display.
        assert server.requests == []
        kernel.drain()
        kinds = {m["msg_type"] for m in kernel.iopub}
        assert not kinds & {"comm_open", "display_data", "error"}, kinds


def test_warm_up_with_invalid_settings_stops_quietly_and_the_run_reports_them(
    start_kernel: Any,
) -> None:
    with ScriptedAnthropicServer(_script()) as server:
        kernel = start_kernel(server.url, JUPYTER_CODELIA_MAX_ITERATIONS="many")
        loaded = kernel.execute("import json, sys\n%load_ext jupyter_codelia")
        warmed = kernel.execute(WARMED)
        assert loaded.stream_text() == "" and loaded.status == "ok"
        state = json.loads(warmed.stream_text())
        assert state["prebuilt"] is False and state["prices_looked_up"] == 0
        kernel.drain()
        assert "error" not in {m["msg_type"] for m in kernel.iopub}
        run = kernel.execute("%%codelia\nwhat is 40 + 2?")
        shown = json.dumps([m["content"] for m in run.messages], default=str)
        assert "max_iterations must be a number, got 'many'" in shown
        assert server.requests == []


def test_load_ext_warms_imports_and_the_first_agent_in_the_background(
    start_kernel: Any,
) -> None:
    with ScriptedAnthropicServer(_script()) as server:
        kernel = start_kernel(server.url)
        loaded = kernel.execute("import sys\n%load_ext jupyter_codelia")
        assert loaded.status == "ok"
        warmed = kernel.execute(
            "from jupyter_codelia.notebook import _warmup\n_warmup.wait()\n"
            "from jupyter_codelia.notebook import notebook_agent\n"
            "nb = notebook_agent(get_ipython())\n"
            "print('anthropic' in sys.modules, 'ipywidgets' in sys.modules, nb.agent is None)\n"
            "ready = nb._prebuilt[1]"
        )
        assert warmed.stream_text().strip() == "True True True"
        # Nothing shows before the first run: no session listed, no todos.
        assert "No codelia session yet" in kernel.execute("%codelia todos").stream_text()
        run = kernel.execute("%%codelia\nwhat is 40 + 2?")  # the settings it was built with
        assert run.status == "ok", run.reply["content"]
        adopted = kernel.execute("print(nb.agent is ready)")
        assert adopted.stream_text().strip() == "True"


def _widget_comms(kernel: Any) -> list[dict[str, Any]]:
    return [
        m
        for m in kernel.iopub
        if m["msg_type"] == "comm_open" and m["content"].get("target_name") == "jupyter.widget"
    ]


SLOW_JOB = "import time\ntime.sleep(0.5)\nprint('slow')"


def test_headless_cells_open_no_widget_and_show_the_static_panel(start_kernel: Any) -> None:
    """nbclient / papermill / `jupyter execute`: nothing renders widgets there, and nbclient
    saves the state of every widget model opened, so a run opens none and shows static output
    (its final form replaces the first by display id, as nbclient applies it)."""
    script = [
        reply(text("Checking."), tool_use("python", {"code": "print(40 + 2)"})),
        reply(text("The answer is **42**.")),
        reply(tool_use("python", {"code": SLOW_JOB, "background": True})),
        reply(text("Started.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url, widgets=False)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia --approval-mode full-access\nwhat is 40 + 2?")
        assert run.status == "ok", run.reply["content"]
        kernel.drain()
        assert _widget_comms(kernel) == []
        shown = [d for d in kernel.displayed(run) if d.get("text/plain")]
        (panel,) = shown  # no Out line, no empty job box: the panel only
        assert "<p>The answer is <strong>42</strong>.</p>" in panel["text/html"]
        assert "<b>python</b>" in panel["text/html"] and "completed" in panel["text/html"]
        assert "application/vnd.jupyter.widget-view+json" not in panel
        # The cache browser and the job cards are static there too.
        cache = kernel.execute("%codelia cache")
        (table,) = kernel.displayed(cache)
        assert "codelia tool-output cache: 1 entry" in table["text/plain"]
        assert "python" in table["text/plain"] and "(this session)" in table["text/plain"]
        assert "text-align:left" in table["text/html"]
        jobs = kernel.execute("%%codelia --approval-mode full-access\nstart a slow job")
        assert jobs.status == "ok"
        kernel.execute("import time; time.sleep(2)")  # the job ends while a cell runs
        kernel.drain()
        panel_data, cards = [d for d in kernel.displayed(jobs) if d.get("text/plain")]
        assert "→ background job job-" in panel_data["text/html"]
        assert "completed" in cards["text/plain"] and "job-" in cards["text/plain"]
        assert _widget_comms(kernel) == []


def test_a_headless_background_run_ends_in_its_own_output(start_kernel: Any) -> None:
    with ScriptedAnthropicServer(_script()) as server:
        kernel = start_kernel(server.url, widgets=False)
        kernel.execute("%load_ext jupyter_codelia")
        started = kernel.execute("h = %codelia --background --approval-mode full-access 40 + 2?")
        awaited = kernel.execute("r = await h\nprint(r.status)")
        assert awaited.stream_text().strip() == "completed"
        kernel.drain()
        assert _widget_comms(kernel) == []
        # The final update was filed under the cell running then, so a client following one
        # cell at a time (nbclient) receives it and updates the first cell's output.
        (panel,) = [d for d in kernel.displayed(started) if d.get("text/plain")]
        assert "<strong>42</strong>" in panel["text/html"] and "completed" in panel["text/html"]
        finals = [
            m
            for m in kernel.iopub
            if m["msg_type"] == "update_display_data"
            and m["parent_header"].get("msg_id") == awaited.msg_id
        ]
        assert finals, "the final panel was not sent while the awaiting cell ran"


def test_a_live_panel_carries_its_static_form_in_the_same_display_data(
    start_kernel: Any,
) -> None:
    """Saved mid-run, exported, or reopened once its widgets are gone, the output still reads."""
    with ScriptedAnthropicServer(_script()) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("h = %codelia --background --approval-mode full-access 40 + 2?")
        kernel.execute("r = await h")
        (first, _job_cards) = [
            m
            for m in run.messages
            if m["msg_type"] in ("display_data", "update_display_data")
            and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
        ]
        data = first["content"]["data"]
        assert "codelia-static" in data["text/html"] and "40 + 2?" in data["text/html"]
        assert data["text/plain"].startswith("codelia run running")
        assert first["content"]["metadata"] == {"jupyter_codelia": {"fallback": True}}
        # The finished frame's final form is kept for the tabs to swap in.
        frame_id = data["application/vnd.jupyter.widget-view+json"]["model_id"]
        states = kernel.execute(
            "from jupyter_codelia.notebook.ui import _finals\n"
            f"print(_finals.output_states([{frame_id!r}, 'unknown-id']))"
        )
        known = json.loads(states.stream_text())
        assert list(known) == [frame_id]
        assert "<strong>42</strong>" in known[frame_id]["data"]["text/html"]


# Holds the warm-up's import of pygments' shell lexer until /tmp file "release" exists, so
# the first %%codelia surely starts while the warm-up is still going (as under Run All).
HOLD_WARM_UP = """
import importlib.abc, os, sys, time
class _Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pygments.lexers.shell":
            while not os.path.exists({release!r}):
                time.sleep(0.05)
            sys.meta_path.remove(self)
        return None
sys.meta_path.insert(0, _Hold())
"""


def test_the_first_run_paints_at_once_and_says_what_is_loading(
    start_kernel: Any, tmp_path: Path
) -> None:
    """Under Run All the first %%codelia used to show a blank output until the warm-up ended."""
    release = tmp_path / "release"
    with ScriptedAnthropicServer(_script()) as server:
        kernel = start_kernel(server.url)
        kernel.execute(HOLD_WARM_UP.format(release=str(release)))
        kernel.execute("%load_ext jupyter_codelia")

        def release_once_painted(k: Any) -> None:
            if any(m["msg_type"] == "display_data" for m in k.iopub[seen:]):
                release.write_text("go")

        seen = len(kernel.iopub)
        run = kernel.execute(
            "%%codelia --approval-mode full-access\nwhat is 40 + 2?", during=release_once_painted
        )
        assert run.status == "ok", run.reply["content"]
        first = next(m for m in run.messages if m["msg_type"] == "display_data")
        assert first["content"]["data"]["text/plain"].startswith("codelia: starting, loading ")
        assert "application/vnd.jupyter.widget-view+json" not in first["content"]["data"]
        # The live panel then took the place of that line, and the run went on as usual.
        display_id = first["content"]["transient"]["display_id"]
        updates = [
            m["content"]["data"]
            for m in run.messages
            if m["msg_type"] == "update_display_data"
            and m["content"]["transient"]["display_id"] == display_id
        ]
        assert any("application/vnd.jupyter.widget-view+json" in data for data in updates)
        assert "<strong>42</strong>" in updates[-1]["text/html"]
