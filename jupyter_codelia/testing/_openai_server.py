"""``ScriptedOpenAIServer``: a real HTTP server on 127.0.0.1 that speaks Chat Completions.

It plays the same scripts as :class:`~._server.ScriptedAnthropicServer` (``reply``, ``text``,
``tool_use``, ``thinking``, ``fault``), rendered the way OpenAI and compatible servers answer
``POST /v1/chat/completions``: a JSON ``chat.completion``, or SSE ``chat.completion.chunk``
data lines (text in word-sized pieces, tool-call arguments in fragments, reasoning as
``reasoning_content``, a usage chunk) ending with ``data: [DONE]``. Faults act out the same
failures with OpenAI's error bodies.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from .._text import compact_json
from ._script import Fault, Reply, TextBlock, ThinkingBlock, ToolUseBlock
from ._server import RecordedRequest, ScriptedServer, chunk_text, estimate_tokens

# Our scripts use Anthropic's stop reasons; Chat Completions names them differently.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
# Anthropic error types (what Fault names) → OpenAI's (type, code).
_ERROR_FIELDS: dict[str, tuple[str, str | None]] = {
    "rate_limit_error": ("requests", "rate_limit_exceeded"),
    "overloaded_error": ("server_error", "engine_overloaded"),
    "api_error": ("server_error", None),
    "authentication_error": ("invalid_request_error", "invalid_api_key"),
    "permission_error": ("invalid_request_error", "permission_denied"),
    "not_found_error": ("invalid_request_error", "not_found"),
}


class ScriptedOpenAIServer(ScriptedServer):
    """Serve scripted Chat Completions replies; ``url`` is the ``base_url`` (``.../v1``).

    >>> with ScriptedOpenAIServer([reply(text("Hi"))]) as server:         # doctest: +SKIP
    ...     chat = OpenAIChat(base_url=server.url, api_key="test-key")
    """

    model_path = "/v1/chat/completions"
    url_suffix = "/v1"
    tool_id_prefix = "call_"
    auth_headers = ("authorization",)
    auth_header_names = "Authorization"

    def error_body(self, error_type: str, message: str) -> dict[str, Any]:
        kind, code = _ERROR_FIELDS.get(error_type, (error_type, None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def fault_status(self, turn: Fault) -> int:
        if turn.status is not None:
            return turn.status
        return 503 if turn.fault in ("overloaded", "error_event") else turn.http_status()

    def sse_frame(self, name: str, data: dict[str, Any]) -> bytes:
        return f"data: {json.dumps(data)}\n\n".encode()

    def stream_end(self) -> bytes:
        return b"data: [DONE]\n\n"

    def error_event_frame(self, error_type: str, message: str) -> bytes:
        return self.sse_frame("error", self.error_body(error_type, message))

    def malformed_frame(self) -> bytes:
        return b"data: {not json\n\n"

    # --- reply rendering ---------------------------------------------------------------------

    def _calls(self, turn: Reply) -> list[dict[str, Any]]:
        return [
            {
                "id": block.id or self._new_tool_id(),
                "type": "function",
                "function": {"name": block.name, "arguments": compact_json(block.input)},
            }
            for block in turn.content
            if isinstance(block, ToolUseBlock)
        ]

    def _usage(self, turn: Reply, request: RecordedRequest, output: Any) -> dict[str, Any]:
        body = request.json if isinstance(request.json, dict) else {}
        scripted = turn.usage
        uncached = scripted.input_tokens
        if uncached is None:
            uncached = estimate_tokens([body.get("tools"), body.get("messages")])
        cached = scripted.cache_read_input_tokens
        prompt = uncached + cached + scripted.cache_creation_input_tokens
        completion = scripted.output_tokens
        if completion is None:
            completion = estimate_tokens(output) if output else 1
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }

    def _frame(self, turn: Reply, request: RecordedRequest, kind: str) -> dict[str, Any]:
        body = request.json if isinstance(request.json, dict) else {}
        return {
            "id": self._new_message_id().replace("msg_", "chatcmpl-"),
            "object": kind,
            "created": int(time.time()),
            "model": turn.model or body.get("model") or "gpt-scripted",
        }

    def render_message(self, turn: Reply, request: RecordedRequest) -> dict[str, Any]:
        text = "".join(b.text for b in turn.content if isinstance(b, TextBlock))
        reasoning = "".join(b.thinking for b in turn.content if isinstance(b, ThinkingBlock))
        calls = self._calls(turn)
        stop = turn.effective_stop_reason()
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if stop == "refusal":
            message["refusal"] = _refusal_text(turn)
        if calls:
            message["tool_calls"] = calls
        if reasoning:
            message["reasoning_content"] = reasoning
        return {
            **self._frame(turn, request, "chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": _FINISH_REASONS.get(stop, stop),
                    "logprobs": None,
                }
            ],
            "usage": self._usage(turn, request, [text, reasoning, calls]),
        }

    def sse_events(
        self, turn: Reply, request: RecordedRequest
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        frame = self._frame(turn, request, "chat.completion.chunk")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, dict[str, Any]]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            return "chunk", {**frame, "choices": [choice]}

        yield chunk({"role": "assistant", "content": ""})
        calls = self._calls(turn)
        call_index = 0
        produced: list[Any] = []
        for block in turn.content:
            if isinstance(block, ThinkingBlock):
                for piece in chunk_text(block.thinking):
                    yield chunk({"reasoning_content": piece})
                produced.append(block.thinking)
            elif isinstance(block, TextBlock):
                for piece in chunk_text(block.text):
                    yield chunk({"content": piece})
                produced.append(block.text)
            elif isinstance(block, ToolUseBlock):
                call = calls[call_index]
                opening = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
                yield chunk({"tool_calls": [{"index": call_index, **opening}]})
                for piece in chunk_text(call["function"]["arguments"], by_words=False):
                    fragment = {"index": call_index, "function": {"arguments": piece}}
                    yield chunk({"tool_calls": [fragment]})
                produced.append(call)
                call_index += 1
        stop = turn.effective_stop_reason()
        if stop == "refusal":
            yield chunk({"refusal": _refusal_text(turn)})
        yield chunk({}, _FINISH_REASONS.get(stop, stop))
        yield "usage", {**frame, "choices": [], "usage": self._usage(turn, request, produced)}


def _refusal_text(turn: Reply) -> str:
    details = turn.stop_details or {}
    return str(details.get("explanation") or "I can't help with that.")


__all__ = ["ScriptedOpenAIServer"]
