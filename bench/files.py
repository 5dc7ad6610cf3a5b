"""Speed of the local file tools against the classic command-line tools, in the same run.

* apply_patch: a 1,000-hunk patch to a 100,000-line file (validation, atomic write and the diff
  with its cached full copy included) vs GNU ``patch`` applying the same change given as a
  unified diff. Target: ratio at most 1.5x, median, in wall and in CPU time.
* grep: the ``grep`` tool over a 20,000-file tree vs ``grep -rn`` with the same pattern (few
  matches, so both read every file). The tool opens the search root by descriptor and runs
  ripgrep confined to the sandbox by Landlock (see ``standard_tools/files/_confine.py``); that
  costs a thread and four system calls per call, nothing per file. Target: ratio at most 1x.
* write/edit diff: ``unified_diff`` of the 100,000-line file with 1,000 changes (difflib took
  35 s on this); printed in seconds for reference.
* read: the 50 lines at the end of a 1 GB file (``offset`` = its last lines) vs
  ``tail -n +N FILE | head -n 50``. Targets: ratio at most 2x, and the process's peak RSS grows
  by less than 50 MB (the file is streamed, never loaded). The file is written to a temp
  directory and deleted afterwards.

Each tool runs several times on fresh copies of the input, interleaved with its baseline; the
best-of and median ratios are printed (best-of is the least sensitive to a busy machine).

    python bench/files.py [--repeat 5]

Measured (2 cores shared with three other busy sessions, load average 2.5-4, ``--repeat 9``):

* read: 0.68x best-of, 0.61-0.68x median (ours 129-132 ms, tail | head 188-191 ms); peak RSS
  growth 9.6-9.8 MB, plus 11 MB for importing numpy. Before numpy counted the newlines
  (``bytes.count`` counts one byte with a scalar loop): 1.87-1.94x (ours 346-362 ms).
* apply_patch (load average 5-8, ``--repeat 9``): 1.52-1.75x best-of, 1.57-1.70x median wall
  clock (ours 23 ms best-of at load 5, GNU patch 15 ms; wall times triple at load 8), 1.75-1.94x
  median CPU time (ours 20-24 ms, GNU patch 10-13 ms). Before the re-check of the source read it
  in blocks: 1.76x best-of, 1.99x median wall, 2.23-2.31x CPU (the second whole copy of the file
  was a fresh allocation in the worker thread, ~1,800 page faults per call; now none). Left, per
  call (CPU): matching ~4 ms (``find`` and newline ``count`` over the file ~2.8 ms, the rest
  Python per chunk), parsing ~2.2 ms, assembling the pieces and hunks ~1.6 ms, joining each
  chunk's old lines ~1.3 ms, the write ~3 ms (2.3 ms of it the kernel copying 3.5 MB), the diff's
  cache copy ~3 ms (four file creations; 9 ms of wall on this disk), the young-generation
  garbage collector ~0.7 ms (a full collection, ~20 ms, about every 12 calls). Wall clock also
  pays the unlink of the replaced file (~3 ms: ext4 frees its blocks; GNU patch pays the same in
  its rename) and the hop to the worker thread that keeps the kernel's loop responsive.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _results import add_json_flag, emit, record  # bench/ is on sys.path when a bench runs

from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.standard_tools._sandbox import Sandbox
from jupyter_codelia.standard_tools.diff import unified_diff
from jupyter_codelia.standard_tools.files import file_tools
from jupyter_codelia.tools import FunctionTool, ToolContext

LINES = 100_000
HUNKS = 1_000
FILES = 20_000
# The tools run on one event loop, as in a kernel: a loop (and its worker thread for the file
# IO) made and torn down per call would be timed as part of every call.
LOOP = asyncio.new_event_loop()


def make_file_and_patches(root: Path) -> tuple[list[str], str, str]:
    """(original lines, codex patch text, the same change as a unified diff)."""
    lines = [f"value_{i} = compute({i}, {i * 7919 % 10007})" for i in range(LINES)]
    codex = ["*** Begin Patch", "*** Update File: big.py"]
    unified = ["--- big.py", "+++ big.py"]
    step = LINES // HUNKS
    for k in range(HUNKS):
        at = k * step + step // 2
        before, after = lines[at - 3 : at], lines[at + 1 : at + 4]
        codex.append("@@")
        codex += [" " + x for x in before]
        codex += ["-" + lines[at], f"+value_{at} = changed({k})"]
        codex += [" " + x for x in after]
        unified.append(f"@@ -{at - 2},7 +{at - 2},7 @@")
        unified += [" " + x for x in before]
        unified += ["-" + lines[at], f"+value_{at} = changed({k})"]
        unified += [" " + x for x in after]
    codex.append("*** End Patch")
    return lines, "\n".join(codex), "\n".join(unified) + "\n"


def median_time(fn: Callable[[], object], repeat: int) -> float:
    return statistics.median(timed(fn) for _ in range(repeat))


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def self_cpu() -> float:
    """CPU seconds (user + system) used by all threads of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    """CPU seconds (user + system) used by finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def report(
    label: str, ours: list[float], theirs: list[float], target: float, key: str = ""
) -> None:
    """Print best-of and median times and their ratios (best-of is the least noisy); the
    median ratio is recorded under ``key`` for the README's table."""
    best = min(ours) / min(theirs)
    median = statistics.median(ours) / statistics.median(theirs)
    if key:
        record(key, median)
    print(
        f"{label}: ours {min(ours) * 1000:.0f} ms (median {statistics.median(ours) * 1000:.0f}), "
        f"theirs {min(theirs) * 1000:.0f} ms (median {statistics.median(theirs) * 1000:.0f}); "
        f"ratio {best:.2f}x best-of, {median:.2f}x median (target <= {target:g}x)"
    )


