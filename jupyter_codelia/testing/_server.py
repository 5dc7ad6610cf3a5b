"""Scripted model servers: real HTTP servers on 127.0.0.1 that play a script of turns.

:class:`ScriptedServer` owns what every provider's fake shares: the thread and socket, the
script (a list of turns or a function of the request), request recording with secrets redacted,
and acting out failures (see :class:`~._script.Fault`: HTTP errors, dropped and truncated
streams, malformed SSE, mid-stream errors). A subclass says how the API names its route,
renders a reply (JSON and SSE) and spells an error. :class:`ScriptedAnthropicServer` speaks
the Messages API (``POST /v1/messages``, streaming, and ``/v1/messages/count_tokens``); the
code under test (the real SDK) talks to it over a real socket.
"""

from __future__ import annotations

import abc
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from .._text import compact_json
from ._script import (
    Fault,
    Recorded,
    RedactedThinkingBlock,
    Reply,
    ScriptError,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    load_script,
    parse_turn,
)

REDACTED = "[redacted]"
_SECRET_HEADER = re.compile(r"key|token|secret|password|auth|cookie", re.IGNORECASE)
_TEXT_CHUNK = re.compile(r"\S+\s*|\s+")
_JSON_CHUNK_CHARS = 12


@dataclass
class RecordedRequest:
    """One request the server received; ``headers`` has credentials replaced by ``[redacted]``."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list, repr=False)
    """The SSE events sent back, in order (a streamed reply only)."""
    _aborted: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.json.get("messages") or []) if isinstance(self.json, dict) else []

    @property
    def conversation(self) -> list[dict[str, Any]]:
        """The messages without system turns (Chat Completions sends those inline)."""
        return [m for m in self.messages if m.get("role") != "system"]

    def tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call in the history, as ``{"id", "name", "arguments"}``, whichever API
        (Anthropic ``tool_use`` blocks or Chat Completions ``tool_calls``) sent it."""
        calls: list[dict[str, Any]] = []
        for message in self.messages:
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                calls.append(
                    {
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": function.get("arguments"),
                    }
                )
            calls.extend(
                {
                    "id": b.get("id"),
                    "name": b.get("name"),
                    "arguments": compact_json(b.get("input")),
                }
                for b in _blocks(message)
                if b.get("type") == "tool_use"
            )
        return calls

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool result in the history, as ``{"id", "text", "is_error"}``; ``text`` joins
        text blocks, ``is_error`` is None where the API has no such flag (Chat Completions)."""
        results: list[dict[str, Any]] = []
        for message in self.messages:
            if message.get("role") == "tool":
                results.append(
                    {
                        "id": message.get("tool_call_id"),
                        "text": _joined_text(message.get("content")),
                        "is_error": None,
                    }
                )
            results.extend(
                {
                    "id": b.get("tool_use_id"),
                    "text": _joined_text(b.get("content")),
                    "is_error": bool(b.get("is_error", False)),
                }
                for b in _blocks(message)
                if b.get("type") == "tool_result"
            )
        return results

    @property
    def system(self) -> Any:
        return self.json.get("system") if isinstance(self.json, dict) else None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.json.get("tools") or []) if isinstance(self.json, dict) else []

    @property
    def aborted(self) -> bool:
        """True once the client closed the connection before the reply was complete."""
        return self._aborted.is_set()

    def wait_aborted(self, timeout: float = 10.0) -> bool:
        """Block until the client has hung up mid-reply (or ``timeout`` passes)."""
        return self._aborted.wait(timeout)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "json": self.json,
        }


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _joined_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


ScriptTurn = Reply | Fault | Recorded
ScriptFunction = Callable[[RecordedRequest], ScriptTurn | dict[str, Any]]
Script = Iterable[ScriptTurn | dict[str, Any]] | ScriptFunction | str | Path


def redact_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {
        name.lower(): (REDACTED if _SECRET_HEADER.search(name) else value)
        for name, value in headers
    }


def estimate_tokens(value: Any) -> int:
    """A rough, deterministic token count (4 characters a token) for default usage numbers."""
    return max(1, len(compact_json(value)) // 4)


class _ClientGoneError(Exception):
    """The client closed the connection while we were writing."""


class ScriptedServer(abc.ABC):
    """The provider-neutral part of a scripted model server (see the module docstring).

    ``script``: a list of turns (:func:`reply`, :func:`fault`, :func:`recorded` builders,
    :class:`Reply`, :class:`Fault`, :class:`Recorded` or their JSON dicts), played in order,
    one per model request; a path to a JSON script file; or a function ``request -> turn``.
    When a list runs out the server answers HTTP 500 saying so. A :class:`Recorded` turn is
    replayed byte for byte, so it must be a recording of the API the server speaks.

    ``keep_requests=False``: :attr:`requests` stays empty (a script function still sees each
    request), so a long benchmark's server does not grow with every request it answered.
    """

    model_paths: tuple[str, ...] = ("/v1/messages",)
    """The routes that play the next turn."""
    url_suffix = ""
    """What the SDK's ``base_url`` adds after ``http://127.0.0.1:<port>``."""
    tool_id_prefix = "toolu_"
    auth_headers: tuple[str, ...] = ("x-api-key", "authorization")
    auth_header_names = "x-api-key or Authorization"
    required_fields: tuple[str, ...] = ("model", "messages")
    open_paths: tuple[str, ...] = ()
    """Routes that answer without credentials (as a local server's would)."""

    def fields_required(self, path: str) -> tuple[str, ...]:
        """The body fields a request to ``path`` must have."""
        return self.required_fields if path in self.model_paths else ("model", "messages")

    def __init__(
        self,
        script: Script = (),
        *,
        port: int = 0,
        require_auth: bool = True,
        keep_requests: bool = True,
    ) -> None:
        self._function: ScriptFunction | None = None
        self._turns: list[ScriptTurn] = []
        if isinstance(script, (str, Path)):
            self._turns = load_script(script)
        elif isinstance(script, (Reply, Fault, Recorded, dict)):
            raise ScriptError(
                "the script is a list of turns (or a function of the request): write "
                f"{type(self).__name__}([reply(...)]), not {type(self).__name__}(reply(...))"
            )
        elif callable(script):
            self._function = script
        else:
            self._turns = [parse_turn(t, f"turn {i + 1}") for i, t in enumerate(script)]
        self._port = port
        self.require_auth = require_auth
        self.requests: list[RecordedRequest] = []
        self.keep_requests = keep_requests
        self._received = 0  # model requests so far (kept or not)
        self.errors: list[str] = []  # problems with the script, also sent as 500 bodies
        self._lock = threading.Lock()
        self._next_turn = 0
        self._tool_ids = 0
        self._message_ids = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self.on_request: Callable[[RecordedRequest], None] | None = None

    def __repr__(self) -> str:
        where = self.url if self._httpd is not None else "stopped"
        return (
            f"{type(self).__name__}({where}, requests={len(self.requests)}, "
            f"remaining={self.remaining if self._function is None else 'function'})"
        )

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The ``base_url`` to pass to the SDK; the server must be started."""
        return self.root_url + self.url_suffix

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._httpd is None:
            name = type(self).__name__
            raise RuntimeError(f"{name} is not running: call start() or use `with`")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def port(self) -> int:
        return int(self.root_url.rsplit(":", 1)[1])

    def start(self: ServerT) -> ServerT:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        handler = type("_Handler", (_Handler,), {"server_ref": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # wake handler threads parked on keep-alive reads
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self: ServerT) -> ServerT:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- script ------------------------------------------------------------------------------

    def add(self, *turns: ScriptTurn | dict[str, Any]) -> None:
        """Append turns to a list script (e.g. between notebook cells)."""
        if self._function is not None:
            raise ScriptError("this server answers from a function; add() needs a list script")
        with self._lock:
            start = len(self._turns)
            self._turns.extend(parse_turn(t, f"turn {start + i + 1}") for i, t in enumerate(turns))

    @property
    def remaining(self) -> int:
        """Turns not played yet (0 for a function script)."""
        with self._lock:
            return len(self._turns) - self._next_turn if self._function is None else 0

    def _next(self, request: RecordedRequest) -> ScriptTurn:
        if self._function is not None:
            try:
                produced = self._function(request)
            except Exception as exc:
                raise ScriptError(
                    f"the script function raised {type(exc).__name__}: {exc}"
                ) from exc
            if produced is None:
                raise ScriptError(
                    "the script function returned None; return reply(...) or fault.<kind>(...)"
                )
            return parse_turn(produced, "the script function's turn")
        with self._lock:
            if self._next_turn >= len(self._turns):
                raise ScriptError(
                    f"no scripted turn left for model request #{request.index + 1} "
                    f"(the script has {len(self._turns)} turn(s)); add turns to the script"
                )
            turn = self._turns[self._next_turn]
            self._next_turn += 1
            return turn

    def _new_tool_id(self) -> str:
        with self._lock:
            self._tool_ids += 1
            return f"{self.tool_id_prefix}{self._tool_ids}"

    def _new_message_id(self) -> str:
        with self._lock:
            self._message_ids += 1
            return f"msg_scripted_{self._message_ids}"

    # --- what a subclass says about its API --------------------------------------------------

    @abc.abstractmethod
    def error_body(self, error_type: str, message: str) -> dict[str, Any]:
        """The JSON body of an error response."""

    def fault_status(self, turn: Fault) -> int:
        """The HTTP status an error fault is answered with."""
        return turn.http_status()

    @abc.abstractmethod
    def render_message(self, turn: Reply, request: RecordedRequest) -> dict[str, Any]:
        """The non-streamed JSON reply."""

    @abc.abstractmethod
    def sse_events(
        self, turn: Reply, request: RecordedRequest
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The ``(event name, data)`` sequence of a streamed reply."""

    def sse_frame(self, name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    def stream_end(self, request: RecordedRequest) -> bytes:
        """What follows the last event of a complete stream (e.g. OpenAI's ``[DONE]``)."""
        return b""

    def error_event_frame(self, request: RecordedRequest, error_type: str, message: str) -> bytes:
        """An error reported in the middle of a stream."""
        return self.sse_frame("error", self.error_body(error_type, message))

    def malformed_frame(self) -> bytes:
        return b"event: content_block_delta\ndata: {not json\n\n"

    def other_route(self, path: str, body: Any) -> dict[str, Any] | None:
        """A JSON answer for a POST route besides :attr:`model_paths` (None: not found)."""
        return None


ServerT = TypeVar("ServerT", bound=ScriptedServer)


class ScriptedAnthropicServer(ScriptedServer):
    """Serve scripted Messages API replies on ``http://127.0.0.1:<port>``.

    >>> with ScriptedAnthropicServer([reply(text("Hi"))]) as server:      # doctest: +SKIP
    ...     chat = AnthropicChat(base_url=server.url, api_key="test-key")
    """

    required_fields = ("model", "max_tokens", "messages")

    def error_body(self, error_type: str, message: str) -> dict[str, Any]:
        return _api_error(error_type, message)

    def fault_status(self, turn: Fault) -> int:
        # A mid-stream error asked of a non-streamed request: the API answers it as overloaded.
        return 529 if turn.fault == "error_event" else turn.http_status()

    def other_route(self, path: str, body: Any) -> dict[str, Any] | None:
        if path != "/v1/messages/count_tokens":
            return None
        prompt = [body.get("system"), body.get("tools"), body.get("messages")]
        return {"input_tokens": estimate_tokens(prompt)}

    # --- reply rendering ---------------------------------------------------------------------

    def _blocks(self, turn: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        for block in turn.content:
            if isinstance(block, ToolUseBlock):
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": block.id or self._new_tool_id(),
                        "name": block.name,
                        "input": block.input,
                    }
                )
            elif isinstance(block, TextBlock):
                blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ThinkingBlock):
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
            elif isinstance(block, RedactedThinkingBlock):
                blocks.append({"type": "redacted_thinking", "data": block.data})
        return blocks

    def _usage(
        self, turn: Reply, request: RecordedRequest, blocks: list[dict[str, Any]]
    ) -> dict[str, int]:
        body = request.json if isinstance(request.json, dict) else {}
        scripted = turn.usage
        input_tokens = scripted.input_tokens
        if input_tokens is None:
            prompt = [body.get("system"), body.get("tools"), body.get("messages")]
            input_tokens = estimate_tokens(prompt)
        output_tokens = scripted.output_tokens
        if output_tokens is None:
            output_tokens = estimate_tokens(blocks) if blocks else 1
        return {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": scripted.cache_read_input_tokens,
            "cache_creation_input_tokens": scripted.cache_creation_input_tokens,
        }

    def render_message(self, turn: Reply, request: RecordedRequest) -> dict[str, Any]:
        blocks = self._blocks(turn)
        body = request.json if isinstance(request.json, dict) else {}
        return {
            "id": self._new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": turn.model or body.get("model") or "claude-scripted",
            "content": blocks,
            "stop_reason": turn.effective_stop_reason(),
            "stop_sequence": None,
            "stop_details": turn.stop_details,
            "usage": self._usage(turn, request, blocks),
        }

    def sse_events(
        self, turn: Reply, request: RecordedRequest
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        message = self.render_message(turn, request)
        usage = message["usage"]
        start = {**message, "content": [], "stop_reason": None, "stop_details": None}
        start["usage"] = {**usage, "output_tokens": 1}
        yield "message_start", {"type": "message_start", "message": start}
        yield "ping", {"type": "ping"}
        for index, block in enumerate(message["content"]):
            yield from _block_events(index, block)
        delta = {
            "stop_reason": message["stop_reason"],
            "stop_sequence": None,
            "stop_details": message["stop_details"],
        }
        yield "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
        yield "message_stop", {"type": "message_stop"}


def chunk_text(text: str, *, by_words: bool = True) -> list[str]:
    """How a stream splits ``text``: word by word, or (JSON) in fixed-size pieces."""
    if by_words:
        return _TEXT_CHUNK.findall(text) or [text]
    return [text[i : i + _JSON_CHUNK_CHARS] for i in range(0, len(text), _JSON_CHUNK_CHARS)] or [""]


def _block_events(index: int, block: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = block["type"]

    def start(content_block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_start", {
            "type": "content_block_start",
            "index": index,
            "content_block": content_block,
        }

    def delta(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_delta", {
            "type": "content_block_delta",
            "index": index,
            "delta": payload,
        }

    if kind == "text":
        yield start({"type": "text", "text": ""})
        for piece in chunk_text(block["text"]):
            yield delta({"type": "text_delta", "text": piece})
    elif kind == "tool_use":
        yield start({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
        for piece in chunk_text(compact_json(block["input"]), by_words=False):
            yield delta({"type": "input_json_delta", "partial_json": piece})
    elif kind == "thinking":
        yield start({"type": "thinking", "thinking": "", "signature": ""})
        for piece in chunk_text(block["thinking"]):
            yield delta({"type": "thinking_delta", "thinking": piece})
        yield delta({"type": "signature_delta", "signature": block["signature"]})
    else:
        yield start(block)
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _api_error(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


class _Handler(BaseHTTPRequestHandler):
    server_ref: ScriptedServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests and notebooks do not want an access log on stderr."""

    def setup(self) -> None:
        super().setup()
        # Many small SSE writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms stalls.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server_ref._lock:
            self.server_ref._connections.add(self.connection)

    def finish(self) -> None:
        with self.server_ref._lock:
            self.server_ref._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    # --- plumbing ----------------------------------------------------------------------------

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", f"req_scripted_{self.server_ref._received}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")
            self.wfile.flush()
        except OSError as exc:
            raise _ClientGoneError from exc

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _cut_connection(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # --- routes ------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._read_body()
        not_found = f"Not found: GET {self.path}"
        self._send_json(404, self.server_ref.error_body("not_found_error", not_found))

    def do_POST(self) -> None:
        server = self.server_ref
        raw = self._read_body()
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw.decode("utf-8") or "null")
        except ValueError:
            bad_json = "request body is not valid JSON"
            self._send_json(400, server.error_body("invalid_request_error", bad_json))
            return
        request = RecordedRequest(
            index=server._received,
            method="POST",
            path=path,
            headers=redact_headers(self.headers.items()),
            json=body,
        )
        problem = self._request_problem(body, path)
        if problem is not None:
            self._send_json(problem[0], problem[1])
            return
        if path not in server.model_paths:
            answer = server.other_route(path, body)
            if answer is None:
                not_found = f"Not found: POST {path}"
                self._send_json(404, server.error_body("not_found_error", not_found))
            else:
                self._send_json(200, answer)
            return
        with server._lock:
            request.index = server._received
            server._received += 1
            if server.keep_requests:
                server.requests.append(request)
        if server.on_request is not None:
            try:
                server.on_request(request)
            except Exception as exc:  # a broken hook must not hang the client
                server.errors.append(f"on_request hook raised {type(exc).__name__}: {exc}")
        try:
            turn = server._next(request)
        except ScriptError as exc:
            message = f"{type(server).__name__}: {exc}"
            server.errors.append(message)
            self._send_json(500, server.error_body("api_error", message))
            return
        streaming = bool(body.get("stream"))
        if isinstance(turn, Recorded):
            self._send_recorded(turn)
        elif isinstance(turn, Fault):
            self._play_fault(turn, request, streaming)
        elif streaming:
            self._stream(server.sse_events(turn, request), request, delay_s=turn.delay_s)
        else:
            self._send_json(200, server.render_message(turn, request))

    def _request_problem(self, body: Any, path: str) -> tuple[int, dict[str, Any]] | None:
        server = self.server_ref
        authless = path in server.open_paths
        if (
            server.require_auth
            and not authless
            and not any(self.headers.get(h) for h in server.auth_headers)
        ):
            needed = server.auth_header_names
            return 401, server.error_body("authentication_error", f"{needed} header is required")
        if not isinstance(body, dict):
            return 400, server.error_body(
                "invalid_request_error", "request body must be a JSON object"
            )
        for name in server.fields_required(path):
            if name not in body:
                return 400, server.error_body("invalid_request_error", f"{name}: Field required")
        return None

    def _stream(
        self,
        events: Iterable[tuple[str, dict[str, Any]]],
        request: RecordedRequest,
        *,
        delay_s: float = 0.0,
        stop_after: int | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        server = self.server_ref
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_scripted_{request.index}")
        self.end_headers()
        cut_short = False
        try:
            for count, (name, data) in enumerate(events):
                if stop_after is not None and count >= stop_after:
                    cut_short = True
                    break
                if delay_s and server._stopping.wait(delay_s):
                    self._cut_connection()
                    return
                self._write_chunk(server.sse_frame(name, data))
                request.events.append((name, data))
            if then is not None:
                then()
                return
            end = b"" if cut_short else server.stream_end(request)
            if end:
                self._write_chunk(end)
            self._write_chunk(b"")
        except _ClientGoneError:
            request._aborted.set()
            self.close_connection = True

    def _play_fault(self, turn: Fault, request: RecordedRequest, streaming: bool) -> None:
        server = self.server_ref
        if turn.fault in ("rate_limit", "overloaded", "server_error", "status"):
            headers = dict(turn.headers)
            if turn.retry_after is not None:
                headers["retry-after"] = (
                    turn.retry_after
                    if isinstance(turn.retry_after, str)
                    else f"{turn.retry_after:g}"
                )
            self._send_json(
                server.fault_status(turn),
                server.error_body(turn.api_error_type(), turn.api_message()),
                headers,
            )
            return
        reply = turn.streamed_reply()
        if not streaming:
            if turn.fault in ("drop", "truncate"):
                self._cut_connection()
            elif turn.fault == "malformed_sse":
                self._send_raw_json(b'{"id": "msg_broken", "content": [')
            else:
                self._send_json(
                    server.fault_status(turn),
                    server.error_body(turn.api_error_type(), turn.api_message()),
                )
            return
        events = server.sse_events(reply, request)
        if turn.fault == "drop":
            self._stream(
                events,
                request,
                delay_s=reply.delay_s,
                stop_after=turn.after_events,
                then=self._cut_connection,
            )
        elif turn.fault == "truncate":
            self._stream(events, request, delay_s=reply.delay_s, stop_after=turn.after_events)
        elif turn.fault == "malformed_sse":
            self._stream(
                events,
                request,
                delay_s=reply.delay_s,
                stop_after=turn.after_events,
                then=lambda: self._finish_with(server.malformed_frame()),
            )
        else:
            error = server.error_event_frame(request, turn.api_error_type(), turn.api_message())
            self._stream(
                events,
                request,
                delay_s=reply.delay_s,
                stop_after=turn.after_events,
                then=lambda: self._finish_with(error),
            )

    def _finish_with(self, data: bytes) -> None:
        self._write_chunk(data)
        self._write_chunk(b"")

    def _send_recorded(self, turn: Recorded) -> None:
        payload = turn.body.encode("utf-8")
        self.send_response(turn.status)
        for name, value in turn.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_raw_json(self, payload: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


__all__ = [
    "REDACTED",
    "RecordedRequest",
    "Script",
    "ScriptFunction",
    "ScriptedAnthropicServer",
    "ScriptedServer",
    "chunk_text",
    "estimate_tokens",
    "redact_headers",
    "wait_for",
]
