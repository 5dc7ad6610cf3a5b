"""One kernel, as the ACP bridge talks to it: the ``codelia`` comm, plus ``control()`` requests.

The side panel's protocol (docs/comm-protocol.md), spoken over a kernel channel: the bridge
loads the extension, opens a ``codelia`` comm, starts runs with ``run.start`` on it and receives
every run's ``run.started`` / ``agent.event`` / ``run.status`` notifications there. Stop,
approval answers and reads go through ``control()`` on a kernel subshell where the kernel has
subshells (answered while a cell is busy), else on the comm.

Notifications are kept per run from the first one seen: ``run.started`` arrives before the
``run.start`` response, so a run is claimed when its response is read and nothing of it is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol

from ._errors import BridgeError, ChannelClosedError, KernelRequestError

log = logging.getLogger("jupyter_codelia.acp")

TARGET = "codelia"
_CONTROL = '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control({payload})'
_TERMINAL = ("completed", "error", "cancelled")
_GONE = ("restarting", "dead")
_START_SECONDS = 60.0
_REQUEST_SECONDS = 60.0


class KernelChannel(Protocol):
    """A two-way link to one kernel: Jupyter messages as the kernel websocket's JSON dicts."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any]: ...

    async def close(self) -> None: ...


class CodeliaKernel:
    """The codelia protocol with one kernel over ``channel``."""

    def __init__(self, channel: KernelChannel, kernel_id: str) -> None:
        self.channel = channel
        self.kernel_id = kernel_id
        self.session = uuid.uuid4().hex
        self.comm_id = uuid.uuid4().hex
        self.subshells = False
        self.hello: dict[str, Any] = {}
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._responses: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._hello: asyncio.Future[dict[str, Any]] | None = None
        self._runs: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
        self._claimed: set[str] = set()
        self._free_subshells: list[str] = []
        self._reader: asyncio.Task[None] | None = None
        self._closed: BaseException | None = None

    # ------------------------------------------------------------------ life

    async def start(self) -> None:
        """Learn the kernel's features, load codelia there and open the comm (its hello)."""
        self._reader = asyncio.ensure_future(self._read())
        info = await self._ask("control", "kernel_info_request", {}, _START_SECONDS)
        features = info.get("content", {}).get("supported_features") or []
        self.subshells = "kernel subshells" in features
        reply = await self._ask(
            "shell",
            "execute_request",
            {
                "code": "%load_ext jupyter_codelia",
                "silent": True,
                "store_history": False,
                "allow_stdin": False,
                "user_expressions": {},
            },
            _START_SECONDS,
        )
        content = reply.get("content", {})
        if content.get("status") != "ok":
            raise BridgeError(
                f"the kernel could not load jupyter_codelia ({content.get('ename')}: "
                f"{content.get('evalue')}); install jupyter-codelia in the kernel's environment"
            )
        self._hello = asyncio.get_running_loop().create_future()
        await self._send(
            "shell",
            "comm_open",
            {"comm_id": self.comm_id, "target_name": TARGET, "data": {"client": "codelia-acp"}},
        )
        self.hello = await asyncio.wait_for(self._hello, _START_SECONDS)

    async def close(self) -> None:
        self._fail(ChannelClosedError("the kernel link was closed"))
        with contextlib.suppress(Exception):
            await self._send("shell", "comm_close", {"comm_id": self.comm_id, "data": {}})
        if self._reader is not None:
            self._reader.cancel()
        await self.channel.close()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    # ------------------------------------------------------------------ requests

    async def request(self, kind: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
        """``kind`` on the comm; its result (KernelRequestError when the kernel refused)."""
        request_id = uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._responses[request_id] = future
        data = {"type": kind, "request_id": request_id, **(fields or {})}
        try:
            await self._send("shell", "comm_msg", {"comm_id": self.comm_id, "data": data})
            envelope = await asyncio.wait_for(future, _REQUEST_SECONDS)
        except asyncio.TimeoutError:
            raise BridgeError(
                f"kernel {self.kernel_id} did not answer {kind} within {_REQUEST_SECONDS:g} s "
                "(a cell may be running there)"
            ) from None
        finally:
            self._responses.pop(request_id, None)
        return _result(envelope)

    async def control(self, kind: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
        """``kind`` through ``control()`` on a subshell (answered while a cell is busy); on
        the comm where the kernel has no subshells."""
        subshell = await self._subshell() if self.subshells else None
        if subshell is None:
            return await self.request(kind, fields)
        payload = {"type": kind, "request_id": uuid.uuid4().hex, **(fields or {})}
        content = {
            "code": "",
            "silent": True,
            "store_history": False,
            "allow_stdin": False,
            "user_expressions": {
                "response": _CONTROL.format(payload=json.dumps(json.dumps(payload)))
            },
        }
        try:
            reply = await self._ask("shell", "execute_request", content, _REQUEST_SECONDS, subshell)
        finally:
            self._free_subshells.append(subshell)
        outcome = (reply.get("content", {}).get("user_expressions") or {}).get("response") or {}
        if outcome.get("status") != "ok":
            raise BridgeError(
                f"the kernel could not run {kind} ({outcome.get('ename')}: {outcome.get('evalue')})"
            )
        envelope = (outcome.get("data") or {}).get("application/json")
        if not isinstance(envelope, dict):
            raise BridgeError(f"the kernel sent no response to {kind}")
        return _result(envelope)

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
                    raise ChannelClosedError(
                        f"lost the kernel {self.kernel_id} during the run: {self._closed}"
                    )
                yield message
                if message.get("type") == "run.status" and message.get("status") in _TERMINAL:
                    return
        finally:
            self._runs.pop(run_id, None)
            self._claimed.discard(run_id)

    async def _subshell(self) -> str | None:
        if self._free_subshells:
            return self._free_subshells.pop()
        reply = await self._ask("control", "create_subshell_request", {}, _START_SECONDS)
        subshell_id = reply.get("content", {}).get("subshell_id")
        if not isinstance(subshell_id, str):
            self.subshells = False
            return None
        return subshell_id

    # ------------------------------------------------------------------ messages

    async def _ask(
        self,
        channel: Literal["shell", "control"],
        msg_type: str,
        content: dict[str, Any],
        timeout: float,
        subshell: str | None = None,
    ) -> dict[str, Any]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        msg_id = await self._send(channel, msg_type, content, subshell, future)
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise BridgeError(
                f"kernel {self.kernel_id} did not answer {msg_type} within {timeout:g} s"
            ) from None
        finally:
            self._replies.pop(msg_id, None)

    async def _send(
        self,
        channel: str,
        msg_type: str,
        content: dict[str, Any],
        subshell: str | None = None,
        reply: asyncio.Future[dict[str, Any]] | None = None,
    ) -> str:
        if self._closed is not None:
            raise ChannelClosedError(str(self._closed))
        header: dict[str, Any] = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": msg_type,
            "session": self.session,
            "username": "codelia-acp",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "version": "5.4",
        }
        if subshell is not None:
            header["subshell_id"] = subshell
        if reply is not None:
            self._replies[header["msg_id"]] = reply
        message = {
            "channel": channel,
            "header": header,
            "parent_header": {},
            "metadata": {},
            "content": content,
        }
        await self.channel.send(message)
        return str(header["msg_id"])

    async def _read(self) -> None:
        try:
            while True:
                self._dispatch(await self.channel.receive())
        except asyncio.CancelledError:
            raise
        except ChannelClosedError as exc:
            self._fail(exc)
        except Exception as exc:  # a broken transport ends the link, never silently
            log.exception("the kernel channel failed")
            self._fail(ChannelClosedError(f"the kernel channel failed: {exc}"))

    def _fail(self, error: BaseException) -> None:
        if self._closed is None:
            self._closed = error
        for future in (*self._replies.values(), *self._responses.values(), self._hello):
            if future is not None and not future.done():
                future.set_exception(error)
        for queue in self._runs.values():
            queue.put_nowait(None)

    def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message.get("channel")
        if channel in ("shell", "control"):
            parent = message.get("parent_header") or {}
            future = self._replies.pop(str(parent.get("msg_id")), None)
            if future is not None and not future.done():
                future.set_result(message)
            return
        header = message.get("header") or {}
        content = message.get("content") or {}
        if channel != "iopub":
            return
        msg_type = header.get("msg_type")
        if msg_type == "shutdown_reply" or (
            msg_type == "status" and content.get("execution_state") in _GONE
        ):
            # The server keeps the websocket across a restart (the kernel's shutdown reply is on
            # iopub); the new kernel has neither the extension nor this comm, so the link is
            # done and the next prompt makes a new one.
            self._fail(ChannelClosedError(f"kernel {self.kernel_id} restarted or died"))
            return
        if msg_type != "comm_msg":
            return
        if content.get("comm_id") != self.comm_id or not isinstance(content.get("data"), dict):
            return
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


def _result(envelope: dict[str, Any]) -> dict[str, Any]:
    if not envelope.get("ok"):
        raise KernelRequestError(str(envelope.get("error") or "the kernel refused the request"))
    result = envelope.get("result")
    return result if isinstance(result, dict) else {}
