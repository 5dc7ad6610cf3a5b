"""Cost of the shell tool's streaming and of webfetch's page conversion, against baselines.

shell: a command printing N MB (N = 50 by default) is run
* bare: ``asyncio.create_subprocess_exec`` + ``communicate()`` (everything in memory, no work);
* tool: ``shell_tool(...)`` with a ``ToolOutputCacheStore`` (decode, secret masking, head/tail
  excerpt, the full stream written to the cache).
It prints the time ratio tool/bare and both peak Python allocations (tracemalloc, separate runs
from the timed ones). Targets: time ratio under 5 (the tool also writes the whole stream to
the cache), tool peak memory under 16 MB whatever N.

webfetch: a ~1 MB HTML page served from 127.0.0.1 is fetched
* bare: ``httpx2`` GET of the same URL (bytes only);
* tool: ``webfetch`` as markdown and as text (guarded transport, decoding, conversion).
It prints the ratios tool/bare. Target: both under 15x the bare fetch (markdownify took ~60x).

    python bench/shell_web.py [--mb 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.standard_tools.shell import shell_tool
from jupyter_codelia.standard_tools.web import WebConfig, web_tools
from jupyter_codelia.tools import ToolContext


async def timed(make: Callable[[], Awaitable[Any]], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await make()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def peak_bytes(make: Callable[[], Awaitable[Any]]) -> int:
    tracemalloc.start()
    try:
        await make()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def bench_shell(megabytes: int, repeat: int) -> None:
    command = f"yes 'a line of output that repeats' | head -c {megabytes * 1024 * 1024}"
    workdir = Path(tempfile.mkdtemp(prefix="codelia-bench-"))
    store = ToolOutputCacheStore(workdir / "cache")
    tool = shell_tool(workdir, store)
    calls = iter(range(1_000_000))

    async def bare() -> None:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, stdout=asyncio.subprocess.PIPE
        )
        await proc.communicate()

    async def with_tool() -> None:
        ctx = ToolContext(tool_call_id=f"bench_{next(calls)}")
        await tool.execute_raw(json.dumps({"command": command}), ctx)

    bare_s = await timed(bare, repeat)
    tool_s = await timed(with_tool, repeat)
    bare_peak = await peak_bytes(bare)
    tool_peak = await peak_bytes(with_tool)
    print(f"shell, {megabytes} MB of output (median of {repeat}):")
    print(f"  bare {bare_s:.3f} s   tool {tool_s:.3f} s   ratio {tool_s / bare_s:.2f}x")
    print(
        f"  peak Python memory: bare {bare_peak / 2**20:.1f} MB   tool {tool_peak / 2**20:.1f} MB"
    )


def page(size: int) -> bytes:
    block = (
        "<div class='card'><h2>Section {i}</h2><p>Paragraph with <a href='/doc/{i}'>a link</a>,"
        " <b>bold</b> words and an entity &amp; more.</p><ul><li>one</li><li>two</li></ul></div>"
    )
    parts, total, i = [], 0, 0
    while total < size:
        chunk = block.format(i=i)
        parts.append(chunk)
        total += len(chunk)
        i += 1
    body = "".join(parts)
    return (
        f"<!doctype html><html><head><title>Bench</title></head><body>{body}</body></html>".encode()
    )


async def bench_webfetch(repeat: int) -> None:
    import httpx2

    body = page(900_000)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    webfetch = web_tools(WebConfig(allow_private_network=True))[1]

    async def bare() -> None:
        async with httpx2.AsyncClient() as client:
            (await client.get(url)).raise_for_status()

    def fetch_as(fmt: str) -> Callable[[], Awaitable[Any]]:
        async def run() -> None:
            args = {"url": url, "output_format": fmt, "max_bytes": 1_000_000}
            result = await webfetch.execute_raw(json.dumps(args), ToolContext())
            assert result.type == "json", result

        return run

    try:
        bare_s = await timed(bare, repeat)
        markdown_s = await timed(fetch_as("markdown"), repeat)
        text_s = await timed(fetch_as("text"), repeat)
    finally:
        server.shutdown()
    print(f"webfetch, {len(body) / 1e6:.1f} MB HTML page (median of {repeat}):")
    print(f"  bare GET {bare_s * 1000:.0f} ms")
    print(f"  markdown {markdown_s * 1000:.0f} ms   ratio {markdown_s / bare_s:.1f}x")
    print(f"  text     {text_s * 1000:.0f} ms   ratio {text_s / bare_s:.1f}x")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if sys.platform != "win32":
        await bench_shell(args.mb, args.repeat)
    await bench_webfetch(args.repeat)


if __name__ == "__main__":
    asyncio.run(main())
