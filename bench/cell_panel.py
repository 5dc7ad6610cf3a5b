"""Cell-panel append cost: one event on a 10,000-event run vs on a 100-event one.

The in-cell panel (``RunPanel``, ipywidgets) draws a run as it streams. Appending a tool card must
not get slower as the run grows: each ipywidgets ``children`` change sends and validates the whole
children list, so a flat list would make every append cost O(events). The panel appends into
bounded blocks instead. This fills a panel with N events (alternating tool calls and results,
as a long agent run makes) and times appending more; the 100-event panel is the baseline measured
in the same run, the target a ratio of at most 1.5.

Widgets are built outside a kernel (ipywidgets then uses a no-op comm), so the figure is the
Python side of an update: trait validation, state diff and message building.

Measured (2 shared cores, load average 2.3-2.5 from other jobs; one run each): 685 µs at 100 vs
694 µs at 10,000: 1.01x; 707 vs 684: 0.97x; 877 vs 854: 0.97x; 691 vs 700: 1.01x.

    .venv/bin/python bench/cell_panel.py [--rounds 5] [--appends 400]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from jupyter_codelia.agent import events as ev
from jupyter_codelia.notebook.ui.panel import RunPanel

TARGET_RATIO = 1.5
SIZES = (100, 10_000)


class _Feeder:
    """Tool-call / tool-result event pairs, as a long run sends them."""

    def __init__(self, panel: RunPanel) -> None:
        self.panel = panel
        self.count = 0

    def one(self) -> None:
        call = self.count // 2
        if self.count % 2 == 0:
            event: object = ev.ToolCallEvent(
                tool="read", args={"file_path": f"f{call}.py"}, tool_call_id=f"c{call}"
            )
        else:
            event = ev.ToolResultEvent(
                tool="read", result=f"    1  x = {call}", tool_call_id=f"c{call}"
            )
        self.panel.handle(event)
        self.count += 1


def measure(size: int, appends: int) -> float:
    """Seconds per appended event on a panel that already holds ``size`` events."""
    panel = RunPanel(model="claude-sonnet-5-5", session_id="bench", mode="background")
    feeder = _Feeder(panel)
    while feeder.count < size:
        feeder.one()
    gc.collect()
    start = time.perf_counter()
    for _ in range(appends):
        feeder.one()
    elapsed = time.perf_counter() - start
    panel.widget.close_all()
    return elapsed / appends


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--appends", type=int, default=400)
    args = parser.parse_args()
    results: dict[int, list[float]] = {size: [] for size in SIZES}
    for _ in range(args.rounds):
        for size in SIZES:  # interleaved, so machine noise hits both sizes alike
            results[size].append(measure(size, args.appends))
    small, large = (statistics.median(results[size]) for size in SIZES)
    ratio = large / small
    print(f"append one event, run of {SIZES[0]:>6,} events: {small * 1e6:8.1f} µs (median)")
    print(f"append one event, run of {SIZES[1]:>6,} events: {large * 1e6:8.1f} µs (median)")
    verdict = "OK" if ratio <= TARGET_RATIO else "OVER TARGET"
    print(f"ratio {SIZES[1]}/{SIZES[0]}: {ratio:.2f}x (target <= {TARGET_RATIO}x) {verdict}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
