"""A finished run leaves static output and no live widgets, panel or event list in the kernel."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

REPO = Path(__file__).resolve().parents[2]
LEFTOVERS = (
    "import gc, ipywidgets\n"
    "from jupyter_codelia.notebook.panel import RunPanel\n"
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
        # The panel's display (the job-cards box below it has one too).
        display_id = shown[0]["content"]["transient"]["display_id"]
        (update,) = [
            m
            for m in run.messages
            if m["msg_type"] == "update_display_data" and "text/html" in m["content"]["data"]
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
        if m["msg_type"] == "update_display_data" and "text/html" in m["content"]["data"]
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
    "nb = get_ipython()._codelia_notebook_agent\n"
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
            "nb = get_ipython()._codelia_notebook_agent\n"
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
