"""The script a :class:`ScriptedAnthropicServer` plays: turns, content blocks, usage and faults.

A turn is a :class:`Reply` (content blocks, stop reason, usage, optional pacing), a
:class:`Fault` (an HTTP error, a dropped connection, a malformed stream, an error event) or a
:class:`Recorded` response (a real API response replayed byte for byte: status, headers, raw
JSON or SSE body; see :func:`parse_recording` for the file format). All are pydantic models, so
a script can be written in Python with the builders below or loaded from JSON (``load_script``),
which is what ``python -m jupyter_codelia.testing`` reads::

    [{"content": [{"type": "text", "text": "Let me look."},
                  {"type": "tool_use", "name": "read", "input": {"file_path": "a.txt"}}]},
     {"fault": "rate_limit", "retry_after": 2},
     {"content": [{"type": "text", "text": "Done."}],
      "usage": {"input_tokens": 120, "output_tokens": 8, "cache_read_input_tokens": 100}}]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import CodeliaError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- content blocks --------------------------------------------------------------------------


class TextBlock(_Strict):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(_Strict):
    type: Literal["tool_use"] = "tool_use"
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None  # None: the server numbers it (toolu_1, toolu_2, ...)
    may_fail: bool = False
    """The script expects this call may fail (a tool error, a denial) and goes on after it."""
    expect: str | None = None
    """Text the call's result must contain for the script to go on (see ``play``)."""


class ThinkingBlock(_Strict):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str = "sig-scripted"


class RedactedThinkingBlock(_Strict):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


ScriptBlock = Annotated[
    TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock, Field(discriminator="type")
]


class ScriptUsage(_Strict):
    """Token counts reported for a reply (Anthropic's names: input excludes cache tokens)."""

    input_tokens: int | None = None  # None: estimated from the request size
    output_tokens: int | None = None  # None: estimated from the reply size
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


# --- turns -----------------------------------------------------------------------------------


class Reply(_Strict):
    """A successful model reply."""

    content: list[ScriptBlock] = Field(default_factory=list)
    stop_reason: str | None = None  # None: "tool_use" when the reply calls a tool, else "end_turn"
    stop_details: dict[str, Any] | None = None
    usage: ScriptUsage = Field(default_factory=ScriptUsage)
    model: str | None = None  # None: echo the requested model
    delay_s: float = Field(default=0.0, ge=0)  # pause before each SSE event (slow streams)

    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(b.type == "tool_use" for b in self.content) else "end_turn"


FaultKind = Literal[
    "rate_limit",
    "overloaded",
    "server_error",
    "status",
    "drop",
    "truncate",
    "malformed_sse",
    "error_event",
]


