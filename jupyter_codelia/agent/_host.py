"""The agent's answer to a tool's :class:`~..tools._host.RunHost`: questions and completions.

A question (an MCP elicitation form or link, a sampling approval, an OAuth sign-in link) becomes
a ``permission.request`` of its ``kind``, opened in the run's :class:`Approvals`: the kernel
prompt, the cell panel and the side panel answer it by request id exactly as they answer tool
approvals. "allow" accepts (with the form's values), "deny" declines. Where nobody can answer
(no host and no confirm callback) the question is declined at once, and a run that ends denies
what is still open, so a server never waits for a person who is not there.

A completion runs on the agent's own model without tools, after the budget check, and its usage
counts against the run's budget like any model call of the run; once the budget is reached a
completion is refused, and a tool asks ``completion_refusal`` first so that the person is not
asked to approve one that would be refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._redact import redact_secrets
from ..llm.messages import AssistantMessage, SystemMessage, UserMessage, text_projection
from ..tools._host import (
    CompletionRefusedError,
    CompletionReply,
    CompletionRequest,
    PersonAnswer,
    PersonQuestion,
)
from . import events as ev
from ._approvals import Approvals, first_answer

if TYPE_CHECKING:
    from ..llm.base import ChatModel
    from ._budget import BudgetMeter
    from ._permission_hook import ConfirmCallback


@dataclass
class AgentRunHost:
    """One run's host for tools (see the module docstring)."""

    approvals: Approvals
    confirm: ConfirmCallback | None
    host_answers: bool
    run_id: str
    emit: Callable[[Any], None]
    llm: ChatModel
    budget: BudgetMeter
    account: Callable[[Any], None]

    async def ask_person(self, question: PersonQuestion) -> PersonAnswer:
        if self.confirm is None and not self.host_answers:
            return PersonAnswer(action="decline", reason="nobody can answer here")
        request = redact_secrets(
            ev.PermissionRequestEvent(
                request_id=uuid.uuid4().hex,
                tool=question.source,
                title=question.title,
                message=question.message,
                kind=question.kind,
                url=question.url,
                fields=question.fields,
                args=question.details,
            )
        )
        pending = self.approvals.open(request, self.run_id)
        self.emit(request)
        try:
            response = await first_answer(pending, self.confirm)
        finally:
            self.approvals.close(pending)
        self.emit(
            ev.PermissionResolvedEvent(
                request_id=request.request_id,
                decision=response.decision,
                reason=(response.reason or "").strip() or None,
            )
        )
        if response.decision == "deny":
            return PersonAnswer(action="decline", reason=response.reason)
        return PersonAnswer(action="accept", content=response.content)

    async def completion_refusal(self) -> str | None:
        reached = self.budget.check()
        return None if reached is None else f"the {reached.reason}"

    async def complete(self, request: CompletionRequest) -> CompletionReply:
        refusal = await self.completion_refusal()
        if refusal is not None:
            raise CompletionRefusedError(refusal)
        messages: list[Any] = [SystemMessage(content=request.system)] if request.system else []
        for role, text in request.messages:
            messages.append(
                UserMessage(content=text) if role == "user" else AssistantMessage(content=text)
            )
        # The model's own output limit applies: providers take no per-call limit here.
        completion = await self.llm.ainvoke(messages)
        self.account(completion)
        text = "".join(
            text_projection(message.content)
            for message in completion.messages
            if isinstance(message, AssistantMessage) and message.content
        )
        stop = "maxTokens" if completion.stop_reason == "max_tokens" else "endTurn"
        return CompletionReply(
            text=text, model=getattr(self.llm, "model", "") or "", stop_reason=stop
        )
