"""A working day in one kernel: 150 ``%%codelia`` runs headless, and what they leave behind.

Each run is a small exchange with a scripted model (one short ``python`` call, then an answer),
executed cell by cell with nbclient as a front end would. It prints, from the same run:

* kernel RSS after the first run (imports paid), after run 60 and after run 150, and the growth
  per run from the first run's end over 60 and over 150 runs (target: at most 0.25 MB a run);
* the same for a bare ``Agent`` (a session store, the standard tools and a plain ``python``
  tool) driven by code in a plain kernel, and the ratio: what the notebook layer adds;
* live ipywidgets in the kernel after the last run (target: at most 10);
* the saved notebook's size, with the widget state a front end saves (the models still open)
  and with every model ever opened (nbclient's own store), target: at most 1 MB;
* time per run around run 10 and around run 150 (medians of ten runs) and their ratio (target:
  at most 1.3x);
* the first run after ``%load_ext`` (with a 3 s pause, as a person typing) against a warm run
  (target: at most 1.5x);
* the agent's history (messages and JSON size) after runs 60 and 150.

RSS is the kernel's own (psutil in the kernel): the scripted model server runs in this process
and keeps no requests.

    python bench/long_session.py [--runs 150]
    python bench/long_session.py --first-run [--repeat 5]   # only first vs warm, ~10 s a kernel

To measure another checkout, put it first on PYTHONPATH (the kernel inherits it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from jupyter_codelia.testing import RecordedRequest, ScriptedAnthropicServer, reply, text, tool_use

MB = 1024 * 1024
RSS_PER_RUN_TARGET_MB = 0.25
NOTEBOOK_AGENT = (
    "from jupyter_codelia.notebook import notebook_agent as _notebook_agent\n"
    "_agent = _notebook_agent(get_ipython()).agent\n"
    "del _notebook_agent\n"
)
BARE_AGENT = "_agent = globals().get('_bare')\n"


def probe(find_agent: str) -> str:
    """A cell printing the kernel's RSS, its live widgets and the agent's history as JSON."""
    return (
        "import gc as _gc, json as _json, psutil as _ps, ipywidgets as _w\n"
        "_gc.collect()\n"
        + find_agent
        + "_hist = list(_agent.history) if _agent is not None else []\n"
        "print(_json.dumps({'rss': _ps.Process().memory_info().rss,\n"
        "    'widgets': len(_w.widgets.widget._instances), 'history': len(_hist),\n"
        "    'history_bytes': sum(len(m.model_dump_json()) for m in _hist)}))\n"
        "del _hist, _agent"
    )


PROBE = probe(NOTEBOOK_AGENT)

BARE_SETUP = """\
import contextlib, io, os
from jupyter_codelia.agent import Agent
from jupyter_codelia.llm.anthropic.chat import AnthropicChat
from jupyter_codelia.session import SessionStore, default_home
from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.tools import tool

@tool
def python(code: str) -> str:
    \"\"\"Run Python code in the kernel's namespace; returns what it printed.\"\"\"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, globals())
    return printed.getvalue()

_bare = Agent(
    AnthropicChat(),
    standard_tools(os.getcwd(), approval_mode="full-access", extra=[python]),
    session_store=SessionStore(default_home()),
)
"""
"""The baseline: the agent layer alone, driven by code in a plain kernel (no magics, no panel),
with a ``python`` tool so the history is the same as the notebook's."""


CPU_CLOCK = (
    "import time\n"
    "_cpu = []\n"
    "def _cpu_pre(*_):\n"
    "    _cpu.append(-time.process_time())\n"
    "def _cpu_post(*_):\n"
    "    if _cpu and _cpu[-1] < 0:  # not the cell that registers the clock\n"
    "        _cpu[-1] += time.process_time()\n"
    "get_ipython().events.register('pre_run_cell', _cpu_pre)\n"
    "get_ipython().events.register('post_run_cell', _cpu_post)\n"
)
"""Kernel CPU seconds per cell: on a shared machine, wall time also measures the neighbours."""


def answer(request: RecordedRequest) -> Any:
    """Call python once per prompt, then answer; the prompt number comes back in the answer."""
    last = request.messages[-1] if request.messages else {}
    content = last.get("content")
    if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
        return reply(text("Done: the value is **2**."))
    return reply(text("Let me check."), tool_use("python", {"code": "x = 1 + 1\nprint(x)"}))


