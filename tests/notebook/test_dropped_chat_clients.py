"""A chat model dropped after its event loop closed prints nothing into the cell (real kernel).

``%codelia mcp add`` changes what the agent is built from, so the next ``%%codelia`` builds a new
agent and chat model and drops the old ones, whose SDK client still pools a connection opened on
the previous blocking run's event loop (closed when that run ended). Left to the SDK, the
client's ``__del__`` schedules ``aclose()`` on the kernel's loop, which fails on the closed loop
and asyncio prints "Task exception was never retrieved ... Event loop is closed" (~20 lines).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from jupyter_codelia.testing import reply, text

from .conftest import scripted

MCP_SERVER = str(Path(__file__).parents[1] / "standard_tools" / "_mcp_server.py")


def test_a_run_after_mcp_add_prints_no_closed_loop_traceback(
    start_kernel: Any, provider: str
) -> None:
    with scripted(provider, [reply(text("one")), reply(text("two"))]) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        assert kernel.execute("%%codelia\nhello").status == "ok"
        added = kernel.execute(f"%codelia mcp add t -- {sys.executable} {MCP_SERVER} stdio")
        assert "Added MCP server 't'" in added.stream_text()
        second = kernel.execute("%%codelia\nagain")
        assert second.status == "ok", second.reply["content"]
        # Whatever the old client does on being collected has happened once the kernel's loop
        # ran a little and the garbage collector went over everything.
        kernel.execute("import asyncio, gc\nawait asyncio.sleep(0.2)\ngc.collect()")
        kernel.execute("await asyncio.sleep(0.2)\ngc.collect()")
        kernel.drain(0.5)
        assert len(server.requests) == 2
    stderr = [
        m["content"]["text"]
        for m in kernel.iopub
        if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"
    ]
    printed = "".join(stderr)
    assert "Task exception was never retrieved" not in printed
    assert "Event loop is closed" not in printed
    assert "Traceback" not in printed
