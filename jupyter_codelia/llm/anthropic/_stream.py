"""A Messages API event stream (SSE) → the reply's raw JSON, built without the SDK's models.

The SDK turns each event into a pydantic model and accumulates those; a block type it does not
know becomes a mislabelled ``TextBlock`` whose serialisation prints pydantic warnings into the
notebook, and known blocks come back with their keys re-ordered. Encrypted server-tool results
must go back to the API exactly as they came, so the reply is accumulated here from the event
JSON itself: every ``content_block_start`` block is kept as sent, and only the deltas this code
understands (text, citations, thinking, signature, tool input) are applied to it.

A tool call whose input JSON never closed — the reply hit ``max_tokens`` mid-call — is reported
in :attr:`ReplyAccumulator.unfinished_inputs` instead of being completed by a partial-JSON parser.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ...errors import CodeliaError
from ..base import StreamCallbacks

_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


class StreamProtocolError(CodeliaError, ValueError):
    """The event stream broke the Messages API's grammar (bad JSON, events out of order)."""


class InStreamApiError(CodeliaError):
    """The API sent an ``error`` event mid-stream; ``body`` is its JSON."""

    def __init__(self, body: Any) -> None:
        super().__init__("error event in the response stream")
        self.body = body


@dataclass
class ServerSentEvent:
    event: str
    data: str


async def server_sent_events(lines: AsyncIterator[str]) -> AsyncIterator[ServerSentEvent]:
    """Decode SSE lines into events (``event:`` name, ``data:`` lines joined by newlines)."""
    name = ""
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data or name:
                yield ServerSentEvent(name or "message", "\n".join(data))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
    if data:
        yield ServerSentEvent(name or "message", "\n".join(data))


@dataclass
class ReplyAccumulator:
    """Feed it the stream's events in order; :attr:`message` is the reply as the API's JSON."""

    callbacks: StreamCallbacks = field(default_factory=StreamCallbacks)
    message: dict[str, Any] | None = None
    completed: bool = False
    _inputs: dict[int, str] = field(default_factory=dict)

    @property
    def unfinished_inputs(self) -> dict[int, str]:
        """Block index → partial JSON of tool calls whose input did not close (cut off)."""
        unfinished: dict[int, str] = {}
        for index, text in self._inputs.items():
            try:
                json.loads(text)
            except ValueError:
                unfinished[index] = text
        return unfinished

    def feed(self, sse: ServerSentEvent) -> None:
        try:
            data = json.loads(sse.data)
        except ValueError as exc:
            raise StreamProtocolError(f"undecodable {sse.event!r} event data: {exc}") from exc
        if not isinstance(data, dict):
            raise StreamProtocolError(f"{sse.event!r} event data is not a JSON object")
        kind = data.get("type", sse.event)
        if not isinstance(kind, str):
            raise StreamProtocolError(f"{sse.event!r} event with a non-text type {kind!r}")
        if kind == "error":
            raise InStreamApiError(data)
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, dict):
                raise StreamProtocolError("message_start without a message object")
            self.message = {**message, "content": list(message.get("content") or [])}
            return
        if kind == "ping" or not kind.startswith(("message_", "content_block_")):
            return  # keep-alives and event types newer than this code carry nothing we need
        message = self.message
        if message is None:
            raise StreamProtocolError(f"{kind} event before message_start")
        if kind == "message_stop":
            self.completed = True
        elif kind == "message_delta":
            self._message_delta(message, data)
        else:
            self._block_event(message["content"], kind, data)

    def _message_delta(self, message: dict[str, Any], data: dict[str, Any]) -> None:
        delta = data.get("delta")
        if isinstance(delta, dict):
            message.update(delta)
        usage = data.get("usage")
        if isinstance(usage, dict):
            # message_delta carries cumulative counts; keys it leaves out keep their start value.
            merged = dict(message.get("usage") or {})
            merged.update({k: v for k, v in usage.items() if v is not None})
            message["usage"] = merged

    def _block_event(self, blocks: list[dict[str, Any]], kind: str, data: dict[str, Any]) -> None:
        index = data.get("index")
        if not isinstance(index, int) or index < 0:
            raise StreamProtocolError(f"{kind} event without a valid index")
        if kind == "content_block_start":
            block = data.get("content_block")
            if index != len(blocks) or not isinstance(block, dict):
                raise StreamProtocolError(f"content_block_start out of order at index {index}")
            blocks.append(dict(block))
            if block.get("type") in _INPUT_BLOCKS:
                self._inputs[index] = ""
            return
        if index >= len(blocks):
            raise StreamProtocolError(f"{kind} for block {index} before its content_block_start")
        block = blocks[index]
        if kind == "content_block_stop":
            text = self._inputs.get(index)
            if text is not None and text.strip():
                try:
                    block["input"] = json.loads(text)
                except ValueError:
                    pass  # left in unfinished_inputs; the block's input stays as it started
            elif text is not None:
                self._inputs[index] = "{}"
            return
        if kind == "content_block_delta":
            delta = data.get("delta")
            if isinstance(delta, dict):
                self._apply_delta(index, block, delta)

    def _apply_delta(self, index: int, block: dict[str, Any], delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            piece = str(delta.get("text") or "")
            block["text"] = str(block.get("text") or "") + piece
            self.callbacks.text(piece)
        elif kind == "citations_delta":
            citations = block.get("citations")
            block["citations"] = [*(citations or []), delta.get("citation")]
        elif kind == "thinking_delta":
            piece = str(delta.get("thinking") or "")
            block["thinking"] = str(block.get("thinking") or "") + piece
            self.callbacks.reasoning(piece)
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "input_json_delta" and index in self._inputs:
            self._inputs[index] += str(delta.get("partial_json") or "")


__all__ = [
    "InStreamApiError",
    "ReplyAccumulator",
    "ServerSentEvent",
    "StreamProtocolError",
    "server_sent_events",
]