def bench_patch(work: Path, repeat: int) -> None:
    lines, codex, unified = make_file_and_patches(work)
    original = "\n".join(lines) + "\n"
    (work / "big.diff").write_text(unified)
    target = work / "tree" / "big.py"
    target.parent.mkdir()
    store = ToolOutputCacheStore(work / "cache")
    tools: dict[str, FunctionTool] = {t.name: t for t in file_tools(Sandbox(target.parent), store)}
    args = json.dumps({"patch": codex})

    def ours() -> float:
        target.write_text(original)
        start, cpu = time.perf_counter(), time.process_time()
        result = LOOP.run_until_complete(tools["apply_patch"].execute_raw(args, ToolContext()))
        elapsed = time.perf_counter() - start
        ours_cpu.append(time.process_time() - cpu)  # all threads of this process
        value = result.value
        assert value["diff_truncated"], value
        if "diff_cache_error" in value:  # still timed: the tool succeeds without the cache
            print("warning:", value["diff_cache_error"])
        return elapsed

    def gnu() -> float:
        target.write_text(original)
        start, cpu = time.perf_counter(), children_cpu()
        subprocess.run(
            ["patch", "--silent", "--batch", str(target), str(work / "big.diff")], check=True
        )
        elapsed = time.perf_counter() - start
        gnu_cpu.append(children_cpu() - cpu)
        return elapsed

    ours_times: list[float] = []
    gnu_times: list[float] = []
    ours_cpu: list[float] = []
    gnu_cpu: list[float] = []
    for _ in range(repeat):  # interleaved, so both see the same machine load
        ours_times.append(ours())
        patched = target.read_text()
        gnu_times.append(gnu())
        assert target.read_text() == patched, "apply_patch and GNU patch disagree"
    report(
        f"apply_patch {HUNKS} hunks / {LINES} lines vs GNU patch",
        ours_times,
        gnu_times,
        1.5,
        "patch_wall",
    )
    report(
        "  the same in CPU time (less sensitive to a busy machine)",
        ours_cpu,
        gnu_cpu,
        1.5,
        "patch_cpu",
    )
    changed = patched
    diff_time = median_time(lambda: unified_diff("big.py", original, changed), repeat)
    print(f"unified_diff {LINES} lines / {HUNKS} changes: {diff_time * 1000:.0f} ms")


