"""What a tool may ask of the run that called it: a person's answer, or a model completion.

Some tools relay questions from elsewhere (an MCP server's elicitation form, its sampling
request, an OAuth sign-in link). They resolve :data:`RUN_HOST` from their context; the agent
provides it (``agent/_host.py``), answering through the same approval channel as permission
requests, so the kernel prompt, the cell panel and the side panel all answer by request id.
Without a host (a bare ``ToolContext()``), nobody can answer: a question is declined and a
completion refused, cleanly.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from ..errors import CodeliaError
from ._context import DependencyKey

QuestionKind = Literal["elicitation", "sampling", "authorization"]


class PersonQuestion(BaseModel):
    """One question to the person (``fields``: a flat JSON schema of a form to fill)."""

    kind: QuestionKind
    source: str
    """Who asks, as the person reads it ("MCP server 'github'")."""
    title: str
    message: str
    url: str | None = None
    fields: dict[str, Any] | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class PersonAnswer(BaseModel):
    """``accept`` (with the form's ``content``), ``decline``, or ``cancel`` (nobody answered)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    reason: str | None = None


class CompletionRequest(BaseModel):
    """A completion someone else asks of the run's model (text in, text out)."""

    messages: list[tuple[Literal["user", "assistant"], str]]
    system: str | None = None
    max_tokens: int = Field(gt=0)


class CompletionReply(BaseModel):
    text: str
    model: str
    stop_reason: Literal["endTurn", "maxTokens"] = "endTurn"


class CompletionRefusedError(CodeliaError, RuntimeError):
    """The run cannot answer a completion (no model, budget reached, declined)."""


class RunHost(Protocol):
    async def ask_person(self, question: PersonQuestion) -> PersonAnswer: ...

    async def completion_refusal(self) -> str | None:
        """Why a completion would be refused now (asked before troubling the person), or None."""
        ...

    async def complete(self, request: CompletionRequest) -> CompletionReply: ...


RUN_HOST: DependencyKey[RunHost | None] = DependencyKey("run_host", lambda: None)
