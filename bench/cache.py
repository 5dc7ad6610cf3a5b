"""Tool-output cache speed and memory, as ratios against baselines measured in the same run.

* grep: ``store.grep`` over a 200 MB, 2-million-line cached output vs GNU ``grep -n`` on the
  same file (target: at most 1x). The Python fallback (no ripgrep) is shown for reference.
* line reads: 50 lines at line 1,900,000 vs 50 lines at line 10 (target: at most 2x).
* memory: peak RSS growth of a fresh process that streams a 1 GB output into the store, then
  greps and reads it (target: under 100 MB above its baseline).

    python bench/cache.py [--skip-memory]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_codelia.cache import ToolOutputCacheStore

LINES = 2_000_000
LINE = (  # 100 bytes: 2 million lines make a 200 MB output
    "{:07d} INFO worker-3 processed batch status=ok latency_ms=42 bytes=8192 trace=abcdef0123 "
    "span=9876\n"
)


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def median_of(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def build(store: ToolOutputCacheStore) -> Path:
    with store.writer(tool_call_id="bench", tool_name="shell") as writer:
        batch: list[str] = []
        for i in range(LINES):
            line = LINE.format(i)
            if i % 400_000 == 123:
                line = f"{i:07d} ERROR worker-3 failed: disk quota exceeded\n"
            batch.append(line)
            if len(batch) == 10_000:
                writer.write("".join(batch))
                batch.clear()
        writer.write("".join(batch))
    with store.open_entry("bench") as entry:
        print(
            f"cached output: {entry.meta.size_bytes / 1e6:.0f} MB, {entry.meta.line_count:,} lines"
        )
        return entry.text_path


def bench_grep(store: ToolOutputCacheStore, root: Path, path: Path) -> None:
    grep = shutil.which("grep")
    if grep is None:
        print("grep: GNU grep not found; skipped")
        return
    pattern = "disk quota exceeded"

    def gnu() -> None:
        # Capture the output: with stdout on /dev/null GNU grep stops at the first match.
        subprocess.run([grep, "-n", "-F", pattern, str(path)], capture_output=True, check=True)

    baseline = best_of(3, gnu)
    ours = best_of(3, lambda: store.grep("bench", pattern))
    regex = best_of(3, lambda: store.grep("bench", r"ERROR \S+ failed", regex=True))
    python = ToolOutputCacheStore(root, use_ripgrep=False)
    fallback = best_of(1, lambda: python.grep("bench", pattern))
    print(f"grep -n (GNU, baseline):      {baseline * 1000:8.1f} ms")
    print(f"store.grep literal (rg):      {ours * 1000:8.1f} ms  ratio {ours / baseline:.2f}x"
          "  (target <= 1x)")  # fmt: skip
    print(f"store.grep regex (rg):        {regex * 1000:8.1f} ms  ratio {regex / baseline:.2f}x")
    print(f"store.grep Python fallback:   {fallback * 1000:8.1f} ms  ratio "
          f"{fallback / baseline:.2f}x  (only without ripgrep)")  # fmt: skip


def bench_reads(store: ToolOutputCacheStore) -> None:
    store.read("bench", 9, 50)
    near = median_of(51, lambda: store.read("bench", 9, 50))
    far = median_of(51, lambda: store.read("bench", 1_899_999, 50))
    print(f"read 50 lines at line 10:     {near * 1e6:8.0f} us")
    print(f"read 50 lines at 1,900,000:   {far * 1e6:8.0f} us  ratio {far / near:.2f}x"
          "  (target <= 2x)")  # fmt: skip
    line = median_of(51, lambda: store.read_line("bench", 1_900_000, 40, 30))
    print(f"read_line at line 1,900,000:  {line * 1e6:8.0f} us")


_MEMORY_CHILD = """
import resource, sys
from pathlib import Path
from jupyter_codelia.cache import ToolOutputCacheStore
store = ToolOutputCacheStore(Path(sys.argv[1]), max_bytes=3_000_000_000)
store.save(tool_call_id="warm", tool_name="t", content="warm\\nup")
store.grep("warm", "up")
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
base = peak()
block = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ\\n" * 15_000
written = 0
with store.writer(tool_call_id="big", tool_name="shell") as writer:
    while written < 1_000_000_000:
        writer.write(block)
        written += len(block)
    writer.write("NEEDLE\\n")
store.grep("big", "NEEDLE")
store.read("big", 15_000_000, 50)
print(peak() - base)
"""


def bench_memory() -> None:
    with tempfile.TemporaryDirectory(prefix="cache-bench-mem-") as tmp:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, tmp],
            capture_output=True,
            text=True,
            check=True,
        )
        took = time.perf_counter() - start
    growth = int(done.stdout.strip())
    print(f"1 GB streamed + grep + read:  peak RSS growth {growth / 1e6:.1f} MB"
          f" (target < 100 MB), {took:.1f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-memory", action="store_true", help="skip the 1 GB memory run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cache-bench-") as tmp:
        root = Path(tmp)
        store = ToolOutputCacheStore(root)
        path = build(store)
        bench_grep(store, root, path)
        bench_reads(store)
    if not args.skip_memory:
        bench_memory()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(f"(this process peak RSS: {peak_mb:.0f} MB)")


if __name__ == "__main__":
    main()
