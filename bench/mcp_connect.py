"""MCP costs against the bare ``mcp`` SDK, measured in one run on the same machine.

1. **First tool list**: start a stdio server and list its tools. The bare side opens
   ``stdio_client`` + ``ClientSession``, initializes and lists; ours goes through
   :class:`McpServers` (its loop thread, capabilities, the concurrent listing of tools,
   resources and prompts, wrapping every tool as an ``McpTool``) and closes again. Ratio of the
   medians; target <= 1.1x.
2. **A hanging server**: one that never answers ``initialize``, with ``startup_timeout`` 1.5 s:
   how long ``McpServers.tools()`` takes, as a ratio of that timeout; target <= 1.0x (plus a
   scheduling tick).
3. **A call's added latency**: the median of many ``echo`` calls through ``McpTool.execute_raw``
   (from the caller's own event loop, as a run makes them: a hop to the MCP loop thread and
   back, argument parsing, result mapping) minus the median of the same calls made directly
   with ``ClientSession.call_tool`` on an open session; target <= 1 ms.

The server is the tests' scripted MCPServer (tests/standard_tools/_mcp_server.py).

    python bench/mcp_connect.py [--runs 7] [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from jupyter_codelia.standard_tools.mcp import McpServerConfig, McpServers
from jupyter_codelia.tools import ToolContext

SERVER = str(Path(__file__).resolve().parents[1] / "tests" / "standard_tools" / "_mcp_server.py")
HANG_TIMEOUT_S = 1.5


async def bare_connect_and_list() -> int:
    parameters = StdioServerParameters(command=sys.executable, args=[SERVER, "stdio"])
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return len((await session.list_tools()).tools)


def ours_connect_and_list() -> int:
    servers = McpServers({"t": McpServerConfig(command=sys.executable, args=[SERVER, "stdio"])})
    try:
        tools, failures = servers.tools()
        assert not failures, failures
        return len(tools)
    finally:
        servers.close()


def first_listing(runs: int) -> None:
    bare: list[float] = []
    ours: list[float] = []
    asyncio.run(bare_connect_and_list())  # warm the file cache and the imports
    ours_connect_and_list()
    for _ in range(runs):  # alternate so machine noise hits both alike
        start = time.perf_counter()
        asyncio.run(bare_connect_and_list())
        bare.append(time.perf_counter() - start)
        start = time.perf_counter()
        ours_connect_and_list()
        ours.append(time.perf_counter() - start)
    bare_ms, ours_ms = statistics.median(bare) * 1000, statistics.median(ours) * 1000
    ratio = ours_ms / bare_ms
    print(
        f"first tool list   bare={bare_ms:8.1f} ms  ours={ours_ms:8.1f} ms  ratio={ratio:4.2f}x"
        f"  (target <= 1.1x: {'OK' if ratio <= 1.1 else 'MISSED'})"
    )


def hanging_server() -> None:
    config = McpServerConfig(
        command=sys.executable, args=[SERVER, "hang-init"], startup_timeout=HANG_TIMEOUT_S
    )
    servers = McpServers({"stuck": config})
    try:
        start = time.perf_counter()
        _tools, failures = servers.tools()
        spent = time.perf_counter() - start
    finally:
        servers.close()
    assert "stuck" in failures
    ratio = spent / HANG_TIMEOUT_S
    print(
        f"hanging server    startup_timeout={HANG_TIMEOUT_S:.1f} s  tools() took {spent:6.2f} s"
        f"  ratio={ratio:4.2f}x  (target <= 1.0x + a tick: {'OK' if ratio <= 1.05 else 'MISSED'})"
    )


async def interleaved_calls(calls: int) -> tuple[list[float], list[float]]:
    """The same ``echo`` call, alternately bare (an open SDK session on this loop) and ours
    (``McpTool.execute_raw``, its own server process), so machine noise hits both alike."""
    parameters = StdioServerParameters(command=sys.executable, args=[SERVER, "stdio"])
    servers = McpServers({"t": McpServerConfig(command=sys.executable, args=[SERVER, "stdio"])})
    try:
        tools, _ = await asyncio.to_thread(servers.tools)
        echo = {t.name: t for t in tools}["t__echo"]
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            bare: list[float] = []
            ours: list[float] = []
            for index in range(calls + 20):
                start = time.perf_counter()
                await session.call_tool("echo", {"text": "x"})
                middle = time.perf_counter()
                await echo.execute_raw('{"text": "x"}', ToolContext(tool_call_id=f"c{index}"))
                end = time.perf_counter()
                if index >= 20:  # the first calls warm both sides
                    bare.append(middle - start)
                    ours.append(end - middle)
            return bare, ours
    finally:
        servers.close()


def call_latency(calls: int) -> None:
    bare_times, our_times = asyncio.run(interleaved_calls(calls))
    bare = statistics.median(bare_times) * 1000
    ours = statistics.median(our_times) * 1000
    added = ours - bare
    print(
        f"one call          bare={bare:6.3f} ms  ours={ours:6.3f} ms  added={added:6.3f} ms"
        f"  ratio={ours / bare:4.2f}x  (target added <= 1 ms: {'OK' if added <= 1 else 'MISSED'})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    arguments = parser.parse_args()
    first_listing(arguments.runs)
    hanging_server()
    call_latency(arguments.calls)
