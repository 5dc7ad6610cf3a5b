"""A :class:`~.kernel_peer.KernelChannel` inside the Jupyter server, through its kernel manager.

``kernel_manager.get_kernel(id).client()`` is the transport the server itself would use: an
``AsyncKernelClient`` on the kernel's ZMQ sockets for a local kernel, a ``GatewayKernelClient``
on a websocket to the gateway for a gateway kernel. Both take a message dict on ``send``. They
differ in receiving: the ZMQ channels are awaited; the gateway's are thread-fed queues whose
``get_msg`` spins the event loop while empty, so they are read from worker threads instead.

The gateway client sends a message dict as JSON verbatim and the gateway routes it by its
``channel`` key (shell when missing): the peer's messages carry that key, so control requests
reach the control channel there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
from typing import Any

from .kernel_peer import ChannelClosedError

# How long a reader waits for a message before it looks again (a gateway reader thread: whether
# it should stop; a ZMQ reader: at the socket itself, see _read_zmq).
_POLL_SECONDS = 0.5
_RECEIVED = ("shell", "control", "iopub")


class ServerKernelChannel:
    """The channels of one kernel of this server (local or gateway); a ``KernelChannel``."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._readers: list[asyncio.Task[None]] = []
        self._closing = False

    @classmethod
    async def open(cls, kernel_manager: Any, kernel_id: str) -> ServerKernelChannel:
        """Connect to ``kernel_id`` of the server's (mapping) kernel manager."""
        try:
            manager = kernel_manager.get_kernel(kernel_id)
        except KeyError:
            raise ChannelClosedError(f"no kernel {kernel_id} on this server") from None
        client = manager.client()
        started = client.start_channels(shell=True, iopub=True, stdin=False, hb=False)
        if asyncio.iscoroutine(started):  # the gateway client connects its websocket here
            await started
        channel = cls(client)
        for name in _RECEIVED:
            source = getattr(client, f"{name}_channel")
            read = channel._read_queue if isinstance(source, queue.Queue) else channel._read_zmq
            channel._readers.append(asyncio.ensure_future(read(name, source)))
        return channel

    async def send(self, message: dict[str, Any]) -> None:
        if self._closing:
            raise ChannelClosedError("the kernel channel is closed")
        name = message["channel"]
        if name not in ("shell", "control"):
            raise ValueError(f"cannot send on the {name!r} channel")
        try:
            getattr(self._client, f"{name}_channel").send(message)
        except Exception as exc:  # a closed socket or websocket: the kernel is out of reach
            raise ChannelClosedError(f"cannot reach the kernel: {exc}") from exc

    async def receive(self) -> dict[str, Any]:
        message = await self._inbox.get()
        if message is None:
            raise ChannelClosedError("the kernel channel is closed")
        return message

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        for reader in self._readers:
            reader.cancel()
        for reader in self._readers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        with contextlib.suppress(Exception):
            self._client.stop_channels()
        self._inbox.put_nowait(None)

    async def _read_zmq(self, name: str, source: Any) -> None:
        try:
            while True:
                try:
                    # Never an endless poll: the peer's sends are synchronous on these same
                    # zmq.asyncio sockets, and a send can take the edge of the socket's
                    # readiness fd that the waiting poll needed. The poll then sleeps on with
                    # replies queued (seen about one run in three of a busy no-tab notebook
                    # loop: every shell reply stopped, the relay waited out its 80 s). A poll
                    # that times out looks at the socket again and finds them.
                    message = await source.get_msg(timeout=_POLL_SECONDS)
                except queue.Empty:
                    continue
                self._inbox.put_nowait({**message, "channel": name})
        except asyncio.CancelledError:
            raise
        except Exception:
            self._inbox.put_nowait(None)

    async def _read_queue(self, name: str, source: queue.Queue[dict[str, Any]]) -> None:
        while not self._closing:
            try:
                message = await asyncio.to_thread(source.get, True, _POLL_SECONDS)
            except queue.Empty:
                if getattr(source, "response_router_finished", False):
                    self._inbox.put_nowait(None)
                    return
                continue
            self._inbox.put_nowait({**message, "channel": name})


def tab_connected(kernel_manager: Any, kernel_id: str) -> bool:
    """Whether a front end (a notebook tab) holds a websocket to the kernel on this server."""
    connections = getattr(kernel_manager, "_kernel_connections", {})
    return int(connections.get(kernel_id, 0)) > 0
