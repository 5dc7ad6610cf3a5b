"""Approvals: one request, one answer, from whichever UI answers first, from any thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from jupyter_codelia.agent import Agent, ApprovalRequest, Approvals, ConfirmResponse
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent.permissions import PermissionPolicy
from jupyter_codelia.llm import ChatModel
from jupyter_codelia.testing import ScriptedServer, reply, text, tool_use

from .conftest import add


def _agent(chat: ChatModel, **kwargs: Any) -> Agent:
    return Agent(chat, [add], permissions=PermissionPolicy(mode="minimal"), **kwargs)


def _results(events: list[Any]) -> list[str]:
    return [e.result for e in events if isinstance(e, ev.ToolResultEvent)]


def _answer_from_another_thread(approvals: Approvals, event: Any, *answers: Any) -> list[bool]:
    """Answer ``event``'s request from a thread of its own, as the comm or a cell would."""
    outcomes: list[bool] = []

    def answer() -> None:
        outcomes.extend(approvals.answer(event.request_id, *a) for a in answers)

    thread = threading.Thread(target=answer)
    thread.start()
    thread.join()
    return outcomes


@pytest.mark.asyncio
async def test_a_host_answers_through_the_agents_approvals_and_the_first_answer_wins(
    server: ScriptedServer, chat: ChatModel
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("3")))
    approvals = Approvals()
    agent = _agent(chat, approvals=approvals)
    events, outcomes = [], []
    async for event in agent.run_stream("add"):
        events.append(event)
        if isinstance(event, ev.PermissionRequestEvent):
            (request,) = approvals.open_requests()
            assert request.request_id == event.request_id and not request.answered
            # Two UIs answer the same request: only the first decides it.
            outcomes = _answer_from_another_thread(
                approvals, event, ("allow", None), ("deny", "too late")
            )
    assert outcomes == [True, False]
    assert _results(events) == ["3"]
    resolved = [e for e in events if isinstance(e, ev.PermissionResolvedEvent)]
    assert [r.decision for r in resolved] == ["allow"]
    assert approvals.open_requests() == []  # answered requests are closed
    assert not approvals.answer(resolved[0].request_id, "deny")  # nothing left to answer


@pytest.mark.asyncio
async def test_an_answer_from_a_ui_beats_a_confirm_callback_that_is_still_waiting(
    server: ScriptedServer, chat: ChatModel
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("OK, not adding.")))
    approvals = Approvals()
    callback_cancelled = asyncio.Event()

    async def never_answers(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            callback_cancelled.set()
            raise
        raise AssertionError("unreachable")

    agent = _agent(chat, approvals=approvals, confirm=never_answers)
    events = []
    async for event in agent.run_stream("add"):
        events.append(event)
        if isinstance(event, ev.PermissionRequestEvent):
            _answer_from_another_thread(approvals, event, ("deny", "use a calculator"))
    assert _results(events) == ["Permission denied: use a calculator"]
    assert callback_cancelled.is_set()  # the callback's wait was given up, not leaked


@pytest.mark.asyncio
async def test_the_confirm_callback_answers_and_a_later_ui_answer_is_refused(
    server: ScriptedServer, chat: ChatModel
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("3")))
    approvals = Approvals()
    seen: list[ApprovalRequest] = []

    async def allow(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        open_request = approvals.get(request.request_id)
        assert open_request is not None
        seen.append(open_request)
        return ConfirmResponse(decision="allow")

    agent = _agent(chat, approvals=approvals, confirm=allow)
    events = [e async for e in agent.run_stream("add")]
    assert _results(events) == ["3"]
    assert seen[0].answered and not seen[0].answer(ConfirmResponse(decision="deny"))


@pytest.mark.asyncio
async def test_a_confirm_callback_that_fails_fails_the_permission_check(
    server: ScriptedServer, chat: ChatModel
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("could not")))

    async def broken(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        raise RuntimeError("the dialog crashed")

    agent = _agent(chat, confirm=broken)
    events = [e async for e in agent.run_stream("add")]
    assert _results(events) == ["Permission check failed: the dialog crashed"]
    assert agent.approvals.open_requests() == []


@pytest.mark.asyncio
async def test_deny_open_answers_only_the_requests_of_that_run(
    server: ScriptedServer, chat: ChatModel
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("stopped")))
    approvals = Approvals()
    other_run = approvals.open(
        ev.PermissionRequestEvent(request_id="other", tool="add", title="t", message="m"),
        "another-run",
    )
    agent = _agent(chat, approvals=approvals)
    events, denied = [], []
    async for event in agent.run_stream("add", run_id="this-run"):
        events.append(event)
        if isinstance(event, ev.PermissionRequestEvent):
            denied.append(approvals.deny_open("the run ended", run_id="this-run"))
    assert denied == [1]
    assert _results(events) == ["Permission denied: the run ended"]
    assert not other_run.answered and approvals.open_requests() == [other_run]


@pytest.mark.asyncio
async def test_without_a_callback_or_a_host_nobody_is_waited_for(
    server: ScriptedServer, chat: ChatModel
) -> None:
    server.add(reply(tool_use("add", {"a": 1, "b": 2})), reply(text("denied")))
    agent = _agent(chat)  # the agent's own Approvals, but no host said it would answer
    events = [e async for e in agent.run_stream("add")]
    assert _results(events) == ["Permission denied: UI confirm not supported"]
    assert not any(isinstance(e, ev.PermissionRequestEvent) for e in events)


def test_an_answer_that_is_not_a_decision_is_refused_and_leaves_the_request_open() -> None:
    from pydantic import ValidationError

    approvals = Approvals()
    request = approvals.open(
        ev.PermissionRequestEvent(request_id="r1", tool="add", title="t", message="m"), "run"
    )
    with pytest.raises(ValidationError, match="'allow', 'allow_remember' or 'deny'"):
        approvals.answer("r1", "maybe")
    assert not request.answered
    assert not approvals.answer("unknown-id", "allow")  # no such request: nothing answered
    assert approvals.answer("r1", "allow") and request.answered
