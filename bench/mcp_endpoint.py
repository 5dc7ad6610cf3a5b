"""``/codelia/mcp`` costs, measured in one run on the same machine (not a test).

1. **A call through the endpoint vs. the notebook's own agent** (and, to see where the time
   goes, a tool the server answers itself: HTTP and the SDK alone): the median of ``list_variables``
   calls an outside agent makes with the official MCP SDK client (HTTP to the Jupyter server,
   one ``tool.call`` on a kernel subshell, the kernel's tool, back), against the median of the
   same tool dispatched in the kernel the way the notebook's agent runs it
   (``execute_tool_call`` on the kernel's tools and the result into the output cache, timed
   inside the kernel). Targets: ratio
   <= 3x, and under 50 ms on an idle machine.
2. **Server memory over many calls**: the Jupyter server process's RSS after a warm-up, and
   after ``--calls`` more ``list_variables`` calls on one session. Target: flat. What grows
   (tracemalloc, 2,000 calls in-process) is jupyter_client's replay protection: every signed
   message received adds its signature to the kernel session's ``digest_history``, a set capped
   at 65,536 signatures (about 10 MB; it drops a tenth when full), shared by the server's own
   activity watcher and our channel. About three messages per call, so 10,000 calls are still
   filling it; nothing of ours is kept per call.

A real ``jupyter server`` with jupyter_codelia and a token on loopback, a real kernel with a few
variables (tests/server/jupyter_launch.py).

    .venv/bin/python bench/mcp_endpoint.py [--rounds 300] [--calls 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from typing import Any

import psutil
from _jupyter import jupyter_launch  # bench/ is on sys.path when a bench runs

TOKEN = "bench-token"
RATIO_TARGET = 3.0
IDLE_TARGET_MS = 50.0
NOTEBOOK = "bench.ipynb"
SETUP = (
    "import numpy as np\nimport pandas as pd\n"
    "frame = pd.DataFrame({'a': range(1000), 'b': range(1000)})\n"
    "matrix = np.zeros((200, 200))\n"
    "names = [f'n{i}' for i in range(100)]\n"
    "for i in range(20):\n    globals()[f'value_{i}'] = i"
)
# The notebook's agent's own dispatch of the tool, timed in the kernel.
IN_KERNEL = """
import asyncio, json, statistics, time, threading
from jupyter_codelia.llm.messages import FunctionCall, ToolCall
from jupyter_codelia.notebook.extension import kernel_extension
from jupyter_codelia.tools import ToolContext, execute_tool_call
_nb = kernel_extension(get_ipython())
_kit = _nb.bridge.external._kit("bench", _nb.agent.settings())
async def _time(rounds):
    spent = []
    for i in range(rounds):
        call = ToolCall(id=f"b{i}", function=FunctionCall(name="list_variables", arguments="{}"))
        started = time.perf_counter()
        execution = await execute_tool_call(call, _kit.tools, ToolContext())
        _kit.output_cache.process(execution.message)  # the agent keeps every result too
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1000
_out = []
_t = threading.Thread(target=lambda: _out.append(asyncio.run(_time(ROUNDS))))
_t.start(); _t.join()
print(json.dumps({"median_ms": _out[0]}))
"""


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def measure(url: str, rounds: int, calls: int, pid: int) -> dict[str, float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    http = create_mcp_http_client(headers={"Authorization": f"token {TOKEN}"})
    nb = {"notebook_path": NOTEBOOK}
    server = psutil.Process(pid)
    try:
        async with (
            streamable_http_client(f"{url}/codelia/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write, client_info=Implementation(name="bench", version="1")) as s,
        ):
            await s.initialize()
            setup = await s.call_tool("python", {**nb, "code": SETUP})
            assert not setup.is_error, _text(setup)
            for _ in range(20):  # warm: imports, the kernel's tool list, the subshell
                await s.call_tool("list_variables", nb)
            spent = []
            for _ in range(rounds):
                started = time.perf_counter()
                result = await s.call_tool("list_variables", nb)
                spent.append(time.perf_counter() - started)
                assert "frame" in _text(result)
            floor = []
            for _ in range(rounds):  # HTTP and the SDK alone: a tool the server answers itself
                started = time.perf_counter()
                await s.call_tool("notebooks", {})
                floor.append(time.perf_counter() - started)
            inside = await s.call_tool(
                "python", {**nb, "code": IN_KERNEL.replace("ROUNDS", str(rounds))}
            )
            found = re.search(r'\{"median_ms": [^}]+\}', _text(inside))
            assert found is not None, _text(inside)
            own_ms = json.loads(found.group(0))["median_ms"]

            for _ in range(500):
                await s.call_tool("list_variables", nb)
            rss = [server.memory_info().rss]
            half = calls // 2
            for index in range(calls):
                await s.call_tool("list_variables", nb)
                if index + 1 == half:
                    rss.append(server.memory_info().rss)
            rss.append(server.memory_info().rss)
    finally:
        await http.aclose()
    return {
        "endpoint_ms": statistics.median(spent) * 1000,
        "own_ms": own_ms,
        "http_ms": statistics.median(floor) * 1000,
        "rss_start_mb": rss[0] / 2**20,
        "rss_half_mb": rss[1] / 2**20,
        "rss_end_mb": rss[2] / 2**20,
        "second_half_kb_per_1000": (rss[2] - rss[1]) / 1024 / max(calls - half, 1) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--calls", type=int, default=10_000)
    args = parser.parse_args()
    launcher = jupyter_launch()
    env = {"JUPYTER_CODELIA_APPROVAL_MODE": "full-access"}  # the setup cell runs unasked
    with launcher.jupyter_server(TOKEN, env_extra=env) as server:
        server.session(NOTEBOOK)
        numbers = asyncio.run(measure(server.url, args.rounds, args.calls, server.process.pid))
    ratio = numbers["endpoint_ms"] / numbers["own_ms"]
    print(f"list_variables through /codelia/mcp: median {numbers['endpoint_ms']:.2f} ms")
    print(f"the notebook's own agent dispatch:  median {numbers['own_ms']:.2f} ms")
    print(f"HTTP + SDK alone (notebooks tool):  median {numbers['http_ms']:.2f} ms")
    print(
        f"ratio {ratio:.2f}x (target <= {RATIO_TARGET:g}x: "
        f"{'met' if ratio <= RATIO_TARGET else 'NOT met'}); under {IDLE_TARGET_MS:g} ms: "
        f"{'met' if numbers['endpoint_ms'] < IDLE_TARGET_MS else 'NOT met'}"
    )
    print(
        f"server RSS over {args.calls} calls: {numbers['rss_start_mb']:.1f} MB -> "
        f"{numbers['rss_half_mb']:.1f} MB (half) -> {numbers['rss_end_mb']:.1f} MB; "
        f"second half {numbers['second_half_kb_per_1000']:.0f} KB per 1,000 calls"
    )


if __name__ == "__main__":
    main()
