"""Our comm protocol spoken to one kernel from outside it: :class:`KernelPeer`.

The side panel reaches the kernel's ``bridge.control()`` with a silent ``execute_request`` whose
user expression calls it (docs/comm-protocol.md "Control while a cell is busy"); the peer does
the same, for any process that holds a channel to the kernel: the Jupyter server extension
(``_server_channel.py``, through the server's kernel manager) or a separate process over the
server's kernel websocket. Where the kernel has subshells (ipykernel ≥ 7) each request goes on
a subshell of its own, so it is answered while a cell is busy; elsewhere it goes on the main
shell and waits until the running cell ends, and :attr:`PeerReply.queued` says so.

The peer also answers the kernel's ``codelia.notebook`` requests when no notebook tab does
(``on_notebook_request``): a tool that edits the notebook then still has someone to ask.

The transport is a :class:`KernelChannel`: three methods, Jupyter messages as JSON-ready dicts
(the kernel websocket's JSON form, ``channel`` included), so the peer never needs to know
whether ZMQ sockets, a gateway or a websocket carry them. Nothing here imports jupyter_server.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import CodeliaError

log = logging.getLogger("jupyter_codelia.server.kernel_peer")

ChannelName = Literal["shell", "control", "iopub", "stdin"]
PROTOCOL_VERSION = "5.4"
NOTEBOOK_TARGET = "codelia.notebook"
# The user expression the side panel uses too (labextension/src/connection.ts controlCode).
_CONTROL = '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control({payload})'
# Tells the kernel someone can answer its notebook requests (labextension notebookcomm.ts).
_TAB_OPENED = '__import__("jupyter_codelia.notebook.frontend", fromlist=["x"]).tab_opened()'
KERNEL_INFO_SECONDS = 10.0
# How long one kernel_info nudge waits for the first iopub message before the next is sent.
_NUDGE_SECONDS = 0.5
# How long the peer leaves the kernel's hello to a connected tab before it answers itself
# (below the kernel's 5 s probe, far above a tab's answer).
_TAB_GRACE_SECONDS = 3.0
# The kernel states after which nothing this peer set up there exists any more (the server's
# websocket says "restarting" and "dead"; the kernel itself sends shutdown_reply on iopub).
_GONE = ("restarting", "dead")
QUEUED_NOTE = (
    "this kernel has no subshells (ipykernel < 7 or another kernel): the call waited for the "
    "running cell to end"
)


class KernelChannel(Protocol):
    """A two-way message link to one kernel; what a transport must provide.

    Messages are Jupyter messages in the kernel websocket's JSON form: a dict with ``channel``
    (``"shell"``, ``"control"``, ``"iopub"`` or ``"stdin"``), ``msg_id``, ``msg_type``,
    ``header``, ``parent_header``,
    ``metadata`` and ``content`` (``buffers`` never used here). The peer builds complete headers
    (``msg_id``, ``msg_type``, ``session``, ``date`` as ISO text, and ``subshell_id`` when a
    request goes to a subshell); the channel signs and carries them unchanged.
    """

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message on ``message["channel"]`` (``shell`` or ``control``)."""
        ...

    async def receive(self) -> dict[str, Any]:
        """The next message from the kernel on any channel (iopub, shell or control replies to
        this channel's own requests), with ``channel`` set. Raises :class:`ChannelClosedError`
        once the link is gone."""
        ...

    async def close(self) -> None:
        """Release the link (idempotent)."""
        ...


class PeerError(CodeliaError, RuntimeError):
    """The kernel could not serve a request (its message says what to do)."""


class ChannelClosedError(PeerError):
    """The link to the kernel is gone (the kernel died, restarted or was shut down)."""


class PeerTimeoutError(PeerError):
    """The kernel did not answer in time; what it was doing goes on in the kernel."""


class KernelRequestError(PeerError):
    """The kernel answered the request with ``ok: false``; the message is the kernel's."""