class FrontEndClient(NotebookClient):
    """nbclient that also forgets closed widget models, as JupyterLab's widget manager does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.closed_state: dict[str, Any] = {}

    def handle_comm_msg(self, outs: list[Any], msg: dict[str, Any], cell_index: int) -> None:
        super().handle_comm_msg(outs, msg, cell_index)
        if msg["msg_type"] == "comm_close":
            comm_id = msg["content"]["comm_id"]
            state = self.widget_state.pop(comm_id, None)
            self.widget_buffers.pop(comm_id, None)
            if state is not None:
                self.closed_state[comm_id] = state


def run_seconds(cell: Any) -> float:
    timing = cell.metadata["execution"]
    start = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


def probe_of(cell: Any) -> dict[str, int]:
    out = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    return dict(json.loads(out.strip().splitlines()[-1]))


@dataclass
class Session:
    """What one kernel's runs left: probes by run number, wall and CPU seconds per run, sizes."""

    probes: dict[int, dict[str, int]]
    times: list[float]
    cpu: list[float]
    live_bytes: int
    every_bytes: int


def kernel_env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        JUPYTER_CODELIA_HOME=str(home),
        ANTHROPIC_API_KEY="bench-key",
        ANTHROPIC_BASE_URL=url,
        MPLBACKEND="Agg",
        JUPYTER_CODELIA_APPROVAL_MODE="full-access",  # configured once, as people do
    )
    return env


def run_session(runs: int) -> Session:
    """``runs`` ``%%codelia`` runs in a fresh kernel after ``%load_ext`` and a 3 s pause."""
    checkpoints = {1, 60, runs}
    with (
        tempfile.TemporaryDirectory(prefix="codelia-long-") as tmp,
        ScriptedAnthropicServer(answer, keep_requests=False) as server,
    ):
        home = Path(tmp) / "home"
        home.mkdir()
        env = kernel_env(home, server.url)
        cells = [nbformat.v4.new_code_cell(PROBE)]  # a fresh kernel
        cells.append(nbformat.v4.new_code_cell("%load_ext jupyter_codelia"))
        cells.append(nbformat.v4.new_code_cell(CPU_CLOCK + "time.sleep(3)  # a person typing"))
        run_cells: list[int] = []
        probe_cells: dict[int, int] = {0: 0}
        for i in range(1, runs + 1):
            run_cells.append(len(cells))
            prompt = f"%%codelia\nrun {i}: compute 1 + 1"
            cells.append(nbformat.v4.new_code_cell(prompt))
            if i in checkpoints:
                probe_cells[i] = len(cells)
                cells.append(nbformat.v4.new_code_cell(PROBE))
        cpu_cell = len(cells)
        cells.append(nbformat.v4.new_code_cell("print(_json.dumps(_cpu))"))
        nb = nbformat.v4.new_notebook(cells=cells)
        client = FrontEndClient(nb, timeout=120, kernel_name="python3", record_timing=True)
        client.execute(env=env, cwd=tmp)
        saved = Path(tmp) / "long.ipynb"
        nbformat.write(nb, saved)
        live_bytes = saved.stat().st_size
        client.widget_state.update(client.closed_state)
        client.set_widgets_metadata()
        nbformat.write(nb, saved)
        every_bytes = saved.stat().st_size

    probes = {i: probe_of(nb.cells[index]) for i, index in probe_cells.items()}
    times = [run_seconds(nb.cells[index]) for index in run_cells]
    cpu_out = "".join(o.get("text", "") for o in nb.cells[cpu_cell].outputs)
    per_cell = json.loads(cpu_out.strip().splitlines()[-1])
    # The clock starts with the cell after the one that registers it: cell i is entry i - 3.
    cpu = [per_cell[index - 3] for index in run_cells]
    return Session(probes, times, cpu, live_bytes, every_bytes)


def run_bare(runs: int) -> dict[int, dict[str, int]]:
    """The same runs on a bare ``Agent`` in a plain kernel: probes by run number."""
    bare_probe = probe(BARE_AGENT)
    with (
        tempfile.TemporaryDirectory(prefix="codelia-bare-") as tmp,
        ScriptedAnthropicServer(answer, keep_requests=False) as server,
    ):
        home = Path(tmp) / "home"
        home.mkdir()
        cells = [nbformat.v4.new_code_cell(BARE_SETUP)]
        probe_cells: dict[int, int] = {}
        for i in range(1, runs + 1):
            cells.append(nbformat.v4.new_code_cell(f"await _bare.run('run {i}: compute 1 + 1')"))
            if i in {1, 60, runs}:
                probe_cells[i] = len(cells)
                cells.append(nbformat.v4.new_code_cell(bare_probe))
        nb = nbformat.v4.new_notebook(cells=cells)
        NotebookClient(nb, timeout=120, kernel_name="python3").execute(
            env=kernel_env(home, server.url), cwd=tmp
        )
    return {i: probe_of(nb.cells[index]) for i, index in probe_cells.items()}


