"""Starting a stdio MCP server and listing its tools: McpServers vs the bare mcp SDK.

The bare side opens ``stdio_client`` + ``ClientSession``, initializes and lists tools; ours
does the same through :class:`McpServers` (its loop thread, lazy start, wrapping every listed
tool as an ``McpTool``) and closes again. The server is the tests' real MCPServer. Prints the
median of each and the ratio. Target: ratio <= 1.5x.

    python bench/mcp_connect.py [--runs 7]
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

SERVER = str(Path(__file__).resolve().parents[1] / "tests" / "standard_tools" / "_mcp_server.py")


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


def main(runs: int) -> None:
    bare: list[float] = []
    ours: list[float] = []
    asyncio.run(bare_connect_and_list())  # warm the file cache
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
        f"stdio connect+list  bare={bare_ms:8.1f} ms  ours={ours_ms:8.1f} ms  ratio={ratio:4.2f}x"
    )
    print(f"target: ratio <= 1.5x -> {'OK' if ratio <= 1.5 else 'MISSED'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    main(parser.parse_args().runs)