@dataclass
class Execution:
    """Code the peer runs on the kernel's main shell, as a person's cell runs: its iopub
    messages (outputs, in order) as they come, and ``done`` once the kernel is idle again."""

    messages: list[dict[str, Any]]
    done: asyncio.Event
    reply: dict[str, Any] | None = None


@dataclass(frozen=True)
class PeerReply:
    """One answered request: its result, and whether it waited for a busy main shell."""

    result: dict[str, Any]
    queued: bool = False


NotebookAnswerer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class KernelPeer:
    """Requests to one kernel's ``bridge.control()`` over a :class:`KernelChannel`.

    ``has_tab`` says whether a websocket (a notebook tab, or another tool) is connected to the
    kernel: while one is, a tab has the first chance to answer the kernel's hello, and then the
    kernel's notebook requests go to it. ``on_notebook_request`` gets each ``notebook.request``
    the kernel addresses to this peer and returns its result (raising
    :class:`~jupyter_codelia.errors.CodeliaError` refuses it with its message).
    """

    def __init__(
        self,
        channel: KernelChannel,
        *,
        on_notebook_request: NotebookAnswerer | None = None,
        has_tab: Callable[[], bool] = lambda: False,
    ) -> None:
        self.channel = channel
        self.session = uuid.uuid4().hex
        self.on_notebook_request = on_notebook_request
        self.has_tab = has_tab
        self.subshells: bool | None = None
        """Whether the kernel makes subshells (known after :meth:`start`)."""
        self._busy: set[str] = set()
        """The main-shell requests the kernel said it is busy with (iopub status)."""
        self._own: set[str] = set()
        """This peer's main-shell requests whose idle status has not come yet."""
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._free_subshells: list[str] = []
        self._notebook_comms: set[str] = set()
        self._reader: asyncio.Task[None] | None = None
        self._answering: set[asyncio.Task[None]] = set()
        self._closed: BaseException | None = None
        self._start_lock = asyncio.Lock()
        self._started = False
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        self._on_closed: list[Callable[[BaseException], None]] = []
        self._executions: dict[str, Execution] = {}
        self._iopub_seen = asyncio.Event()

    # ------------------------------------------------------------------ life

    async def start(self) -> None:
        """Start reading, learn whether the kernel has subshells (idempotent)."""
        async with self._start_lock:
            if self._started:
                return
            self._reader = asyncio.ensure_future(self._read())
            info = await self._nudge()
            features = info.get("content", {}).get("supported_features") or []
            self.subshells = "kernel subshells" in features
            self._started = True
            if self.on_notebook_request is not None:
                # Without this the kernel asks nobody (it waits for a tab to announce itself).
                await self._expression(_TAB_OPENED, None)

    async def _nudge(self) -> dict[str, Any]:
        """The kernel's info, once an iopub message has come too.

        A ZMQ subscription takes effect a moment after it is made, and what the kernel publishes
        before that is lost: a cell's outputs, a notebook request on a comm, whose asker would
        wait forever. So, as the Jupyter server does for its websockets, ``kernel_info`` is asked
        again until the kernel's busy/idle status for one of them is seen on iopub."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + KERNEL_INFO_SECONDS
        while True:
            info = await self._ask("control", "kernel_info_request", {}, KERNEL_INFO_SECONDS)
            try:
                await asyncio.wait_for(self._iopub_seen.wait(), _NUDGE_SECONDS)
            except asyncio.TimeoutError:
                if loop.time() < deadline:
                    continue
                raise PeerTimeoutError(
                    f"the kernel answered but none of its iopub messages came within "
                    f"{KERNEL_INFO_SECONDS:g} s: its outputs cannot be read"
                ) from None
            return info

    async def close(self) -> None:
        """Stop reading and release the channel; open requests fail with ChannelClosedError."""
        self._fail_waiting(ChannelClosedError("the kernel peer was closed"))
        for task in (self._reader, *self._answering):
            if task is not None:
                task.cancel()
        await self.channel.close()

    @property
    def closed(self) -> bool:
        """Whether the link is gone: a new peer is needed to reach the kernel again."""
        return self._closed is not None

    @property
    def busy(self) -> bool:
        """Whether the kernel's main shell runs something other than this peer's requests."""
        return bool(self._busy - self._own)

    def listen(self, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener`` with every iopub message (the side panel's agent events arrive
        as ``comm_msg``s there); returns the function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def when_closed(self, callback: Callable[[BaseException], None]) -> None:
        """Call ``callback`` with the reason once the link is gone (the channel failed, the
        kernel restarted or died, or :meth:`close`); at once if it is gone already."""
        if self._closed is not None:
            callback(self._closed)
        else:
            self._on_closed.append(callback)

    # ------------------------------------------------------------------ requests

    async def request(
        self, kind: str, fields: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> PeerReply:
        """Send the request ``kind`` to ``bridge.control()``; its result.

        Raises :class:`KernelRequestError` with the kernel's message when it refused,
        :class:`PeerTimeoutError` when no answer came within ``timeout`` seconds.
        """
        await self.start()
        payload = {"type": kind, "request_id": uuid.uuid4().hex, **(fields or {})}
        code = _CONTROL.format(payload=json.dumps(json.dumps(payload)))
        subshell = await self._take_subshell() if self.subshells else None
        queued = subshell is None and self.busy
        try:
            outcome = await self._expression(code, subshell, timeout)
        finally:
            if subshell is not None:
                self._free_subshells.append(subshell)
        envelope = _envelope(outcome)
        if not envelope.get("ok"):
            raise KernelRequestError(str(envelope.get("error") or "the kernel refused"))
        result = envelope.get("result")
        return PeerReply(result if isinstance(result, dict) else {}, queued=queued)

    async def execute(self, code: str) -> Execution:
        """Start ``code`` on the main shell, counted and kept in the history like a cell the
        person runs; the :class:`Execution` fills as the kernel works."""
        await self.start()
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "allow_stdin": False,
            "stop_on_error": True,
            "user_expressions": {},
        }
        message = self._message("shell", "execute_request", content, None)
        msg_id = message["header"]["msg_id"]
        execution = Execution(messages=[], done=asyncio.Event())
        self._executions[msg_id] = execution
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future

        def replied(answer: asyncio.Future[dict[str, Any]]) -> None:
            self._waiting.pop(msg_id, None)
            if not answer.cancelled() and answer.exception() is None:
                execution.reply = answer.result().get("content") or {}

        future.add_done_callback(replied)
        await self.channel.send(message)
        return execution

    async def send(self, msg_type: str, content: dict[str, Any]) -> None:
        """Send one shell message that gets no reply of its own (``comm_open``, ``comm_msg``,
        ``comm_close``); what the kernel answers comes on iopub, to :meth:`listen`."""
        await self.start()
        if self._closed is not None:
            raise ChannelClosedError(str(self._closed))
        message = self._message("shell", msg_type, content, None)
        self._own.add(message["header"]["msg_id"])
        await self.channel.send(message)

    async def run_quietly(self, code: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Run ``code`` on the main shell, silent and kept out of the history (``%load_ext``);
        the reply's content (``status``, and ``ename`` / ``evalue`` when it failed)."""
        await self.start()
        content = {
            "code": code,
            "silent": True,
            "store_history": False,
            "allow_stdin": False,
            "stop_on_error": False,
            "user_expressions": {},
        }
        reply = await self._ask("shell", "execute_request", content, timeout)
        body = reply.get("content")
        return body if isinstance(body, dict) else {}

    async def interrupt(self) -> None:
        """Interrupt what the main shell runs (an ``interrupt_request`` on control)."""
        await self.start()
        await self._ask("control", "interrupt_request", {}, KERNEL_INFO_SECONDS)

    async def _expression(
        self, code: str, subshell: str | None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Evaluate ``code`` as a silent user expression; the expression's outcome."""
        content = {
            "code": "",
            "silent": True,
            "store_history": False,
            "allow_stdin": False,
            "stop_on_error": False,
            "user_expressions": {"response": code},
        }
        reply = await self._ask("shell", "execute_request", content, timeout, subshell=subshell)
        body = reply.get("content", {})
        if body.get("status") != "ok":
            raise PeerError(
                f"the kernel could not take the request ({body.get('ename')}: {body.get('evalue')})"
            )
        outcome = (body.get("user_expressions") or {}).get("response") or {}
        return outcome if isinstance(outcome, dict) else {}

    async def _take_subshell(self) -> str | None:
        """A subshell for one request: a free one, else a new one (None if none can be made).

        One per concurrent request, so a long call does not hold up the next."""
        if self._free_subshells:
            return self._free_subshells.pop()
        reply = await self._ask("control", "create_subshell_request", {}, KERNEL_INFO_SECONDS)
        subshell_id = reply.get("content", {}).get("subshell_id")
        if not isinstance(subshell_id, str):
            self.subshells = False
            return None
        return subshell_id

    async def _ask(
        self,
        channel: Literal["shell", "control"],
        msg_type: str,
        content: dict[str, Any],
        timeout: float | None,
        *,
        subshell: str | None = None,
    ) -> dict[str, Any]:
        if self._closed is not None:
            raise ChannelClosedError(str(self._closed))
        message = self._message(channel, msg_type, content, subshell)
        msg_id = message["header"]["msg_id"]
        if channel == "shell" and subshell is None:
            self._own.add(msg_id)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        try:
            await self.channel.send(message)
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise PeerTimeoutError(
                f"the kernel did not answer {msg_type} within {timeout:g} s; whatever it was "
                "doing goes on in the kernel"
            ) from None
        finally:
            self._waiting.pop(msg_id, None)

    def _message(
        self, channel: str, msg_type: str, content: dict[str, Any], subshell: str | None
    ) -> dict[str, Any]:
        header: dict[str, Any] = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": msg_type,
            "session": self.session,
            "username": "codelia",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "version": PROTOCOL_VERSION,
        }
        if subshell is not None:
            header["subshell_id"] = subshell
        return {
            "channel": channel,
            # Also at the top, as the kernel websocket's JSON messages carry them.
            "msg_id": header["msg_id"],
            "msg_type": msg_type,
            "header": header,
            "parent_header": {},
            "metadata": {},
            "content": content,
        }

    # ------------------------------------------------------------------ receiving

    async def _read(self) -> None:
        try:
            while True:
                message = await self.channel.receive()
                self._dispatch(message)
        except asyncio.CancelledError:
            raise
        except ChannelClosedError as exc:
            self._fail_waiting(exc)
        except Exception as exc:  # a broken transport ends the peer, never silently
            log.exception("the kernel channel failed")
            self._fail_waiting(ChannelClosedError(f"the kernel channel failed: {exc}"))

    def _fail_waiting(self, error: BaseException) -> None:
        if self._closed is None:
            self._closed = error
        callbacks, self._on_closed = self._on_closed, []
        for callback in callbacks:
            try:
                callback(error)
            except Exception:
                log.exception("a kernel peer close callback failed")
        for execution in self._executions.values():
            execution.done.set()
        self._executions.clear()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(error)
        self._waiting.clear()

    def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message.get("channel")
        parent = message.get("parent_header") or {}
        if channel in ("shell", "control"):
            future = self._waiting.get(str(parent.get("msg_id")))
            if future is not None and not future.done():
                future.set_result(message)
            return
        if channel != "iopub":
            return
        self._iopub_seen.set()
        msg_type = message.get("header", {}).get("msg_type")
        content = message.get("content") or {}
        if msg_type == "shutdown_reply" or (
            msg_type == "status" and content.get("execution_state") in _GONE
        ):
            # A restart keeps the transport (the server's websocket, the ZMQ ports) but not
            # what the peer knows: the subshells, the comms, the extension. A new peer is needed.
            self._fail_waiting(ChannelClosedError("the kernel restarted or died"))
        for listener in list(self._listeners):
            try:
                listener(message)
            except Exception:  # one listener's failure must not stop the reading
                log.exception("a kernel peer listener failed")
        execution = self._executions.get(str(parent.get("msg_id")))
        if execution is not None:
            if msg_type == "status" and content.get("execution_state") == "idle":
                del self._executions[str(parent.get("msg_id"))]
                execution.done.set()
            elif msg_type != "status":
                execution.messages.append(message)
        if msg_type == "status" and not parent.get("subshell_id"):
            # The main shell's state (subshell requests carry their subshell's id).
            parent_id = str(parent.get("msg_id"))
            if content.get("execution_state") == "busy":
                self._busy.add(parent_id)
            elif content.get("execution_state") == "idle":
                self._busy.discard(parent_id)
                self._own.discard(parent_id)
            else:  # starting: a new kernel process is busy with nothing of before
                self._busy.clear()
                self._own.clear()
        elif msg_type in ("comm_open", "comm_msg"):
            self._notebook_message(msg_type, content)
        elif msg_type == "comm_close":
            self._notebook_comms.discard(str(content.get("comm_id")))

    # ------------------------------------------------------------------ notebook requests

    def _notebook_message(self, msg_type: str, content: dict[str, Any]) -> None:
        if self.on_notebook_request is None:
            return
        comm_id = str(content.get("comm_id"))
        data = content.get("data")
        if not isinstance(data, dict):
            return
        if msg_type == "comm_open":
            if content.get("target_name") != NOTEBOOK_TARGET or data.get("type") != "hello":
                return
            self._notebook_comms.add(comm_id)
            hello = {"client_id": self._client_id, "client": "server", "subshells": True}
            # A connected websocket may be a tab, which answers at once and wins (the kernel
            # takes the first hello and drops the rest), or another tool that holds a kernel
            # websocket (an MCP server, an editor), which never answers: so the peer answers
            # too, late enough for a tab, in time for the kernel's probe.
            grace = _TAB_GRACE_SECONDS if self.has_tab() else 0.0
            self._answer_later(str(data.get("request_id")), lambda: _resolved(hello, grace))
        elif (
            comm_id in self._notebook_comms
            and data.get("type") == "notebook.request"
            # Every listener on the comm sees every request: answer only those the kernel
            # addressed to this peer, never a tab's (the tab has the live notebook).
            and data.get("client_id") == self._client_id
        ):
            answer = self.on_notebook_request
            self._answer_later(str(data.get("request_id")), lambda: answer(data))

    @property
    def _client_id(self) -> str:
        """The id this peer gives in its hello, which the kernel's requests to it carry."""
        return f"server-{self.session}"

    def _answer_later(
        self, reply_to: str, produce: Callable[[], Awaitable[dict[str, Any]]]
    ) -> None:
        async def answer() -> None:
            reply: dict[str, Any] = {"reply_to": reply_to, "ok": True}
            try:
                reply["result"] = await produce()
            except CodeliaError as exc:
                reply.update(ok=False, error=str(exc))
            except Exception as exc:
                log.exception("answering a notebook request failed")
                reply.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(PeerError):
                await self.request("notebook.reply", reply)

        task = asyncio.ensure_future(answer())
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)


async def _resolved(value: dict[str, Any], after: float = 0.0) -> dict[str, Any]:
    if after:
        await asyncio.sleep(after)
    return value


def _envelope(outcome: dict[str, Any]) -> dict[str, Any]:
    """The response envelope inside a ``control()`` user expression's outcome."""
    if outcome.get("status") != "ok":
        ename, evalue = outcome.get("ename"), outcome.get("evalue")
        if ename == "ModuleNotFoundError":
            raise PeerError(
                "jupyter-codelia is not installed in this kernel's environment "
                f"({evalue}); install it there and restart the kernel"
            )
        raise PeerError(f"the kernel could not run the request ({ename}: {evalue})")
    data = outcome.get("data") or {}
    envelope = data.get("application/json")
    if isinstance(envelope, dict):
        return envelope
    text = data.get("text/plain")
    if isinstance(text, str):
        import ast

        with contextlib.suppress(ValueError, SyntaxError):
            decoded = json.loads(ast.literal_eval(text))
            if isinstance(decoded, dict):
                return decoded
    raise PeerError("the kernel returned no response to the request")