def growth_per_run(probes: dict[int, dict[str, int]], upto: int) -> float:
    """MB of kernel RSS per run from the first run's end to run ``upto``."""
    return (probes[upto]["rss"] - probes[1]["rss"]) / MB / max(upto - 1, 1)


def first_run_only(repeat: int) -> None:
    """The first run against the warm ones (runs 6-15), in ``repeat`` fresh kernels."""
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        session = run_session(15)
        wall.append(session.times[0] / statistics.median(session.times[5:15]))
        cpu.append(session.cpu[0] / statistics.median(session.cpu[5:15]))
        print(f"first run {session.times[0] * 1000:.0f} ms, ratio first / warm: ", end="")
        print(f"wall {wall[-1]:.2f}x, CPU {cpu[-1]:.2f}x")
    print(f"median of {repeat}: wall {statistics.median(wall):.2f}x, ", end="")
    print(f"CPU {statistics.median(cpu):.2f}x (target <= 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument(
        "--first-run",
        action="store_true",
        help="only the first run against warm ones: 15 runs in a fresh kernel, --repeat times",
    )
    parser.add_argument("--repeat", type=int, default=1, help="kernels, with --first-run")
    args = parser.parse_args()
    if args.first_run:
        first_run_only(args.repeat)
        return
    runs = args.runs
    session = run_session(runs)
    probes, times, cpu = session.probes, session.times, session.cpu
    live_bytes, every_bytes = session.live_bytes, session.every_bytes
    early = statistics.median(times[5:15])
    late = statistics.median(times[-10:])
    first = times[0]
    rss = {i: p["rss"] / MB for i, p in probes.items()}
    print(f"{runs} runs (one python call each, scripted model, nbclient headless)")
    print(f"kernel RSS: fresh {rss[0]:.0f} MB, after run 1 {rss[1]:.0f} MB, ", end="")
    print(f"after run 60 {rss.get(60, float('nan')):.0f} MB, after run {runs} {rss[runs]:.0f} MB")
    bare = run_bare(runs)
    spans = sorted({min(60, runs), runs})
    for upto in spans:
        mine, theirs = growth_per_run(probes, upto), growth_per_run(bare, upto)
        print(f"RSS growth per run, runs 1..{upto}: {mine:.3f} MB/run ", end="")
        print(f"(target <= {RSS_PER_RUN_TARGET_MB} MB/run); ", end="")
        print(f"bare Agent {theirs:.3f} MB/run; ", end="")
        print(f"ratio {mine / theirs:.2f}x" if theirs > 0 else "ratio n/a (bare did not grow)")
    print(f"bare Agent kernel RSS: after run 1 {bare[1]['rss'] / MB:.0f} MB, ", end="")
    print(f"after run {runs} {bare[runs]['rss'] / MB:.0f} MB")
    print(f"live ipywidgets after run {runs}: {probes[runs]['widgets']} (target <= 10)")
    print(f"saved notebook, front-end widget state (open models): {live_bytes / MB:.2f} MB")
    print(f"saved notebook, every model ever opened (nbclient store): {every_bytes / MB:.2f} MB")
    print("  target <= 1 MB")
    print(f"time per run: runs 6-15 median {early * 1000:.0f} ms, ", end="")
    print(f"last 10 median {late * 1000:.0f} ms")
    print(f"ratio late / early: {late / early:.2f}x (target <= 1.3x)")
    print(f"first run after %load_ext + 3 s pause: {first * 1000:.0f} ms")
    print(f"ratio first / warm: {first / early:.2f}x (target <= 1.5x)")
    cpu_early, cpu_late = statistics.median(cpu[5:15]), statistics.median(cpu[-10:])
    print(f"kernel CPU per run: runs 6-15 median {cpu_early * 1000:.0f} ms, ", end="")
    print(f"last 10 median {cpu_late * 1000:.0f} ms, ratio {cpu_late / cpu_early:.2f}x; ", end="")
    print(f"first run {cpu[0] * 1000:.0f} ms, ratio {cpu[0] / cpu_early:.2f}x")
    for i in sorted(probes):
        if i:
            p = probes[i]
            print(f"agent history after run {i}: {p['history']} messages, ", end="")
            print(f"{p['history_bytes'] / 1024:.0f} KiB as JSON")


if __name__ == "__main__":
    main()
