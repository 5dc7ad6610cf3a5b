"""Run as a subprocess by test_large_output.py: stream 1 GB into a store, then read and grep it.

Prints one JSON object: the peak-RSS growth in bytes over the baseline taken after imports and
a warm-up, and the outputs of the reads so the test can check them.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

from jupyter_codelia.cache import ToolOutputCacheStore

TOTAL_BYTES = 1_000_000_000


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def main() -> None:
    root = Path(sys.argv[1])
    # Room for the whole stream: this checks streaming and search, not the per-entry limit.
    store = ToolOutputCacheStore(root, max_bytes=4 * TOTAL_BYTES, max_entry_bytes=2 * TOTAL_BYTES)
    store.save(tool_call_id="warmup", tool_name="t", content="warm\nup")
    store.grep("warmup", "up")
    line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ ......\n"
    block = line * (1_000_000 // len(line))
    baseline = _peak_rss()
    written = 0
    blocks = 0
    with store.writer(tool_call_id="big", tool_name="shell") as writer:
        while written < TOTAL_BYTES:
            writer.write(block)
            written += len(block)
            blocks += 1
            if blocks % 250 == 0:
                writer.write(f"MARKER {blocks}\n")
    lines_per_block = block.count("\n")
    results = {
        "entry": store.get_entry("big").model_dump(mode="json"),
        "grep": store.grep("big", "MARKER", max_matches=3),
        "regex_grep": store.grep("big", r"MARKER \d+000$", regex=True),
        "late_read": store.read("big", 250 * lines_per_block - 1, 2),
        "tail": store.read_tail("big", 2),
        "growth": _peak_rss() - baseline,
        "lines_per_block": lines_per_block,
        "blocks": blocks,
    }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
