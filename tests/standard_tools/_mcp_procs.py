"""Starting the scripted MCP server as an HTTP process on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER_SCRIPT = str(Path(__file__).parent / "_mcp_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(mode: str, *args: str) -> Iterator[str]:
    """``python _mcp_server.py MODE PORT ARGS...`` until the block ends; yields
    ``http://127.0.0.1:PORT``."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER_SCRIPT, mode, str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()  # uvicorn's graceful stop would wait for abandoned calls
        process.wait(timeout=10)
