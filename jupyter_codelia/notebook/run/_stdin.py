"""Who can answer a blocking cell's approvals, decided once, from the cell's own request.

A blocking ``%%codelia`` cell asks its approvals at the kernel's input prompt when the cell's
front end answers ``input()`` (its execute request said ``allow_stdin: true``), and always in
its panel's buttons and the side panel where the jupyter-codelia extension is loaded. What the
cell's request said is captured on the cell's thread when the run starts: ipykernel keeps
``_allow_stdin`` kernel-wide, and every execute request the side panel sends on a subshell
meanwhile (``allow_stdin: false``) overwrites it.

The prompt is the kernel's own ``input_request`` on the stdin channel, awaited here rather than
through ``input()``: when the side panel or a button answers first, the wait simply ends (no
exception is pushed into the cell's thread), and a late reply to the abandoned prompt is told
apart by its parent message id and dropped.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..ui._viewer import cell_allows_stdin, cell_request

if TYPE_CHECKING:
    from .._shell import KernelShell

POLL_SECONDS = 0.05
"""How often the wait looks at the answer's other routes (a KeyboardInterrupt gets in between)."""


class Reader(Protocol):
    def read(self, prompt: str, answered: Callable[[], bool]) -> str | None:
        """One answer line; ``None`` once ``answered()`` (another UI answered first)."""
        ...


def _drop_pending(socket: Any) -> None:
    import zmq

    while True:
        try:
            socket.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return


@dataclass
class KernelStdin:
    """The running cell's stdin channel: its kernel, request and the front end's socket id."""

    kernel: Any
    parent: dict[str, Any]
    ident: Any

    def read(self, prompt: str, answered: Callable[[], bool]) -> str | None:
        import zmq

        kernel = self.kernel
        socket = kernel.stdin_socket
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()  # what the cell printed shows above the prompt
        _drop_pending(socket)  # answers to prompts abandoned earlier, as ipykernel does
        sent = kernel.session.send(
            socket,
            "input_request",
            {"prompt": prompt, "password": False},
            self.parent,
            ident=self.ident,
        )
        asked = sent["header"]["msg_id"]
        # Front ends name the prompt they answer in the reply's parent header (JupyterLab
        # does; jupyter_client's ``input()`` sends none): a reply naming another prompt is late.
        while not answered():
            readable, _, failed = zmq.select([socket], [], [socket], POLL_SECONDS)
            if not (readable or failed):
                continue
            try:
                _ident, reply = kernel.session.recv(socket)
            except ValueError:  # a badly signed or malformed message: not an answer
                continue
            if not reply or (reply.get("parent_header") or {}).get("msg_id") not in (None, asked):
                continue  # a late answer to a prompt abandoned earlier
            value = str((reply.get("content") or {}).get("value", ""))
            if value == "\x04":
                raise EOFError
            return value
        return None


class PlainInput:
    """``input()`` of a shell without a kernel (a terminal IPython): nobody else can answer."""

    def read(self, prompt: str, answered: Callable[[], bool]) -> str | None:
        return input(prompt)


def cell_reader(shell: KernelShell) -> Reader | None:
    """The running cell's input prompt, or None when its front end takes no input.

    Call it on the cell's own thread, when the run starts."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return PlainInput()
    if not cell_allows_stdin(shell):
        return None
    # ipykernel keeps the id of the front end's socket per request (``_parent_ident`` is its
    # mapping for every version since 6); the reply is routed back to that front end.
    return KernelStdin(kernel, cell_request(shell), kernel._parent_ident["shell"])
