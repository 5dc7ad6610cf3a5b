"""Reasoning written inline as ``<think>...</think>``, split from the answer as it streams.

DeepSeek-R1 through some hosts, QwQ, and Qwen3 on a llama.cpp server without a reasoning
parser put their reasoning in the answer text, inside ``<think>`` tags at its start. Shown as
the answer and replayed as the assistant's words, it would mislead both the person and the
model. :class:`ThinkTagSplitter` takes the text deltas in order and hands back, per delta,
what is answer and what is reasoning; a tag split across deltas (``"<thi"`` + ``"nk>"``) is
held back until it is complete, and nothing else is delayed.
"""

from __future__ import annotations

from typing import Literal

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"

_State = Literal["start", "thinking", "after", "text"]


class ThinkTagSplitter:
    """``feed(delta) -> (text, reasoning)`` for each text delta, then ``flush()`` at the end.

    Only a ``<think>`` at the very start of the reply (after whitespace) opens reasoning: a
    tag later in an answer is the answer's own (a tutorial about the tags, say).
    ``opened=True`` is for models whose chat template already wrote the opening tag
    (DeepSeek-R1's): the reply is reasoning from its first character until ``</think>``.
    """

    def __init__(self, *, opened: bool = False) -> None:
        self._opened = opened
        self._state: _State = "start"
        self._held = ""

    @property
    def splitting(self) -> bool:
        """False once the reply is plain answer text (every later delta passes through)."""
        return self._state != "text"

    def feed(self, delta: str) -> tuple[str, str]:
        if self._state == "text":
            return delta, ""
        buffer, self._held = self._held + delta, ""
        text = reasoning = ""
        if self._state == "start":
            stripped = buffer.lstrip()
            if not stripped or (OPEN_TAG.startswith(stripped) and stripped != OPEN_TAG):
                self._held = buffer  # whitespace, or the tag's first characters: wait
                return "", ""
            if stripped.startswith(OPEN_TAG):
                buffer = stripped[len(OPEN_TAG) :]
            elif not self._opened:
                self._state = "text"
                return buffer, ""
            self._state = "thinking"
        if self._state == "thinking":
            at = buffer.find(CLOSE_TAG)
            if at < 0:
                keep = _partial_tag_suffix(buffer)
                self._held = buffer[len(buffer) - keep :]
                return "", buffer[: len(buffer) - keep]
            reasoning, buffer = buffer[:at], buffer[at + len(CLOSE_TAG) :]
            self._state = "after"
        # After the closing tag: the blank lines before the answer are not the answer's.
        text = buffer.lstrip()
        if text:
            self._state = "text"
        return text, reasoning

    def flush(self) -> tuple[str, str]:
        """What is still held back when the reply ends, as (text, reasoning)."""
        held, self._held = self._held, ""
        if self._state == "thinking":
            return "", held
        if self._state == "start" and not self._opened:
            return held, ""
        return "", ""


def _partial_tag_suffix(text: str) -> int:
    """Length of the longest end of ``text`` that could begin ``</think>``."""
    for size in range(min(len(CLOSE_TAG) - 1, len(text)), 0, -1):
        if CLOSE_TAG.startswith(text[-size:]):
            return size
    return 0


__all__ = ["CLOSE_TAG", "OPEN_TAG", "ThinkTagSplitter"]
