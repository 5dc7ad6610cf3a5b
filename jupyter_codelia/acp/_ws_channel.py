"""A kernel channel over the Jupyter server's kernel websocket (``/api/kernels/<id>/channels``).

The transport of the kernel peer for a process outside the server (``codelia-acp``): Jupyter
messages as JSON text frames, each with its ``channel`` key, which is how the server's websocket
carries shell, control and iopub (its default, unversioned protocol). The server relays the
header unchanged, so a request's ``subshell_id`` reaches the kernel (JEP 91).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any
from urllib.parse import quote

from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, WebSocketClosedError, websocket_connect

from ..server.kernel_peer import ChannelClosedError
from ._jupyter import JupyterServer


class WebsocketKernelChannel:
    """One kernel's channels on one websocket; a ``KernelChannel``."""

    def __init__(self, connection: WebSocketClientConnection) -> None:
        self._connection = connection
        self._closed = False

    @classmethod
    async def open(cls, server: JupyterServer, kernel_id: str) -> WebsocketKernelChannel:
        """Connect to ``kernel_id`` on ``server`` (its token as an Authorization header)."""
        url = server.ws_url(f"api/kernels/{quote(kernel_id)}/channels")
        url += f"?session_id={uuid.uuid4().hex}"
        request = HTTPRequest(url, headers=server.headers(), connect_timeout=20)
        try:
            connection = await websocket_connect(request, max_message_size=256 * 1024 * 1024)
        except OSError as exc:
            raise ChannelClosedError(
                f"cannot reach kernel {kernel_id} at {server.url}: {exc}"
            ) from None
        return cls(connection)

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ChannelClosedError("the kernel websocket is closed")
        try:
            await self._connection.write_message(json.dumps(message, default=str))
        except WebSocketClosedError:
            self._closed = True
            raise ChannelClosedError("the kernel websocket closed") from None

    async def receive(self) -> dict[str, Any]:
        while True:
            frame = await self._connection.read_message()
            if frame is None:
                self._closed = True
                reason = self._connection.close_reason or "the kernel went away"
                raise ChannelClosedError(f"the kernel websocket closed: {reason}")
            if isinstance(frame, bytes):
                continue  # binary frames carry buffers (widgets); the protocol sends none
            message = json.loads(frame)
            if isinstance(message, dict):
                return message

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._connection.close()
            await asyncio.sleep(0)
