"""In-context processing of tool messages and total-budget trimming.

``ToolOutputCache`` is what the agent calls: :meth:`~ToolOutputCache.process` on every fresh
ToolMessage (save it, bound its in-context copy) and :meth:`~ToolOutputCache.trim` before every
model call. Trimming is on by default (a long session would otherwise outgrow the context): oldest
outputs first, never the newest, and with hysteresis: once over the budget it trims down to
``trim_target_ratio`` of it, so the prompt-cache prefix changes rarely.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._text import clip_utf8, clip_utf8_tail, utf8_len
from ..llm.messages import (
    DocumentPart,
    ImagePart,
    ToolMessage,
    ToolOutputRef,
    has_non_text_part,
    text_projection,
)
from ._render import line_call
from ._store import ToolOutputCacheStore
from .protocol import ref_note

logger = logging.getLogger("jupyter_codelia.cache")

# An image costs about (width * height) / 750 tokens; models see at most ~1568 px per edge.
IMAGE_TOKEN_ESTIMATE = 1600
DEFAULT_BUDGET_TOKENS = 100_000
MIN_BUDGET_TOKENS = 20_000
_LINE_BREAK = re.compile(r"\r?\n")
# A long line gets head and tail windows only when this much room is left for them.
_MIN_WINDOW_BYTES = 2048
_WINDOW_NOTE_BYTES = 300


class ToolOutputCacheConfig(BaseModel):
    """How tool outputs are kept in context. ``enabled=False`` turns off processing and trimming."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    context_budget_tokens: int | None = Field(default=None, gt=0)
    total_budget_trim: bool = True
    max_message_bytes: int = Field(default=50 * 1024, gt=0)
    trim_target_ratio: float = Field(default=0.6, gt=0, le=1)


def estimate_tokens(text: str) -> int:
    """``ceil(utf8_bytes / 4)``, the estimate used everywhere in context management."""
    return math.ceil(utf8_len(text) / 4)


def message_tokens(message: ToolMessage) -> int:
    """Estimated tokens of a tool message: its text projection, plus a realistic cost for
    images and documents (the projection's ``[image]`` would make them look free)."""
    content = message.content
    tokens = estimate_tokens(text_projection(content))
    if isinstance(content, list):
        for part in content:
            if isinstance(part, ImagePart):
                tokens += IMAGE_TOKEN_ESTIMATE
            elif isinstance(part, DocumentPart):
                tokens += math.ceil(len(part.source.data or "") * 3 / 4 / 4)
    return tokens


def derive_budget(explicit: int | None, context_limit: int | None) -> int:
    """Explicit budget, else a quarter of the model's context clamped to [20k, 100k]."""
    if explicit is not None:
        return explicit
    if context_limit is None or context_limit <= 0:
        return DEFAULT_BUDGET_TOKENS
    return min(max(math.floor(context_limit * 0.25), MIN_BUDGET_TOKENS), DEFAULT_BUDGET_TOKENS)


def truncate_whole_lines(raw: str, max_bytes: int) -> tuple[str, int | None]:
    """Keep whole lines while they fit in ``max_bytes`` (joined by ``\\n``), and where the
    first line that did not fit starts (None when everything fit).

    Walks line by line and stops at the cap, so a huge output costs only the kept part."""
    kept: list[str] = []
    total = 0
    pos = 0
    length = len(raw)
    while True:
        match = _LINE_BREAK.search(raw, pos)
        end = match.start() if match else length
        line = raw[pos:end]
        size = utf8_len(line) + (1 if kept else 0)
        if total + size > max_bytes:
            return "\n".join(kept), pos
        kept.append(line)
        total += size
        if match is None:
            return "\n".join(kept), None
        pos = match.end()


