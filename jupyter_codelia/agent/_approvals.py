"""Approval requests: one question to a person and its one answer, whichever UI gives it first.

When the permission policy says *confirm*, the agent opens an :class:`ApprovalRequest` in its
:class:`Approvals` and announces it with a ``permission.request`` event. The request itself is
the channel its answer travels back on: a kernel input prompt, a button in the cell panel or
the side panel (over the comm) answer it by id through :meth:`Approvals.answer`, from any
thread. The first answer wins and later ones are refused, so two UIs showing the same request
never both decide it. A host that leaves nobody to answer denies what is still open when the
run ends (:meth:`Approvals.deny_open`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from .._approval import Decision
from . import events as ev


class ConfirmResponse(BaseModel):
    """A person's answer to a permission request (``content``: a filled-in form's values)."""

    decision: Decision
    reason: str | None = None
    content: dict[str, Any] | None = None


class ApprovalRequest:
    """An open permission request (``event``) and the answer it is waiting for."""

    def __init__(self, event: ev.PermissionRequestEvent, run_id: str | None) -> None:
        self.event = event
        self.run_id = run_id
        # A concurrent future: answers come from other threads (the cell's, the comm's).
        self._answer: concurrent.futures.Future[ConfirmResponse] = concurrent.futures.Future()

    @property
    def request_id(self) -> str:
        return self.event.request_id

    @property
    def answered(self) -> bool:
        return self._answer.done()

    def answer(self, response: ConfirmResponse) -> bool:
        """Give the answer (thread-safe); False when the request was already answered."""
        try:
            self._answer.set_result(response)
        except concurrent.futures.InvalidStateError:
            return False
        return True

    def when_answered(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the answering thread) once an answer is in, or now if it is."""
        self._answer.add_done_callback(lambda _future: callback())

    async def response(self) -> ConfirmResponse:
        """Wait for the answer on the running event loop."""
        return await asyncio.wrap_future(self._answer)


class Approvals:
    """The open approval requests of one or more agents, by request id (thread-safe)."""

    def __init__(self) -> None:
        self._open: dict[str, ApprovalRequest] = {}
        self._lock = threading.Lock()

    def open(self, event: ev.PermissionRequestEvent, run_id: str | None) -> ApprovalRequest:
        request = ApprovalRequest(event, run_id)
        with self._lock:
            self._open[request.request_id] = request
        return request

    def close(self, request: ApprovalRequest) -> None:
        with self._lock:
            self._open.pop(request.request_id, None)

    def get(self, request_id: str) -> ApprovalRequest | None:
        with self._lock:
            return self._open.get(request_id)

    def answer(
        self,
        request_id: str,
        decision: str,
        reason: str | None = None,
        content: dict[str, Any] | None = None,
    ) -> bool:
        """Answer the open request ``request_id``; False when there is none or it is answered.

        ``decision`` is validated (a front end sends a plain string): anything but ``allow``,
        ``allow_remember`` or ``deny`` raises pydantic's ``ValidationError``. ``content``: the
        values of a form the request asked for (an MCP elicitation)."""
        request = self.get(request_id)
        if request is None:
            return False
        response = ConfirmResponse.model_validate(
            {"decision": decision, "reason": reason, "content": content}
        )
        return request.answer(response)

    def open_requests(self, run_id: str | None = None) -> list[ApprovalRequest]:
        """The requests still waiting (of ``run_id`` only, when given), oldest first."""
        with self._lock:
            return [r for r in self._open.values() if run_id is None or r.run_id == run_id]

    def deny_open(self, reason: str, *, run_id: str | None = None) -> int:
        """Deny every open request (of ``run_id`` only, when given); how many were denied."""
        denied = ConfirmResponse(decision="deny", reason=reason)
        return sum(request.answer(denied) for request in self.open_requests(run_id))


async def first_answer(
    request: ApprovalRequest,
    confirm: Callable[[ev.PermissionRequestEvent], Awaitable[ConfirmResponse]] | None,
) -> ConfirmResponse:
    """The request's first answer: the confirm callback's or one given through ``Approvals``.

    A callback that raises fails the wait (the caller's check fails with it)."""
    if confirm is None:
        return await request.response()
    asker = asyncio.ensure_future(confirm(request.event))
    waiter = asyncio.ensure_future(request.response())
    try:
        done, _ = await asyncio.wait({asker, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if asker in done:
            request.answer(asker.result())  # refused when another UI answered first
        return await waiter
    finally:
        asker.cancel()
        waiter.cancel()