class Fault(_Strict):
    """A failure to act out instead of a reply.

    - ``rate_limit``: HTTP 429 ``rate_limit_error`` with ``retry_after`` (seconds or an HTTP date)
      and any extra ``headers`` (e.g. ``anthropic-ratelimit-requests-reset``).
    - ``overloaded``: HTTP 529 ``overloaded_error``.
    - ``server_error``: HTTP ``status`` (default 500) ``api_error``.
    - ``status``: any HTTP ``status`` with ``error_type`` and ``message``.
    - ``drop``: stream ``reply`` for ``after_events`` SSE events, then cut the connection.
    - ``truncate``: stream ``after_events`` events, then end the body cleanly (no message_stop).
    - ``malformed_sse``: stream ``after_events`` events, then an undecodable ``data:`` line.
    - ``error_event``: stream ``after_events`` events, then an SSE ``error`` event of
      ``error_type`` (default ``overloaded_error``), as the API does when it fails mid-reply.
    """

    fault: FaultKind
    status: int | None = None
    error_type: str | None = None
    message: str | None = None
    retry_after: float | str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    after_events: int = Field(default=3, ge=0)
    reply: Reply | None = None

    @model_validator(mode="after")
    def _check(self) -> Fault:
        if self.fault == "status" and self.status is None:
            raise ValueError("a 'status' fault needs status=<HTTP code>, e.g. 400")
        if self.status is not None and not 400 <= self.status <= 599:
            raise ValueError(f"fault status must be an HTTP error code 400-599, got {self.status}")
        return self

    def http_status(self) -> int:
        defaults = {"rate_limit": 429, "overloaded": 529, "server_error": 500}
        return self.status or defaults.get(self.fault, 500)

    def api_error_type(self) -> str:
        if self.error_type:
            return self.error_type
        status = self.http_status()
        by_fault = {"rate_limit": "rate_limit_error", "overloaded": "overloaded_error"}
        if self.fault in by_fault:
            return by_fault[self.fault]
        if self.fault == "error_event":
            return "overloaded_error"
        return {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            413: "request_too_large",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error" if status >= 500 else "invalid_request_error")

    def api_message(self) -> str:
        if self.message:
            return self.message
        return {
            "rate_limit": "Number of request tokens has exceeded your rate limit (scripted).",
            "overloaded": "Overloaded (scripted).",
            "error_event": "Overloaded (scripted, mid-stream).",
        }.get(self.fault, "Internal server error (scripted).")

    def streamed_reply(self) -> Reply:
        return self.reply or Reply(content=[TextBlock(text="This reply will not finish.")])


class Recorded(_Strict):
    """A response replayed verbatim: ``status``, ``headers`` and the raw ``body`` text (JSON or
    SSE, exactly as the API sent it). The server adds only ``content-length``."""

    status: int = Field(ge=100, le=599)
    headers: dict[str, str] = Field(default_factory=dict)
    body: str


Turn = Reply | Fault | Recorded

_HOP_BY_HOP = frozenset({"content-length", "transfer-encoding", "connection", "content-encoding"})


def parse_recording(raw: str, where: str = "recording") -> Recorded:
    """A recorded HTTP response in its file form → :class:`Recorded`.

    The file is the response as it came off the wire, minus transport framing::

        HTTP/1.1 200 OK
        content-type: text/event-stream
        request-id: req_011CVq...

        event: message_start
        data: {"type":"message_start","message":{...}}
        ...

    A status line (``HTTP/<version> <code> [reason]``), header lines (``name: value``), one
    blank line, then the body to the end of the file, byte for byte. Lines starting with ``#``
    before the status line are notes for the reader (where the recording's shape comes
    from) and are not sent. ``content-length``,
    ``transfer-encoding``, ``connection`` and ``content-encoding`` headers are dropped (the
    body is stored decoded and unchunked; the server frames it again).
    """
    while raw.startswith("#"):
        newline = raw.find("\n")
        raw = raw[newline + 1 :] if newline >= 0 else ""
    ends = [(raw.find(mark), mark) for mark in ("\r\n\r\n", "\n\n") if mark in raw]
    if not ends:
        raise ScriptError(f"{where}: no blank line between the headers and the body")
    at, mark = min(ends)
    head, body = raw[:at].replace("\r", ""), raw[at + len(mark) :]
    lines = head.split("\n")
    status_line = lines[0].split()
    if (
        len(status_line) < 2
        or not status_line[0].startswith("HTTP/")
        or not status_line[1].isdigit()
    ):
        raise ScriptError(
            f"{where}: the first line must be a status line like 'HTTP/1.1 200 OK', "
            f"got {lines[0]!r}"
        )
    headers: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise ScriptError(f"{where}: line {number} is not a 'name: value' header: {line!r}")
        if name.strip().lower() not in _HOP_BY_HOP:
            headers[name.strip().lower()] = value.strip()
    try:
        return Recorded(status=int(status_line[1]), headers=headers, body=body)
    except ValidationError as exc:
        raise ScriptError(f"{where}: {exc.errors()[0]['msg']}") from None


def load_recording(path: str | Path) -> Recorded:
    """Read a recorded response file (format: :func:`parse_recording`)."""
    file = Path(path)
    try:
        with file.open(encoding="utf-8", newline="") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ScriptError(f"cannot read recording {file}: {exc.strerror or exc}") from None
    return parse_recording(raw, str(file))


class ScriptError(CodeliaError, ValueError):
    """A script (Python or JSON) that cannot be played; the message says what to fix."""


def _turn_kind(raw: Any) -> type[BaseModel]:
    return Fault if isinstance(raw, dict) and "fault" in raw else Reply


def _recorded_turn(value: Any, where: str, base: Path | None) -> Recorded:
    if isinstance(value, str):
        path = Path(value)
        return load_recording(path if path.is_absolute() or base is None else base / path)
    if isinstance(value, dict):
        try:
            return Recorded.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(f"{_where(err['loc'])}: {err['msg']}" for err in exc.errors())
            raise ScriptError(f"{where}: recorded.{problems}") from None
    raise ScriptError(
        f'{where}: "recorded" is a file path or {{"status", "headers", "body"}}, '
        f"got {type(value).__name__}"
    )


_BLOCK_TYPES = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})


