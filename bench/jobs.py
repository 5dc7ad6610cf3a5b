"""Cost of background jobs' output: many small prints, and one endless line.

python job prints: N small ``print`` calls (80,000 and 160,000) in a background python job
(``start_python_job``: the thread's routed stdout, the capture, the job's buffered and masked
output), against the same code printing into an ``io.StringIO`` on a thread (baseline, same
run). Both are measured in CPU time of this process (``time.process_time``: the bench runs
nothing else, and a busy machine moves wall times by 2x). Targets: the job at most 3x the
StringIO, and linear: twice the prints take at most 2.5x the time (it was 84x and 144x, with
160,000 prints taking 9x as long as 80,000).

shell job, one endless line: a shell job prints M MB (default 1024) with no newline through
its guard. The bench samples this process's RSS and the job's visible end while the job runs,
then checks the whole output in the output cache. Targets: RSS at most 50 MB over the
baseline taken before the job, the visible end moving while the job prints (not only at its
end), the cache entry within the cache's per-entry cap and ending with the job's last
characters. The time against ``cat``-ing the same bytes to /dev/null is printed for reference.

    python bench/jobs.py [--prints 80000] [--mb 1024]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil

from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.notebook.kernel_tools.python_jobs import start_python_job
from jupyter_codelia.standard_tools.jobs import JobRegistry, start_shell_job

PRINTS = "for i in range({count}):\n    print('step', i)\n"
ROUNDS = 5


def _string_io(count: int) -> float:
    """The same code compiled and run on a new thread, printing into a StringIO."""

    def run() -> None:
        code = compile(PRINTS.format(count=count), "<bench>", "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, {})

    started = time.process_time()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return time.process_time() - started


def _python_job(count: int) -> float:
    registry = JobRegistry()
    started = time.process_time()
    job = start_python_job(registry, PRINTS.format(count=count), {}, None, repr)
    job.done.wait()
    took = time.process_time() - started
    text = job.output.text
    assert job.state == "completed", job.summary
    assert text.endswith(f"step {count - 1}\n"), text[-80:]
    return took


def bench_prints(count: int) -> None:
    print(f"python job, small prints (best of {ROUNDS}, the two interleaved):")
    times: dict[int, float] = {}
    for n in (count, 2 * count):
        samples = [(_string_io(n), _python_job(n)) for _ in range(ROUNDS)]
        baseline = min(sample[0] for sample in samples)
        job = min(sample[1] for sample in samples)
        times[n] = job
        print(
            f"  {n:>7,} prints: job {job:6.3f} s  StringIO {baseline:6.3f} s (CPU)  "
            f"ratio {job / baseline:5.2f}x  (target <= 3x)"
        )
    growth = times[2 * count] / times[count]
    print(f"  twice the prints: {growth:4.2f}x the time  (target <= 2.5x: linear)")


def bench_endless_line(megabytes: int) -> None:
    total = megabytes * 1024 * 1024
    command = f"head -c {total} /dev/zero | tr '\\0' x; printf THE-END"
    workdir = Path(tempfile.mkdtemp(prefix="codelia-bench-jobs-"))
    store = ToolOutputCacheStore(workdir / "cache")
    registry = JobRegistry(output_store=lambda: store)
    me = psutil.Process()
    baseline = me.memory_info().rss
    started = time.perf_counter()
    job = start_shell_job(registry, command, str(workdir), dict(os.environ), "/bin/bash")
    peak = baseline
    visible: list[int] = []
    while not job.done.wait(0.25):
        peak = max(peak, me.memory_info().rss)
        visible.append(job.output.end)
    took = time.perf_counter() - started
    peak = max(peak, me.memory_info().rss)
    reference = time.perf_counter()
    subprocess.run(["/bin/bash", "-c", f"head -c {total} /dev/zero | tr '\\0' x > /dev/null"])
    cat_s = time.perf_counter() - reference
    moving = len({v for v in visible if 0 < v < total})
    ref = job.full_output_ref
    assert ref is not None, "the whole output was not kept in the cache"
    entry = store.get_entry(ref)
    print(f"shell job, {megabytes} MB on one line with no newline:")
    print(f"  RSS over baseline: peak {(peak - baseline) / 1e6:6.1f} MB  (target < 50 MB)")
    print(
        f"  visible end: moved in {moving} of {len(visible)} samples while printing "
        f"(target: it moves); at the end: {job.output.tail(7)!r}"
    )
    print(
        f"  cache entry {entry.size_bytes / 1e6:6.1f} MB, per-entry cap "
        f"{store.max_entry_bytes / 1e6:6.1f} MB  (target: within the cap)"
    )
    print(f"  time {took:6.2f} s, the same bytes to /dev/null {cat_s:6.2f} s  (reference)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prints", type=int, default=80_000)
    parser.add_argument("--mb", type=int, default=1024)
    args = parser.parse_args()
    bench_prints(args.prints)
    bench_endless_line(args.mb)


if __name__ == "__main__":
    main()