def make_tree(root: Path) -> None:
    body = "".join(f"line {i} of some ordinary source text with words\n" for i in range(40))
    for d in range(FILES // 100):
        directory = root / f"dir{d:03d}"
        directory.mkdir(parents=True)
        for f in range(100):
            text = body
            if (d * 100 + f) % 400 == 0:
                text += "needle_marker found here\n"
            (directory / f"file{f:03d}.txt").write_text(text)


def bench_grep(work: Path, repeat: int) -> None:
    tree = work / "files"
    make_tree(tree)
    tools = {t.name: t for t in file_tools(Sandbox(tree))}
    args = json.dumps({"pattern": "needle_marker", "max_matches": 1000})

    ours_cpu: list[float] = []
    gnu_cpu: list[float] = []

    def ours() -> float:
        start, cpu = time.perf_counter(), self_cpu() + children_cpu()
        result = LOOP.run_until_complete(tools["grep"].execute_raw(args, ToolContext()))
        elapsed = time.perf_counter() - start
        ours_cpu.append(self_cpu() + children_cpu() - cpu)  # this process and ripgrep
        assert "[50 matches in 50 files]" in result.text, result.text[-200:]
        return elapsed

    def gnu() -> float:
        start, cpu = time.perf_counter(), children_cpu()
        done = subprocess.run(
            ["grep", "-rn", "needle_marker", "."], cwd=tree, capture_output=True, check=True
        )
        elapsed = time.perf_counter() - start
        gnu_cpu.append(children_cpu() - cpu)
        assert done.stdout.count(b"\n") == 50
        return elapsed

    ours()  # warm the page cache for both
    gnu()
    ours_cpu.clear()
    gnu_cpu.clear()
    ours_times, gnu_times = [], []
    for _ in range(repeat):  # interleaved, so both see the same machine load
        ours_times.append(ours())
        gnu_times.append(gnu())
    report(f"grep tool over {FILES} files vs grep -rn", ours_times, gnu_times, 1, "grep_wall")
    report(
        "  the same in CPU time (the fair figure on a busy machine)",
        ours_cpu,
        gnu_cpu,
        1,
        "grep_cpu",
    )


BIG_FILE_BYTES = 1 << 30
ROW = "{n:012d} INFO worker-{w} handled GET /api/items in {ms:3d} ms for client 10.0.0.{c:3d}\n"
ROW_BYTES = len(ROW.format(n=0, w=0, ms=0, c=0))  # every row has this length
READ_WINDOW = 50


def make_big_file(path: Path) -> int:
    """Write ~1 GB of numbered log lines with a child process (so this process's peak RSS
    stays a clean baseline); returns the number of lines."""
    rows = BIG_FILE_BYTES // ROW_BYTES // 100_000 * 100_000  # whole chunks of the writer
    script = (
        "import sys\n"
        "with open(sys.argv[1], 'wb') as out:\n"
        "    for start in range(0, int(sys.argv[2]), 100_000):\n"
        "        out.write(''.join(sys.argv[3].format(n=n, w=n % 7, ms=n % 97, c=n % 251)"
        " for n in range(start, start + 100_000)).encode())\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path), str(rows), ROW], check=True)
    return rows


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_read(work: Path, repeat: int) -> None:
    big = work / "big.log"
    rows = make_big_file(big)
    offset = rows - READ_WINDOW  # the last 50 lines
    tools = {t.name: t for t in file_tools(Sandbox(work))}
    args = json.dumps({"file_path": "big.log", "offset": offset, "limit": READ_WINDOW})
    expected_first = f"{offset:012d} INFO"

    def ours() -> None:
        result = LOOP.run_until_complete(tools["read"].execute_raw(args, ToolContext()))
        assert f"{offset + 1:>5}  {expected_first}" in result.text, result.text[:200]

    def theirs() -> None:
        done = subprocess.run(
            f"tail -n +{offset + 1} {big} | head -n {READ_WINDOW}",
            shell=True,
            capture_output=True,
            check=True,
        )
        assert done.stdout.startswith(expected_first.encode()), done.stdout[:100]

    theirs()  # both read the file once from the page cache from here on
    rss_before = peak_rss_mb()
    import numpy  # noqa: F401 - the first read would import it (a kernel's warm-up does)

    numpy_growth = peak_rss_mb() - rss_before
    rss_before = peak_rss_mb()
    ours()
    rss_growth = peak_rss_mb() - rss_before
    ours_times, their_times = [], []
    for _ in range(repeat):  # interleaved, so both see the same machine load
        ours_times.append(timed(ours))
        their_times.append(timed(theirs))
    big.unlink()
    size_gb = BIG_FILE_BYTES / 1e9
    report(
        f"read of the last {READ_WINDOW} lines of a {size_gb:.1f} GB file vs tail | head",
        ours_times,
        their_times,
        2,
        "read_wall",
    )
    record("read_rss_mb", rss_growth)
    print(
        f"  peak RSS growth of the read: {rss_growth:.1f} MB (target < 50 MB), "
        f"and {numpy_growth:.1f} MB for importing numpy"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--only", choices=("read", "patch", "grep"), action="append", help="run only these"
    )
    add_json_flag(parser)
    options = parser.parse_args()
    only = set(options.only or ("read", "patch", "grep"))
    work = Path(tempfile.mkdtemp(prefix="bench-files-"))
    try:
        if "read" in only:  # first: the peak RSS must not include other benches
            bench_read(work, options.repeat)
        if "patch" in only:
            bench_patch(work, options.repeat)
        if "grep" in only:
            bench_grep(work, options.repeat)
        emit(options)
    finally:
        LOOP.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
