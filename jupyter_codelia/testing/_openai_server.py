"""``ScriptedOpenAIServer``: a real HTTP server on 127.0.0.1 that speaks OpenAI's APIs.

It plays the same scripts as :class:`~._server.ScriptedAnthropicServer` (``reply``, ``text``,
``tool_use``, ``thinking``, ``fault``), rendered the way OpenAI and compatible servers answer
``POST /v1/chat/completions``: a JSON ``chat.completion``, or SSE ``chat.completion.chunk``
data lines (text in word-sized pieces, tool-call arguments in fragments, reasoning as
``reasoning_content``, a usage chunk) ending with ``data: [DONE]``; and ``POST /v1/responses``
(the Responses API's named events, thinking as an encrypted ``reasoning`` item). Faults act
out the same failures with OpenAI's error bodies. A :func:`~._script.recorded` turn replays a
real response of OpenAI or a compatible server byte for byte on either route (the recordings in
tests/llm/recordings: DeepSeek, Gemini, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio, Azure).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from .._text import compact_json
from ._script import Fault, Reply, TextBlock, ThinkingBlock, ToolUseBlock
from ._server import RecordedRequest, ScriptedServer, chunk_text, estimate_tokens

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
# Our scripts use Anthropic's stop reasons; Chat Completions names them differently.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "stop",  # OpenAI ends a refusal normally, with the text in ``refusal``
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

    model_paths = (CHAT_PATH, RESPONSES_PATH)
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

    model_capabilities: dict[str, list[str]] | None = None
    """Set it to answer Ollama's ``POST /api/show`` with these capabilities per model."""

    def other_route(self, path: str, body: Any) -> dict[str, Any] | None:
        if path != "/api/show" or self.model_capabilities is None:
            return None
        model = body.get("model")
        if model not in self.model_capabilities:
            return None
        return {"model_info": {}, "capabilities": self.model_capabilities[model]}

    open_paths = ("/api/show",)

    def fields_required(self, path: str) -> tuple[str, ...]:
        if path == RESPONSES_PATH:
            return ("model", "input")
        return ("model",) if path in self.open_paths else ("model", "messages")

    def sse_frame(self, name: str, data: dict[str, Any]) -> bytes:
        # Chat Completions chunks are bare data lines; Responses events are named.
        event = f"event: {name}\n" if name else ""
        return f"{event}data: {json.dumps(data)}\n\n".encode()

    def stream_end(self, request: RecordedRequest) -> bytes:
        return b"" if request.path == RESPONSES_PATH else b"data: [DONE]\n\n"

    def error_event_frame(self, request: RecordedRequest, error_type: str, message: str) -> bytes:
        body = self.error_body(error_type, message)
        if request.path == RESPONSES_PATH:
            error = body["error"]
            event = {"type": "error", "code": error["code"] or error["type"], "message": message}
            return self.sse_frame("error", {**event, "param": None, "sequence_number": 0})
        return self.sse_frame("", body)

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
        if request.path == RESPONSES_PATH:
            frame = self._frame(turn, request, "response")
            return self._response(turn, request, frame, self._output_items(turn), "completed")
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
        if request.path == RESPONSES_PATH:
            yield from self._response_events(turn, request)
            return
        frame = self._frame(turn, request, "chat.completion.chunk")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, dict[str, Any]]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            return "", {**frame, "choices": [choice]}

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
        yield "", {**frame, "choices": [], "usage": self._usage(turn, request, produced)}

    # --- the Responses API -------------------------------------------------------------------

    def _output_items(self, turn: Reply) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        calls = iter(self._calls(turn))
        for index, block in enumerate(turn.content):
            if isinstance(block, ThinkingBlock):
                items.append(
                    {
                        "type": "reasoning",
                        "id": f"rs_{index}",
                        "summary": [{"type": "summary_text", "text": block.thinking}],
                        "encrypted_content": f"enc:{block.signature}",
                    }
                )
            elif isinstance(block, TextBlock):
                items.append(
                    {
                        "type": "message",
                        "id": f"msg_{index}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                    }
                )
            elif isinstance(block, ToolUseBlock):
                call = next(calls)
                items.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{index}",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                        "status": "completed",
                    }
                )
        if turn.effective_stop_reason() == "refusal":
            refusal = {"type": "refusal", "refusal": _refusal_text(turn)}
            items.append(
                {"type": "message", "id": "msg_refusal", "role": "assistant", "content": [refusal]}
            )
        return items

    def _response(
        self,
        turn: Reply,
        request: RecordedRequest,
        frame: dict[str, Any],
        output: list[dict[str, Any]],
        status: str,
    ) -> dict[str, Any]:
        usage = self._usage(turn, request, output)
        prompt, completion = usage["prompt_tokens"], usage["completion_tokens"]
        incomplete = turn.effective_stop_reason() == "max_tokens"
        return {
            "id": frame["id"].replace("chatcmpl-", "resp_"),
            "object": "response",
            "created_at": frame["created"],
            "model": frame["model"],
            "status": "incomplete" if incomplete and status == "completed" else status,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "output": output,
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": usage["prompt_tokens_details"],
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
        }

    def _response_events(
        self, turn: Reply, request: RecordedRequest
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        items = self._output_items(turn)
        sequence = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
            return kind, {"type": kind, "sequence_number": next(sequence), **fields}

        frame = self._frame(turn, request, "response")
        started = self._response(turn, request, frame, [], "in_progress")
        yield event("response.created", response=started)
        for index, item in enumerate(items):
            kind = item["type"]
            opening = {**item, "status": "in_progress"}
            if kind == "message":
                opening["content"] = []
            elif kind == "function_call":
                opening["arguments"] = ""
            elif kind == "reasoning":
                opening["summary"] = []
            yield event("response.output_item.added", output_index=index, item=opening)
            where = {"item_id": item["id"], "output_index": index}
            if kind == "message":
                for part in item["content"]:
                    if part["type"] != "output_text":
                        continue
                    for piece in chunk_text(part["text"]):
                        yield event(
                            "response.output_text.delta",
                            **where,
                            content_index=0,
                            delta=piece,
                            logprobs=[],
                        )
            elif kind == "function_call":
                for piece in chunk_text(item["arguments"], by_words=False):
                    yield event("response.function_call_arguments.delta", **where, delta=piece)
            elif kind == "reasoning":
                for piece in chunk_text(item["summary"][0]["text"]):
                    yield event(
                        "response.reasoning_summary_text.delta",
                        **where,
                        summary_index=0,
                        delta=piece,
                    )
            yield event("response.output_item.done", output_index=index, item=item)
        done = self._response(turn, request, frame, items, "completed")
        kind = "response.incomplete" if done["status"] == "incomplete" else "response.completed"
        yield event(kind, response=done)


def _refusal_text(turn: Reply) -> str:
    details = turn.stop_details or {}
    return str(details.get("explanation") or "I can't help with that.")


__all__ = ["ScriptedOpenAIServer"]