def truncate_for_context(raw: str, max_bytes: int, ref_id: str) -> tuple[str, bool]:
    """Whole lines within ``max_bytes``; where one long line would leave most of the room
    unused (minified JSON, a one-line dump), a head and a tail of that line's characters too,
    with the call that reads what lies between. True when anything was cut."""
    body, stop = truncate_whole_lines(raw, max_bytes)
    if stop is None:
        return body, False
    room = max_bytes - utf8_len(body) - _WINDOW_NOTE_BYTES
    if room < _MIN_WINDOW_BYTES:
        return body, True
    match = _LINE_BREAK.search(raw, stop)
    line = raw[stop : match.start() if match else len(raw)]
    head = clip_utf8(line, room * 4 // 5)
    tail = clip_utf8_tail(line, room - utf8_len(head))
    line_number = body.count("\n") + (2 if body else 1)
    reader = line_call(ref_id, line_number, len(head))
    window = (
        f"{head}\n[... line {line_number} goes on for {len(line) - len(head) - len(tail)} "
        f"more characters; {reader} reads them ...]\n{tail}"
    )
    return (f"{body}\n{window}" if body else window), True


class ToolOutputCache:
    """The agent-facing service: saves every result and keeps the in-context copies bounded."""

    def __init__(
        self,
        store: ToolOutputCacheStore | None,
        config: ToolOutputCacheConfig | None = None,
    ) -> None:
        self.store = store
        self.config = config if config is not None else ToolOutputCacheConfig()

    def bind_session(self, session_id: str) -> None:
        """Record ``session_id`` in the entries saved from now on (the browser groups by it)."""
        if self.store is not None:
            self.store.origin.session_id = session_id

    def process(self, message: ToolMessage, *, cut: bool = True) -> ToolMessage:
        """Save a fresh tool message and bound its in-context copy (unless ``cut`` is false: the
        tool declares its output a bounded view already, ``ToolRisk.output_cut``)."""
        if not self.config.enabled:
            return message
        content = message.content
        ref = message.output_ref or self._save(message)
        if has_non_text_part(content):
            # Images and documents stay structured until trimmed.
            return message.model_copy(update={"output_ref": ref})
        raw = text_projection(content)
        update: dict[str, Any] = {"content": raw, "output_ref": ref}
        # Without a ref (no store, or saving failed) a cut would lose the rest for good: the
        # whole output stays in context, and the budget trim may shorten it later.
        if ref is not None and cut:
            body, cut = truncate_for_context(raw, self.config.max_message_bytes, ref.id)
            update["content"] = body
            if cut:
                update["content"] = f"{body}\n\n{ref_note(ref.id)}"
                update["trimmed"] = True
        return message.model_copy(update=update)

    def _save(self, message: ToolMessage) -> ToolOutputRef | None:
        if self.store is None:
            return None
        try:
            # A tool that streamed its full output under its own call id keeps that entry; the
            # short message it returned must not overwrite it.
            streamed = self.store.streamed_ref(message.tool_call_id)
            if streamed is not None:
                return streamed
            return self.store.save(
                tool_call_id=message.tool_call_id,
                tool_name=message.tool_name,
                content=message.content,
                is_error=bool(message.is_error),
            )
        except Exception as exc:  # the reference swallows store failures: the run goes on
            logger.warning("could not cache the output of %s: %s", message.tool_call_id, exc)
            return None

    def budget(self, context_limit: int | None) -> int:
        return derive_budget(self.config.context_budget_tokens, context_limit)

    def trim(self, messages: list[Any], *, context_limit: int | None) -> list[Any] | None:
        """Replace old tool outputs with ref placeholders when over budget.

        Returns a new list (unchanged messages are the same objects) or None when nothing
        changed. The newest tool output is never trimmed."""
        if not self.config.enabled or not self.config.total_budget_trim:
            return None
        positions = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
        if not positions:
            return None
        costs = {i: message_tokens(messages[i]) for i in positions}
        total = sum(costs.values())
        budget = self.budget(context_limit)
        if total <= budget:
            return None
        target = math.floor(budget * self.config.trim_target_ratio)
        result = list(messages)
        changed = False
        for i in positions[:-1]:
            if total <= target:
                break
            message: ToolMessage = messages[i]
            ref = message.output_ref
            placeholder = ref_note(ref.id, trimmed=True) if ref else "[tool output trimmed]"
            if message.content == placeholder:
                continue
            result[i] = message.model_copy(update={"content": placeholder, "trimmed": True})
            total = max(0, total - costs[i] + estimate_tokens(placeholder))
            changed = True
        return result if changed else None
