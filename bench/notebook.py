"""Notebook front-end benchmarks (not tests): prints ratios against baselines from the same run.

1. ``%load_ext jupyter_codelia`` in a fresh kernel vs ``import ipywidgets`` in a fresh kernel
   (target: at most 1.5x).
2. Comm messages for a 20,000-token streamed answer: bounded by elapsed time (about 20 updates a
   second), not by the number of streamed chunks.

    .venv/bin/python bench/notebook.py [--rounds 3] [--tokens 20000]
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import tempfile
import time
from typing import Any

from jupyter_client.manager import KernelManager

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text


def _kernel(env: dict[str, str], cwd: str) -> tuple[KernelManager, Any]:
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=cwd)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def _run(kc: Any, code: str, timeout: float = 600) -> tuple[str, list[dict[str, Any]]]:
    """Execute ``code``; return its stdout and every iopub message seen meanwhile."""
    msg_id = kc.execute(code)
    seen: list[dict[str, Any]] = []
    out: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=0.1)
        except queue.Empty:
            continue
        seen.append(msg)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        if msg["msg_type"] == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out), seen
    raise TimeoutError(code)


def _env(home: str, base_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["JUPYTER_CODELIA_HOME"] = home
    env["ANTHROPIC_API_KEY"] = "bench-key"
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    return env


TIMED_IMPORT = (
    "import time as _t\n_s = _t.perf_counter()\nimport ipywidgets\nprint(_t.perf_counter() - _s)"
)
TIMED_LOAD_EXT = (
    "import time as _t\n_s = _t.perf_counter()\n"
    "get_ipython().run_line_magic('load_ext', 'jupyter_codelia')\n"
    "print(_t.perf_counter() - _s)"
)


def bench_load_ext(rounds: int, home: str) -> None:
    imports: list[float] = []
    loads: list[float] = []
    for _ in range(rounds):
        for code, bucket in ((TIMED_IMPORT, imports), (TIMED_LOAD_EXT, loads)):
            km, kc = _kernel(_env(home), home)
            try:
                out, _ = _run(kc, code)
                bucket.append(float(out.strip().splitlines()[-1]))
            finally:
                kc.stop_channels()
                km.shutdown_kernel(now=True)
    base = statistics.median(imports)
    ours = statistics.median(loads)
    print(f"import ipywidgets (fresh kernel, median of {rounds}): {base * 1000:8.1f} ms")
    print(f"%load_ext jupyter_codelia (fresh kernel, median):   {ours * 1000:8.1f} ms")
    print(f"ratio load_ext / import ipywidgets: {ours / base:.2f}x (target <= 1.5x)")


def bench_streaming(tokens: int, home: str, delay_s: float) -> None:
    answer = "word " * tokens
    # A pause per SSE event spreads the stream over time, like a real model does.
    script = [reply(text(answer), delay_s=delay_s)]
    with ScriptedAnthropicServer(script) as server:
        km, kc = _kernel(_env(home, server.url), home)
        try:
            _run(kc, "%load_ext jupyter_codelia")
            _run(kc, "import jupyter_codelia.notebook.ui.panel, anthropic")  # warm imports
            started = time.monotonic()
            _, seen = _run(kc, "%%codelia --approval-mode full-access\nwrite a long answer")
            elapsed = time.monotonic() - started
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    comm_msgs = [m for m in seen if m["msg_type"] == "comm_msg"]
    sizes = [len(str(m["content"])) for m in comm_msgs]
    chunks = len(answer.split(" "))
    print(
        f"streamed answer: {tokens} tokens (~{chunks} stream chunks) in {elapsed:.2f} s "
        f"(server pause {delay_s * 1000:.1f} ms per event)"
    )
    print(f"comm messages: {len(comm_msgs)} ({len(comm_msgs) / elapsed:.1f} per second)")
    print(f"ratio comm messages / stream chunks: {len(comm_msgs) / chunks:.4f}")
    print(f"largest comm message: {max(sizes)} chars; total {sum(sizes)} chars")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codelia-bench-") as home:
        bench_load_ext(args.rounds, home)
        # Same answer, two speeds: the message count follows the elapsed time, not the tokens.
        bench_streaming(args.tokens, home, delay_s=0.0002)
        bench_streaming(args.tokens, home, delay_s=0.0)


if __name__ == "__main__":
    main()
