"""The first ``%%codelia`` of a kernel under *Run All* (not a test): paint time and cold total.

In each of N fresh kernels: ``%load_ext jupyter_codelia`` and, with no pause, a ``%%codelia``
cell (a scripted turn: one python call, one answer), then the same cell again (warm). A client
that renders widgets sends the cells, as JupyterLab does.

Prints, as medians over the kernels:

- first paint: from the first cell's execute request to its first output (target <= 0.5 s);
- the first run's total against a warm run's (target <= 2x);
- where the difference goes: the cold import times of the biggest pieces the warm-up loads
  (each in a fresh interpreter, measured in the same run).

    .venv/bin/python bench/first_run.py [--kernels 5]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import tempfile
import time
from typing import Any

from _results import add_json_flag, emit, record  # bench/ is on sys.path when a bench runs
from jupyter_client.manager import KernelManager

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

CELL = "%%codelia --approval-mode full-access\nwhat is 40 + 2?"
# What an ipywidgets 8 front end opens on a kernel (codelia then draws live widgets).
ANNOUNCE = {"comm_id": "bench-control", "target_name": "jupyter.widget.control", "data": {}}
STEP_TIMES = (
    "import json, subprocess, sys\n"
    "code = 'import time;t=time.perf_counter();import {m};print(time.perf_counter()-t)'\n"
    "out = {m: float(subprocess.run([sys.executable, '-c', code.format(m=m)], "
    "capture_output=True, text=True).stdout) for m in "
    "('anthropic', 'ipywidgets', 'jupyter_codelia.agent', 'jupyter_codelia.standard_tools')}\n"
    "print(json.dumps(out))"
)


def _script(turns: int) -> list[Any]:
    one = [
        reply(text("Checking."), tool_use("python", {"code": "print(40 + 2)"})),
        reply(text("The answer is **42**.")),
    ]
    return one * turns


def _run(kc: Any, code: str) -> tuple[float, float | None, str]:
    """(seconds to idle, seconds to the first display, stdout) of one execute request."""
    started = time.perf_counter()
    msg_id = kc.execute(code, allow_stdin=False)
    first: float | None = None
    out: list[str] = []
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=120)
        except queue.Empty as exc:
            raise TimeoutError(code) from exc
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "display_data" and first is None:
            first = time.perf_counter() - started
        if kind == "stream":
            out.append(msg["content"]["text"])
        if kind == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            return time.perf_counter() - started, first, "".join(out)


def one_kernel(home: str) -> dict[str, float]:
    with ScriptedAnthropicServer(_script(2)) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            JUPYTER_CODELIA_HOME=home, ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=server.url
        )
        km = KernelManager(kernel_name="python3")
        km.start_kernel(env=env, cwd=home)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=120)
            kc.shell_channel.send(
                kc.session.msg("comm_open", ANNOUNCE, metadata={"version": "1.0.0"})
            )
            # Run All: the cells go out back to back, the first %%codelia right after load_ext.
            _run(kc, "import ipywidgets\n%load_ext jupyter_codelia")
            first, paint, _ = _run(kc, CELL)
            warm, warm_paint, _ = _run(kc, CELL)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return {
        "first": first,
        "paint": paint if paint is not None else first,
        "warm": warm,
        "warm_paint": warm_paint if warm_paint is not None else warm,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernels", type=int, default=5)
    add_json_flag(parser)
    args = parser.parse_args()
    rows = []
    for _ in range(args.kernels):
        with tempfile.TemporaryDirectory(prefix="codelia-first-run-") as home:
            rows.append(one_kernel(home))
    med = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
    print(f"first %%codelia under Run All, median of {args.kernels} fresh kernels:")
    print(
        f"  first paint {med['paint']:.2f} s (target <= 0.50 s; warm run {med['warm_paint']:.2f} s)"
    )
    print(f"  first run {med['first']:.2f} s, warm run {med['warm']:.2f} s")
    print(f"  ratio first / warm: {med['first'] / med['warm']:.2f}x (target <= 2.00x)")
    record("paint_s", med["paint"])
    record("ratio", med["first"] / med["warm"])
    with tempfile.TemporaryDirectory() as cwd:
        km = KernelManager(kernel_name="python3")
        km.start_kernel(cwd=cwd)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=120)
            _, _, out = _run(kc, STEP_TIMES)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    steps = json.loads(out)
    print(
        "  cold import times now (fresh interpreters): "
        + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in steps.items())
    )
    # The first run cannot start its request before the SDK is imported (GIL-bound, on the
    # warm-up thread or not): that import alone, against a warm run, bounds the ratio below.
    print(
        f"  floor: importing anthropic alone is {steps['anthropic'] / med['warm']:.1f}x a warm run"
    )
    record("floor", steps["anthropic"] / med["warm"])
    emit(args)


if __name__ == "__main__":
    main()
