"""The three ways to reach a server: stdio (our reader), streamable HTTP and legacy SSE.

**stdio** spawns the server the way the SDK does (its environment rules, its process group and
its shutdown sequence: close stdin, wait, kill the tree), but reads stdout itself: lines are
split in one linear pass over a byte buffer (the SDK's text reader re-joins a long line on every
64 KB chunk, which makes a 200 MB line quadratic), and a line longer than
:data:`INLINE_LINE_BYTES` is spilled to disk as it arrives and handed to
``_bigline.compact_message``, so memory stays bounded and the connection stays usable.

The server inherits only ``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM`` and ``USER`` from
the kernel (the SDK's list), plus the entry's ``env``; nothing else of the kernel's environment
(API keys included) reaches it.

Its stderr goes to a file kept for the connection's life: :class:`StderrLog` gives the last
lines for failure reports, with secrets masked.

**HTTP** and **SSE** use the SDK's clients with the entry's headers and, where the server asks
for it, an OAuth provider (``oauth.py``).
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from ..._redact import redact_secrets
from .config import McpServerConfig

INLINE_LINE_BYTES = 8 * 1024 * 1024
_READ_CHUNK = 1 << 20
STDERR_TAIL_CHARS = 600
# ``NAME=value`` / ``NAME: value`` where NAME says it is a secret: masked in stderr tails even
# when the value is not a known secret (the server's own environment, a token it printed).
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Z0-9_]*)"
    r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)"
)
_BEARER = re.compile(r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}")


def mask_secret_text(text: str) -> str:
    """Known secrets, credential shapes and ``TOKEN=...``-style assignments masked."""
    text = _SECRET_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}[REDACTED]", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} [REDACTED]", text)
    return redact_secrets(text)


class StderrLog:
    """A stdio server's stderr, in a file for the connection's life (read back on failure)."""

    def __init__(self) -> None:
        # Closed by close(): kept open while the server runs, read back for crash reports.
        self.file = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace"
        )

    def tail(self) -> str:
        """The last lines, secrets masked; ``""`` when it printed nothing."""
        try:
            self.file.flush()
            size = self.file.seek(0, os.SEEK_END)
            self.file.seek(max(0, size - STDERR_TAIL_CHARS * 4))
            text = self.file.read()[-STDERR_TAIL_CHARS:].strip()
        except (OSError, ValueError):
            return ""
        return mask_secret_text(text)

    def close(self) -> None:
        self.file.close()


@asynccontextmanager
async def stdio_transport(
    config: McpServerConfig, stderr: StderrLog, spool_dir: str
) -> AsyncIterator[tuple[Any, Any]]:
    """Streams to and from a server process (see the module docstring)."""
    import anyio
    import mcp_types as types
    from mcp.client import stdio as sdk_stdio
    from mcp.shared.message import SessionMessage

    assert config.command is not None
    command = await sdk_stdio._get_executable_command(config.command)
    process = await sdk_stdio._create_platform_compatible_process(
        command=command,
        args=config.args,
        env=sdk_stdio.get_default_environment() | config.env,
        errlog=stderr.file,
        cwd=config.cwd,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    def parsed(line: bytes) -> SessionMessage | Exception:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            return exc
        return SessionMessage(message)

    async def deliver(item: SessionMessage | Exception) -> bool:
        try:
            await read_writer.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def spilled(path: Path) -> SessionMessage | Exception:
        from ._bigline import BigLineError, compact_message

        try:
            message = await asyncio.to_thread(compact_message, path, spool_dir)
            return SessionMessage(types.jsonrpc_message_adapter.validate_python(message))
        except (BigLineError, ValueError, OSError) as exc:
            return exc
        finally:
            with suppress(OSError):
                os.unlink(path)

    async def stdout_reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        spill: Any = None
        spill_path: Path | None = None
        try:
            async with read_writer:
                while True:
                    try:
                        chunk = await process.stdout.receive(_READ_CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError):
                        return
                    start = 0
                    while True:
                        newline = chunk.find(b"\n", start)
                        if newline < 0:
                            break
                        piece = chunk[start:newline]
                        start = newline + 1
                        if spill is not None:
                            spill.write(piece)
                            spill.close()
                            item = await spilled(spill_path)  # type: ignore[arg-type]
                            spill = spill_path = None
                        else:
                            buffer += piece
                            line, buffer = bytes(buffer), bytearray()
                            if not line.strip():
                                continue
                            item = parsed(line)
                        if not await deliver(item):
                            return
                    rest = chunk[start:]
                    if spill is not None:
                        spill.write(rest)
                    else:
                        buffer += rest
                        if len(buffer) > INLINE_LINE_BYTES:
                            fd, name = tempfile.mkstemp(prefix="codelia-mcp-line-", dir=spool_dir)
                            spill, spill_path = os.fdopen(fd, "wb"), Path(name)
                            spill.write(buffer)
                            buffer = bytearray()
        except (anyio.BrokenResourceError, ConnectionError, OSError):
            return
        finally:
            if spill is not None:
                spill.close()
                with suppress(OSError):
                    spill_path.unlink()  # type: ignore[union-attr]

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for session_message in write_reader:
                    data = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await process.stdin.send((data + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                await sdk_stdio._stop_server_process(process)
            group.cancel_scope.cancel()


@asynccontextmanager
async def http_transport(config: McpServerConfig, auth: Any) -> AsyncIterator[tuple[Any, Any]]:
    """Streamable HTTP, or legacy SSE for ``"type": "sse"``, with headers and OAuth."""
    assert config.url is not None
    if config.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(config.url, headers=config.headers or None, auth=auth) as streams:
            yield streams
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers=config.headers or None, auth=auth)
    try:
        async with streamable_http_client(config.url, http_client=client) as streams:
            yield streams[0], streams[1]
    finally:
        await client.aclose()
