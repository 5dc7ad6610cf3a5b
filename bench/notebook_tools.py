"""Notebook tools benchmarks (not tests): prints ratios against baselines from the same run.

1. ``notebook_read`` outline of a 500-cell notebook in the kernel: validating the front end's
   snapshot and building the outline, against ``json.loads`` of the same snapshot (the least any
   reader pays). Targets: under 50 ms and under 2 KB of text.
2. A ``notebook_edit`` round trip kernel → JupyterLab → kernel (the edit request applied to the
   live model, answered through ``bridge.control`` on a subshell), against a plain comm echo
   (the front end sends the request straight back on the comm). Target: at most 3x. Runs real
   JupyterLab and Debian Chromium (the fixtures of tests/browser/conftest.py).

    .venv/bin/python bench/notebook_tools.py [--rounds 50] [--skip-browser]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from _browser import load_browser_fixtures  # bench/ is on sys.path when a bench runs

from jupyter_codelia.notebook.notebook_tools import cells as nbcells

REPO = Path(__file__).resolve().parents[1]
OUTLINE_TARGET_MS = 50.0
OUTLINE_TARGET_BYTES = 2048
EDIT_TARGET_RATIO = 3.0
CELLS = 500


def synthetic_snapshot(count: int = CELLS) -> tuple[str, nbcells.KernelHistory]:
    """A notebook JSON snapshot like the front end sends, and the kernel's matching history."""
    cells: list[dict[str, Any]] = []
    inputs = [""]
    for index in range(count):
        if index % 10 == 0:
            source = f"## Section {index // 10}\nSome notes about step {index}."
            cells.append({"id": f"m{index}", "cell_type": "markdown", "source": source})
            continue
        source = "\n".join(f"value_{index}_{line} = {line} * {index}" for line in range(8))
        ran = index % 7 != 0
        if ran:
            inputs.append(source if index % 13 else source + "  # changed since")
        cells.append(
            {
                "id": f"c{index}",
                "cell_type": "code",
                "source": source,
                "execution_count": len(inputs) - 1 if ran else None,
                "metadata": {"codelia": {"action": "insert"}} if index % 50 == 1 else {},
                "output_types": ["error"] if index % 97 == 0 else ["stream"],
            }
        )
    payload = {"path": "big.ipynb", "cells": cells, "active_cell_id": "c11", "dirty": False}
    return json.dumps(payload), nbcells.KernelHistory(inputs=inputs, outputs={})


def bench_outline(rounds: int) -> bool:
    raw, history = synthetic_snapshot()
    baseline: list[float] = []
    measured: list[float] = []
    text = ""
    for _ in range(rounds):
        start = time.perf_counter()
        json.loads(raw)
        baseline.append(time.perf_counter() - start)
        start = time.perf_counter()
        snapshot = nbcells.NotebookSnapshot.model_validate({**json.loads(raw), "source": "live"})
        text = nbcells.outline(snapshot, history)
        measured.append(time.perf_counter() - start)
    base_ms = statistics.median(baseline) * 1000
    ms = statistics.median(measured) * 1000
    size = len(text.encode())
    ok = ms < OUTLINE_TARGET_MS and size < OUTLINE_TARGET_BYTES
    print(f"outline of {CELLS} cells ({len(raw) // 1024} KB snapshot): {ms:.1f} ms (median)")
    print(f"baseline json.loads of the snapshot: {base_ms:.1f} ms; ratio {ms / base_ms:.1f}x")
    print(
        f"outline size {size} bytes; targets < {OUTLINE_TARGET_MS:g} ms and "
        f"< {OUTLINE_TARGET_BYTES} bytes: {'OK' if ok else 'OVER'}"
    )
    return ok


# Runs in the kernel as a background task, so the shell is idle and the comm echo is delivered.
KERNEL_BENCH = """
%load_ext jupyter_codelia
import asyncio, json, time
from jupyter_codelia.notebook.extension import kernel_extension

async def _codelia_bench(rounds, out):
    client = kernel_extension(get_ipython()).frontend
    def timed(action, params):
        start = time.perf_counter()
        client.call(action, params)
        return time.perf_counter() - start
    cell = (await asyncio.to_thread(client.call, "snapshot", {}))["cells"][0]
    source, echo, edit = cell["source"], [], []
    provenance = {"run_id": "bench", "action": "replace", "model": "bench"}
    for i in range(rounds):
        echo.append(await asyncio.to_thread(timed, "ping", {"via": "comm"}))
        new = f"x = {i}"
        params = {"op": "replace", "cell_id": cell["id"], "expected_source": source,
                  "source": new, "provenance": provenance}
        edit.append(await asyncio.to_thread(timed, "edit", params))
        source = new
    with open(out, "w") as handle:
        json.dump({"echo": echo, "edit": edit}, handle)

_codelia_bench_task = asyncio.ensure_future(_codelia_bench(ROUNDS, OUT))
"""


def bench_edit_round_trip(rounds: int) -> bool:
    fixtures = load_browser_fixtures()
    with fixtures.launch_lab() as lab, fixtures.launch_browser() as browser:
        out = lab.root / "bench-result.json"
        code = KERNEL_BENCH.replace("ROUNDS", str(rounds)).replace("OUT", repr(str(out)))
        fixtures.write_notebook(lab.root, "bench.ipynb", ["x = 0", code])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        fixtures.open_lab(page, lab, "bench.ipynb")
        page.wait_for_function(fixtures.WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
        page.evaluate(
            """async () => {
              const panel = NOTEBOOK_JS;
              panel.content.activeCellIndex = 1;
              await window.jupyterapp.commands.execute('notebook:run-cell');
            }""".replace("NOTEBOOK_JS", fixtures.NOTEBOOK_JS)
        )
        deadline = time.monotonic() + 300
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        result = json.loads(out.read_text())
    # The first rounds warm up (subshell creation, imports): drop them.
    echo = statistics.median(result["echo"][5:]) * 1000
    edit = statistics.median(result["edit"][5:]) * 1000
    ratio = edit / echo
    ok = ratio <= EDIT_TARGET_RATIO
    print(f"plain comm echo kernel -> JupyterLab -> kernel: {echo:.1f} ms (median)")
    print(f"notebook edit round trip (applied to the live model): {edit:.1f} ms (median)")
    verdict = "OK" if ok else "OVER"
    print(f"ratio edit/echo: {ratio:.2f}x (target <= {EDIT_TARGET_RATIO:g}x) {verdict}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="measurements (median)")
    parser.add_argument("--skip-browser", action="store_true", help="only the outline bench")
    args = parser.parse_args()
    ok = bench_outline(args.rounds)
    if not args.skip_browser:
        ok = bench_edit_round_trip(args.rounds) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