def _where(loc: tuple[Any, ...]) -> str:
    """``('content', 0, 'text', 'text')`` → ``content[0].text`` (drop pydantic's union tag)."""
    out = ""
    previous: Any = None
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not (isinstance(previous, int) and part in _BLOCK_TYPES):
            out += f".{part}" if out else str(part)
        previous = part
    return out or "(turn)"


def parse_turn(raw: Any, where: str = "turn", *, base: Path | None = None) -> Turn:
    """One turn from its JSON form: a dict with ``content``, with ``fault``, or with
    ``recorded`` (a recording file's path, relative to ``base``, or its status/headers/body)."""
    if isinstance(raw, (Reply, Fault, Recorded)):
        return raw
    if isinstance(raw, dict) and "recorded" in raw:
        if len(raw) != 1:
            raise ScriptError(f'{where}: a "recorded" turn has no other keys')
        return _recorded_turn(raw["recorded"], where, base)
    if not isinstance(raw, dict):
        raise ScriptError(
            f'{where}: expected an object like {{"content": [...]}} or {{"fault": ...}}, '
            f"got {type(raw).__name__}"
        )
    try:
        return _turn_kind(raw).model_validate(raw)  # type: ignore[return-value]
    except ValidationError as exc:
        problems = "; ".join(f"{_where(err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ScriptError(f"{where}: {problems}") from None


def parse_script(raw: Any, *, base: Path | None = None) -> list[Turn]:
    """A whole script from JSON data: a list of turns, or ``{"turns": [...]}``."""
    if isinstance(raw, dict) and "turns" in raw:
        raw = raw["turns"]
    if not isinstance(raw, list):
        raise ScriptError(
            f'a script is a JSON list of turns (or {{"turns": [...]}}), got {type(raw).__name__}'
        )
    return [parse_turn(item, f"turn {index + 1}", base=base) for index, item in enumerate(raw)]


def load_script(path: str | Path) -> list[Turn]:
    """Read a JSON script file (see the module docstring for the format)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read script file {file}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ScriptError(f"script file {file} is not valid JSON: {exc}") from None
    return parse_script(data, base=file.parent)


# --- builders --------------------------------------------------------------------------------


def text(value: str) -> TextBlock:
    """A text block."""
    return TextBlock(text=value)


def tool_use(
    name: str,
    input: dict[str, Any] | None = None,
    *,
    id: str | None = None,
    may_fail: bool = False,
    expect: str | None = None,
) -> ToolUseBlock:
    """A tool call; its ``input`` is streamed as ``input_json_delta`` chunks.

    For offline demos (``by_prompt``, ``play``): ``may_fail`` says a failure is part of the
    script; ``expect`` is text the result must contain, else the script stops with a note
    saying what came back. The server never sends either to the client.
    """
    return ToolUseBlock(name=name, input=input or {}, id=id, may_fail=may_fail, expect=expect)


def thinking(value: str, *, signature: str = "sig-scripted") -> ThinkingBlock:
    """An extended-thinking block, streamed as ``thinking_delta`` then ``signature_delta``."""
    return ThinkingBlock(thinking=value, signature=signature)


def redacted_thinking(data: str) -> RedactedThinkingBlock:
    return RedactedThinkingBlock(data=data)


def usage(
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    *,
    cache_read: int = 0,
    cache_creation: int = 0,
) -> ScriptUsage:
    """Token counts for :func:`reply`; ``input_tokens`` excludes cache tokens, as Anthropic's do."""
    return ScriptUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_input_tokens=cache_read,
        cache_creation_input_tokens=cache_creation,
    )


