"""History repair.

A tool call without its tool message (an interrupted run, ``done`` mid-batch, a cancel) makes the
next provider request invalid. ``repair_history`` keeps only calls that have both halves, drops
empty assistant turns and merges adjacent user messages left behind by a failed request.
:class:`HistoryRepair` does the same for one agent, checking only what was added since the
history it last found healthy (the check runs several times a turn; a long conversation must
not pay for all of it each time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..llm.messages import AssistantMessage, TextPart, ToolMessage, UserMessage


class HistoryRepair:
    """``repair_history`` that remembers the last history it found healthy."""

    def __init__(self) -> None:
        self._healthy: list[Any] = []

    def __call__(self, messages: Sequence[Any]) -> list[Any]:
        known = self._healthy
        start = len(known)
        # List equality compares identical elements by identity first: a few ns per message.
        extends = 0 < start <= len(messages) and messages[:start] == known
        if extends and _is_healthy(messages[start:], previous=known[-1]):
            repaired = list(messages)
        else:
            repaired = repair_history(messages)
        # A copy: the caller keeps appending to the list it gets back.
        self._healthy = list(repaired)
        return repaired


def repair_history(messages: Sequence[Any]) -> list[Any]:
    """A copy of ``messages`` that any provider accepts; unchanged messages are reused."""
    if _is_healthy(messages):
        return list(messages)
    called = {
        call.id
        for m in messages
        if isinstance(m, AssistantMessage) and m.tool_calls
        for call in m.tool_calls
    }
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    paired = called & answered
    out: list[Any] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id in paired:
                out.append(message)
            continue
        if isinstance(message, AssistantMessage) and message.tool_calls:
            kept = [c for c in message.tool_calls if c.id in paired]
            if len(kept) != len(message.tool_calls):
                message = message.model_copy(update={"tool_calls": kept or None})
        if isinstance(message, AssistantMessage) and _is_empty_assistant(message):
            continue
        if isinstance(message, UserMessage) and out and isinstance(out[-1], UserMessage):
            out[-1] = _merge_user(out[-1], message)
            continue
        out.append(message)
    return out


def _is_empty_assistant(message: AssistantMessage) -> bool:
    if message.tool_calls or message.refusal:
        return False
    content = message.content
    if content is None:
        return True
    if isinstance(content, str):
        return content == ""
    return len(content) == 0


def _as_parts(content: str | list[Any]) -> list[Any]:
    return [TextPart(text=content)] if isinstance(content, str) else list(content)


def _merge_user(first: UserMessage, second: UserMessage) -> UserMessage:
    if isinstance(first.content, str) and isinstance(second.content, str):
        return UserMessage(content=f"{first.content}\n\n{second.content}")
    return UserMessage(content=[*_as_parts(first.content), *_as_parts(second.content)])


def _is_healthy(messages: Sequence[Any], previous: Any = None) -> bool:
    """One cheap pass: every call answered right after its turn, no empty or doubled turns.

    ``previous``: the message before ``messages``, the end of a history already healthy (so
    no call is pending there)."""
    pending: set[str] = set()
    for message in messages:
        kind = type(message)
        if kind is ToolMessage:
            if message.tool_call_id not in pending:
                return False
            pending.discard(message.tool_call_id)
        else:
            if pending:
                return False
            if kind is AssistantMessage:
                if message.tool_calls:
                    pending = {call.id for call in message.tool_calls}
                elif _is_empty_assistant(message):
                    return False
            elif kind is UserMessage and type(previous) is UserMessage:
                return False
        previous = message
    return not pending
