"""Headless notebooks stay small (not a test): a notebook of N small ``%%codelia`` runs executed
by nbclient (as papermill and ``jupyter execute`` do) and saved, size against the target.

nbclient stores the state of every widget model a kernel opens; a run there shows static output
and opens no widget, so the file grows with what the runs say, not with their widgets.

Prints the saved size for N runs, the target (0.5 MB for 150 runs) and their ratio, the bytes
per run, and a live-widget baseline measured in the same run: the same notebook executed by a
client that announces a widget front end (so codelia draws live widgets and nbclient saves them).

    .venv/bin/python bench/headless_notebook.py [--runs 150] [--baseline-runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

TARGET_BYTES = 500_000
TARGET_RUNS = 150

# What a Jupyter front end with ipywidgets 8 opens: codelia then draws live widgets.
ANNOUNCE_WIDGETS = (
    "import ipywidgets, comm\n"
    "from ipywidgets.widgets.widget import Widget\n"
    "_control = comm.create_comm(target_name='jupyter.widget.control', primary=False)\n"
    "_control.target_name = 'jupyter.widget.control'\n"
    "comm.get_comm_manager().register_comm(_control)"
)


def _script(runs: int) -> list[Any]:
    turns: list[Any] = []
    for index in range(runs):
        turns.append(reply(text(f"Run {index}:"), tool_use("python", {"code": f"x = {index}"})))
        turns.append(reply(text(f"x is now **{index}**.")))
    return turns


def _notebook(runs: int, live_widgets: bool) -> Any:
    cells = ["%load_ext jupyter_codelia"]
    if live_widgets:
        cells.append(ANNOUNCE_WIDGETS)
    cells += [f"%%codelia --approval-mode full-access\nset x to {i}" for i in range(runs)]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def measure(runs: int, *, live_widgets: bool) -> tuple[int, float, int]:
    """(saved bytes, seconds, widget models saved) for ``runs`` small runs."""
    with ScriptedAnthropicServer(_script(runs)) as server, tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            JUPYTER_CODELIA_HOME=str(Path(tmp) / "home"),
            ANTHROPIC_BASE_URL=server.url,
            ANTHROPIC_API_KEY="bench-key",
            MPLBACKEND="Agg",
        )
        nb = _notebook(runs, live_widgets)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True)
        started = time.perf_counter()
        client.execute(env=env, cwd=tmp)
        seconds = time.perf_counter() - started
        errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
        if errors:
            raise RuntimeError(json.dumps(errors[0], default=str)[:2000])
        path = Path(tmp) / "runs.ipynb"
        nbformat.write(nb, path)
        state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
        return path.stat().st_size, seconds, len(state.get("state", {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=TARGET_RUNS)
    parser.add_argument("--baseline-runs", type=int, default=30)
    args = parser.parse_args()

    size, seconds, models = measure(args.runs, live_widgets=False)
    target = TARGET_BYTES * args.runs / TARGET_RUNS
    print(f"headless (nbclient), {args.runs} runs: {size / 1e6:.3f} MB saved in {seconds:.0f} s")
    print(f"  {size / args.runs / 1000:.1f} KB per run, {models} widget models saved")
    print(f"  target {target / 1e6:.3f} MB: ratio {size / target:.2f}x (<= 1.00x passes)")
    if args.baseline_runs:
        live, live_seconds, live_models = measure(args.baseline_runs, live_widgets=True)
        per_run = live / args.baseline_runs
        print(
            f"baseline, live widgets saved by nbclient, {args.baseline_runs} runs: "
            f"{live / 1e6:.3f} MB in {live_seconds:.0f} s, {live_models} widget models"
        )
        print(
            f"  {per_run / 1000:.1f} KB per run: the headless file is "
            f"{per_run / (size / args.runs):.0f}x smaller per run"
        )


if __name__ == "__main__":
    main()