def reply(
    *blocks: TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock | str,
    stop_reason: str | None = None,
    stop_details: dict[str, Any] | None = None,
    usage: ScriptUsage | None = None,
    model: str | None = None,
    delay_s: float = 0.0,
) -> Reply:
    """A reply turn; plain strings become text blocks. ``delay_s`` paces the SSE events."""
    content = [text(b) if isinstance(b, str) else b for b in blocks]
    return Reply(
        content=content,
        stop_reason=stop_reason,
        stop_details=stop_details,
        usage=usage or ScriptUsage(),
        model=model,
        delay_s=delay_s,
    )


def recorded(path: str | Path) -> Recorded:
    """A turn that replays the recorded response in ``path`` verbatim (see
    :func:`parse_recording`)."""
    return load_recording(path)


def refusal(explanation: str | None = None) -> Reply:
    """A reply the safety classifier stopped (``stop_reason: "refusal"``)."""
    details = {"type": "refusal", "explanation": explanation} if explanation else None
    return Reply(content=[], stop_reason="refusal", stop_details=details)


class fault:  # noqa: N801 - a namespace of builders, read as ``fault.rate_limit(...)``
    """Builders for :class:`Fault` turns."""

    @staticmethod
    def rate_limit(
        retry_after: float | str | None = None, *, headers: dict[str, str] | None = None
    ) -> Fault:
        return Fault(fault="rate_limit", retry_after=retry_after, headers=headers or {})

    @staticmethod
    def overloaded(*, retry_after: float | str | None = None) -> Fault:
        return Fault(fault="overloaded", retry_after=retry_after)

    @staticmethod
    def server_error(status: int = 500, message: str | None = None) -> Fault:
        return Fault(fault="server_error", status=status, message=message)

    @staticmethod
    def status(
        status: int,
        error_type: str | None = None,
        message: str | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> Fault:
        return Fault(
            fault="status",
            status=status,
            error_type=error_type,
            message=message,
            headers=headers or {},
        )

    @staticmethod
    def drop(after_events: int = 3, reply: Reply | None = None) -> Fault:
        """Start streaming ``reply`` and cut the connection after ``after_events`` events."""
        return Fault(fault="drop", after_events=after_events, reply=reply)

    @staticmethod
    def truncate(after_events: int = 3, reply: Reply | None = None) -> Fault:
        """Stream ``after_events`` events, then end the response cleanly before message_stop."""
        return Fault(fault="truncate", after_events=after_events, reply=reply)

    @staticmethod
    def malformed_sse(after_events: int = 2, reply: Reply | None = None) -> Fault:
        return Fault(fault="malformed_sse", after_events=after_events, reply=reply)

    @staticmethod
    def error_event(
        error_type: str = "overloaded_error", after_events: int = 3, message: str | None = None
    ) -> Fault:
        return Fault(
            fault="error_event", error_type=error_type, after_events=after_events, message=message
        )


__all__ = [
    "Fault",
    "Recorded",
    "RedactedThinkingBlock",
    "Reply",
    "ScriptBlock",
    "ScriptError",
    "ScriptUsage",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "Turn",
    "fault",
    "load_recording",
    "load_script",
    "parse_recording",
    "parse_script",
    "parse_turn",
    "recorded",
    "redacted_thinking",
    "refusal",
    "reply",
    "text",
    "thinking",
    "tool_use",
    "usage",
]
