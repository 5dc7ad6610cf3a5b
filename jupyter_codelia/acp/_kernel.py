"""One kernel, as the ACP bridge talks to it: a ``codelia`` comm over a :class:`KernelPeer`.

The side panel's protocol (docs/comm-protocol.md): the bridge loads the extension, opens a
``codelia`` comm, starts runs with ``run.start`` on it and receives every run's
``run.started`` / ``agent.event`` / ``run.status`` notifications there. Stop, approval answers
and reads go through the peer's ``control()`` requests (on a kernel subshell where the kernel
has subshells, so they are answered while a cell is busy). The peer carries the messages, as it
does for the server extension's MCP relay.

Notifications are kept per run from the first one seen: ``run.started`` arrives before the
``run.start`` response, so a run is claimed when its response is read and nothing of it is lost.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

from ..server.kernel_peer import (
    ChannelClosedError,
    KernelChannel,
    KernelPeer,
    KernelRequestError,
    PeerError,
    PeerTimeoutError,
)

TARGET = "codelia"
_TERMINAL = ("completed", "error", "cancelled")
_START_SECONDS = 60.0
_REQUEST_SECONDS = 60.0


class CodeliaKernel:
    """The codelia protocol with one kernel over ``channel``."""

    def __init__(self, channel: KernelChannel, kernel_id: str) -> None:
        self.peer = KernelPeer(channel)
        self.kernel_id = kernel_id
        self.comm_id = uuid.uuid4().hex
        self.hello: dict[str, Any] = {}
        self._responses: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._hello: asyncio.Future[dict[str, Any]] | None = None
        self._runs: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
        self._claimed: set[str] = set()
        self._stop_listening = self.peer.listen(self._iopub)
        self.peer.when_closed(self._fail)

    # ------------------------------------------------------------------ life

    async def start(self) -> None:
        """Load codelia in the kernel and open the comm (its hello)."""
        await self.peer.start()
        content = await self.peer.run_quietly("%load_ext jupyter_codelia", timeout=_START_SECONDS)
        if content.get("status") != "ok":
            raise PeerError(
                f"the kernel could not load jupyter_codelia ({content.get('ename')}: "
                f"{content.get('evalue')}); install jupyter-codelia in the kernel's environment"
            )
        self._hello = asyncio.get_running_loop().create_future()
        data = {"client": "codelia-acp"}
        await self.peer.send(
            "comm_open", {"comm_id": self.comm_id, "target_name": TARGET, "data": data}
        )
        try:
            self.hello = await asyncio.wait_for(self._hello, _START_SECONDS)
        except asyncio.TimeoutError:
            raise PeerTimeoutError(
                f"kernel {self.kernel_id} did not answer the codelia comm within "
                f"{_START_SECONDS:g} s"
            ) from None

    async def close(self) -> None:
        if not self.peer.closed:
            try:
                await self.peer.send("comm_close", {"comm_id": self.comm_id, "data": {}})
            except PeerError:
                pass
        self._stop_listening()
        await self.peer.close()

    @property
    def closed(self) -> bool:
        return self.peer.closed

    # ------------------------------------------------------------------ requests

    async def request(self, kind: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
        """``kind`` on the comm; its result (KernelRequestError when the kernel refused)."""
        request_id = uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._responses[request_id] = future
        data = {"type": kind, "request_id": request_id, **(fields or {})}
        try:
            await self.peer.send("comm_msg", {"comm_id": self.comm_id, "data": data})
            envelope = await asyncio.wait_for(future, _REQUEST_SECONDS)
        except asyncio.TimeoutError:
            raise PeerTimeoutError(
                f"kernel {self.kernel_id} did not answer {kind} within {_REQUEST_SECONDS:g} s "
                "(a cell may be running there)"
            ) from None
        finally:
            self._responses.pop(request_id, None)
        if not envelope.get("ok"):
            raise KernelRequestError(str(envelope.get("error") or "the kernel refused"))
        result = envelope.get("result")
        return result if isinstance(result, dict) else {}

    async def control(self, kind: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
        """``kind`` through ``control()`` (answered while a cell is busy where the kernel has
        subshells; after it otherwise)."""
        reply = await self.peer.request(kind, fields, timeout=_REQUEST_SECONDS)
        return reply.result

    async def start_run(self, fields: dict[str, Any]) -> str:
        """``run.start``; the new run's id (its notifications are kept from the first one)."""
        from ..wire import RunStartResult, read_result

        return read_result(RunStartResult, await self.request("run.start", fields)).run_id

    async def notifications(self, run_id: str) -> AsyncIterator[dict[str, Any]]:
        """The run's notifications in order, ending after its final ``run.status``."""
        queue = self._runs.setdefault(run_id, asyncio.Queue())
        try:
            while True:
                message = await queue.get()
                if message is None:
                    raise ChannelClosedError(f"lost the kernel {self.kernel_id} during the run")
                yield message
                if message.get("type") == "run.status" and message.get("status") in _TERMINAL:
                    return
        finally:
            self._runs.pop(run_id, None)
            self._claimed.discard(run_id)

    # ------------------------------------------------------------------ messages

    def _fail(self, error: BaseException) -> None:
        for future in (*self._responses.values(), self._hello):
            if future is not None and not future.done():
                future.set_exception(ChannelClosedError(f"kernel {self.kernel_id}: {error}"))
        for queue in self._runs.values():
            queue.put_nowait(None)

    def _iopub(self, message: dict[str, Any]) -> None:
        if (message.get("header") or {}).get("msg_type") != "comm_msg":
            return
        content = message.get("content") or {}
        if content.get("comm_id") == self.comm_id and isinstance(content.get("data"), dict):
            self._notification(content["data"])

    def _notification(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "hello":
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(data)
        elif kind == "response":
            future = self._responses.get(str(data.get("request_id")))
            result = data.get("result") or {}
            if isinstance(result, dict) and isinstance(result.get("run_id"), str):
                # Claimed here, on the reader, before this run's later notifications are read.
                self._claimed.add(result["run_id"])
            if future is not None and not future.done():
                future.set_result(data)
        elif kind in ("run.started", "agent.event", "run.status"):
            run_id = str(data.get("run_id"))
            self._runs.setdefault(run_id, asyncio.Queue()).put_nowait(data)
            ended = kind == "run.status" and data.get("status") in _TERMINAL
            if ended and run_id not in self._claimed:
                # Another front end's run (the side panel, a %%codelia cell): not ours to keep.
                self._runs.pop(run_id, None)
