"""Compaction: replace a long history by a summary near the context limit.

When a model call reports that the prompt has reached ``threshold_ratio`` of the model's context
window, the agent asks the model (without tools) for a ``<retain>`` list of details that must
survive verbatim (tool output refs, paths, identifiers, decisions) and a ``<summary>``, then
rebuilds the history as: system messages, one memory message carrying both, an acknowledgement,
and the last user turns (their user messages and assistant text only). Cached tool outputs are
untouched, so refs quoted in the retain block stay readable through ``tool_output_cache``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..llm.messages import (
    AssistantMessage,
    SystemMessage,
    TextPart,
    UserMessage,
    answer_text,
    text_projection,
)

RETAIN_MARKER = "[codelia.compaction.retain]"
SUMMARY_MARKER = "[codelia.compaction.summary]"
ACKNOWLEDGEMENT = "I have the summary of our earlier work and will continue from it."

DEFAULT_SUMMARY_PROMPT = (
    "Write a concise, factual summary of the conversation so far: the user's goals, decisions "
    "made, results obtained, constraints, and the next steps."
)
DEFAULT_RETAIN_PROMPT = (
    "List the details that must survive verbatim: tool output refs (ref ids), file paths, "
    "variable names, identifiers, commands, open TODOs and decisions."
)

_RETAIN = re.compile(r"<retain>(.*?)</retain>", re.IGNORECASE | re.DOTALL)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.IGNORECASE | re.DOTALL)
_SUMMARY_TAGS = re.compile(r"</?summary>", re.IGNORECASE)


@dataclass(frozen=True)
class CompactionConfig:
    """When and how to compact; ``context_limit`` overrides the model's known window."""

    threshold_ratio: float = 0.85
    retain_last_turns: int = 1
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT
    retain_prompt: str | None = DEFAULT_RETAIN_PROMPT
    context_limit: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.threshold_ratio <= 1:
            raise ValueError(f"threshold_ratio must be in (0, 1], got {self.threshold_ratio}")
        if self.retain_last_turns < 0:
            raise ValueError(f"retain_last_turns must be >= 0, got {self.retain_last_turns}")

    def should_compact(self, total_tokens: int, model_limit: int | None) -> bool:
        limit = self.context_limit or model_limit
        if not limit or total_tokens <= 0:
            return False
        return total_tokens >= math.floor(limit * self.threshold_ratio)

    def instructions(self) -> str:
        parts = ["Do not call tools. Reply with exactly these sections and nothing else:"]
        if self.retain_prompt is not None:
            parts.append(f"<retain>\n{self.retain_prompt}\n</retain>")
        parts.append(f"<summary>\n{self.summary_prompt}\n</summary>")
        return "\n\n".join(parts)


def is_memory(message: Any) -> bool:
    """A memory message written by an earlier compaction."""
    if not isinstance(message, UserMessage):
        return False
    text = text_projection(message.content)
    return text.startswith(RETAIN_MARKER) or text.startswith(SUMMARY_MARKER)


def prepare_request(history: Sequence[Any], config: CompactionConfig) -> list[Any] | None:
    """The history to summarise plus the instruction turn; None when there is nothing to do."""
    body = [m for m in history if not is_memory(m) and not _is_acknowledgement(m)]
    if body and isinstance(body[-1], AssistantMessage) and body[-1].tool_calls:
        last = body.pop()
        if last.content:
            body.append(last.model_copy(update={"tool_calls": None}))
    if not any(not isinstance(m, SystemMessage) for m in body):
        return None
    return [*body, UserMessage(content=config.instructions())]


def earlier_retain(history: Sequence[Any]) -> list[str]:
    """Retain entries carried by earlier memory messages (kept across compactions)."""
    entries: list[str] = []
    for message in history:
        if is_memory(message) and isinstance(message.content, list):
            for part in message.content:
                if isinstance(part, TextPart) and part.text.startswith(RETAIN_MARKER):
                    entries.append(part.text[len(RETAIN_MARKER) :].strip())
    return entries


def parse_reply(text: str) -> tuple[str | None, str]:
    """``(retain, summary)`` from the model's reply; the summary falls back to the whole text."""
    retain_match = _RETAIN.search(text)
    retain = retain_match.group(1).strip() if retain_match else None
    summary_match = _SUMMARY.search(text)
    if summary_match:
        summary = summary_match.group(1).strip()
    else:
        rest = _RETAIN.sub("", text) if retain_match else text
        summary = _SUMMARY_TAGS.sub("", rest).strip()
    return retain, summary


def rebuild(
    history: Sequence[Any], retain: str | None, summary: str, config: CompactionConfig
) -> list[Any]:
    """The compacted history (see the module docstring)."""
    retained_entries = [*earlier_retain(history)]
    if retain:
        retained_entries.append(retain)
    unique = list(dict.fromkeys(e for e in retained_entries if e))
    parts: list[TextPart] = []
    if unique:
        parts.append(TextPart(text=f"{RETAIN_MARKER}\n" + "\n\n".join(unique)))
    parts.append(TextPart(text=f"{SUMMARY_MARKER}\n{summary}"))
    systems = [m for m in history if isinstance(m, SystemMessage)]
    return [
        *systems,
        UserMessage(content=parts),
        AssistantMessage(content=ACKNOWLEDGEMENT),
        *_last_turns(history, config.retain_last_turns),
    ]


def _last_turns(history: Sequence[Any], count: int) -> list[Any]:
    """The last ``count`` user turns: their user messages and assistant text, nothing else.

    Trailing assistant text is dropped so the compacted history ends with a user turn (a final
    assistant message would read as a prefill of the next reply); the summary covers it.
    """
    starts = [i for i, m in enumerate(history) if isinstance(m, UserMessage) and not is_memory(m)]
    if count == 0 or not starts:
        return []
    kept: list[Any] = []
    for message in history[starts[-min(count, len(starts))] :]:
        if isinstance(message, UserMessage):
            kept.append(message)
        elif isinstance(message, AssistantMessage):
            # Text only: server-tool blocks cannot be replayed without their neighbours.
            text = answer_text(message.content)
            if text:
                kept.append(AssistantMessage(content=text))
    while kept and isinstance(kept[-1], AssistantMessage):
        kept.pop()
    return kept


def _is_acknowledgement(message: Any) -> bool:
    return isinstance(message, AssistantMessage) and message.content == ACKNOWLEDGEMENT
