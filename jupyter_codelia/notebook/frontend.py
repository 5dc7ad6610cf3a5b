"""Kernel → front end requests over the ``codelia.notebook`` comm (docs/comm-protocol.md).

The kernel opens a comm with target ``codelia.notebook``; the JupyterLab / Notebook 7 extension
registers that target on every notebook's kernel and answers the ``hello`` with its client id.
Requests travel on that comm (kernel → front end messages go out on IOPub, so they arrive even
while a cell is busy). Answers come back as ``notebook.reply`` requests: through
:func:`jupyter_codelia.notebook.bridge.control` on a kernel subshell when the kernel has them
(a busy cell does not block a subshell) or on the comm otherwise (delivered once the main shell
is idle, which is enough for background runs).

:meth:`FrontendClient.call` blocks the calling thread until the answer arrives; tools call it
through ``asyncio.to_thread``. A kernel that no front end answers (nbclient, VS Code, classic
Notebook) raises :class:`FrontendUnavailableError` after a short probe, remembered for a minute so
headless runs do not pay the probe on every call.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CodeliaError

if TYPE_CHECKING:
    from ..wire import NotebookAction

TARGET = "codelia.notebook"
PROBE_SECONDS = 5.0
ABSENT_RETRY_SECONDS = 60.0
DEFAULT_REPLY_SECONDS = 30.0
NO_FRONTEND = (
    "no JupyterLab or Notebook 7 tab with the jupyter-codelia extension answered for this "
    "kernel (VS Code, Colab, classic Notebook and headless runs such as nbclient cannot show "
    "agent edits; a JupyterLab tab opened before jupyter-codelia was installed needs a reload)"
)


class FrontendError(CodeliaError, RuntimeError):
    """The front end answered a request with an error."""


class FrontendUnavailableError(FrontendError):
    """No front end answers: the notebook tools fall back or refuse."""


class FrontendTimeoutError(FrontendError):
    """A front end that answered before did not answer this request in time."""


@dataclass
class FrontendInfo:
    client_id: str
    client: str
    path: str | None
    subshells: bool


class FrontendClient:
    """One per kernel: the comm to the notebook front end and the open requests."""

    def __init__(self, probe_seconds: float = PROBE_SECONDS) -> None:
        self.probe_seconds = probe_seconds
        self.info: FrontendInfo | None = None
        self._comm: Any = None
        self._pending: dict[str, concurrent.futures.Future[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._connect_lock = threading.Lock()
        self._absent_until = 0.0
        # Set when a labextension tab announced itself; until then no front end can answer,
        # so headless kernels (nbclient, VS Code) never wait for a probe.
        self.tab_seen = False

    def tab_opened(self) -> None:
        self.tab_seen = True
        self.forget()

    def tell_tabs(self, message: dict[str, Any]) -> None:
        """Send ``message`` to every notebook tab on this kernel, once one has attached: the
        data of a one-shot comm, whose open reaches them all even while a cell is busy."""
        if not self.tab_seen:
            return
        from comm import create_comm

        create_comm(target_name=TARGET, data=message).close()

    # ------------------------------------------------------------------ answers

    def resolve(self, reply_to: str, ok: bool, result: Any, error: str | None) -> bool:
        """Deliver one ``notebook.reply`` (thread-safe); False when nobody waits for it."""
        with self._lock:
            future = self._pending.pop(reply_to, None)
        if future is None or future.done():
            return False
        if ok:
            future.set_result(result if isinstance(result, dict) else {})
        else:
            future.set_exception(FrontendError(error or "the front end refused the request"))
        return True

    def _on_comm_msg(self, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data")
        if isinstance(data, dict) and isinstance(data.get("reply_to"), str):
            ok, error = bool(data.get("ok")), data.get("error")
            self.resolve(data["reply_to"], ok, data.get("result"), error)

    def forget(self) -> None:
        """Drop the known front end: the next call greets whoever answers on a new comm.

        The old comm is left open, not closed: a reloaded tab never knew it and would log
        a "comm not found" error for the close.
        """
        with self._lock:
            self._comm = None
            self.info = None
        self._absent_until = 0.0

    # ------------------------------------------------------------------ requests

    def _wait(self, request_id: str, send: Any, timeout: float) -> dict[str, Any]:
        future: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        with self._lock:
            self._pending[request_id] = future
        try:
            send()
            return future.result(timeout)
        finally:
            with self._lock:
                self._pending.pop(request_id, None)

    def connect(self) -> FrontendInfo:
        """The answering front end, probing with a new comm when none is known."""
        with self._connect_lock:
            if self.info is not None and self._comm is not None:
                return self.info
            if not self.tab_seen or time.monotonic() < self._absent_until:
                raise FrontendUnavailableError(NO_FRONTEND)
            request_id = uuid.uuid4().hex
            holder: list[Any] = []

            def open_comm() -> None:
                from comm import create_comm

                from ..wire import NotebookHello

                hello = NotebookHello(request_id=request_id).dump()
                comm = create_comm(target_name=TARGET, data=hello)
                comm.on_msg(self._on_comm_msg)
                holder.append(comm)

            try:
                hello = self._wait(request_id, open_comm, self.probe_seconds)
            except concurrent.futures.TimeoutError:
                self._absent_until = time.monotonic() + ABSENT_RETRY_SECONDS
                raise FrontendUnavailableError(NO_FRONTEND) from None
            self._comm = holder[0]
            self.info = FrontendInfo(
                client_id=str(hello.get("client_id") or ""),
                client=str(hello.get("client") or "jupyterlab"),
                path=hello.get("path") if isinstance(hello.get("path"), str) else None,
                subshells=bool(hello.get("subshells")),
            )
            return self.info

    def call(
        self, action: NotebookAction, params: dict[str, Any], timeout: float = DEFAULT_REPLY_SECONDS
    ) -> dict[str, Any]:
        """Send one request to the notebook front end and wait for its result."""
        info = self.connect()
        request_id = uuid.uuid4().hex
        comm = self._comm
        from ..wire import NotebookRequest

        message = NotebookRequest(
            request_id=request_id, client_id=info.client_id, action=action, params=params
        ).dump()
        try:
            return self._wait(request_id, lambda: comm.send(message), timeout)
        except concurrent.futures.TimeoutError:
            self.forget()
            raise FrontendTimeoutError(
                f"the notebook front end did not answer {action} within {timeout:g} s "
                "(was the tab closed or reloaded?)"
            ) from None


def tab_opened() -> None:
    """A notebook tab (re)attached to this kernel: greet it before the next request.

    The labextension calls this (a silent user expression) when it starts following a kernel,
    so the tools know a front end can answer, and a reloaded page is asked for a hello instead
    of a request waiting out its timeout on a comm the page never saw.
    """
    from IPython import get_ipython

    from .extension import kernel_extension

    shell = get_ipython()
    if shell is not None:
        kernel_extension(shell).frontend.tab_opened()
