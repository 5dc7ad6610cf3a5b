"""Our agent events (``agent.event`` envelopes of the ``codelia`` comm) as ACP session updates.

One :class:`RunTranslator` per run turns each event into the ACP ``session/update`` payloads a
client shows: streamed text and thinking as message and thought chunks, tool cards as tool calls
with their kind (an edit with its diff, a plot as an image block), the todo list as a plan and
usage as a usage update. It keeps the run's last ``seq``, so an event that arrives twice (a
transcript replay overlapping the live stream) is dropped and order is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from acp import (
    image_block,
    plan_entry,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_user_message_text,
)
from acp.schema import (
    ContentToolCallContent,
    Cost,
    FileEditToolCallContent,
    PermissionOption,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    Usage,
    UsageUpdate,
)

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolContent = ContentToolCallContent | FileEditToolCallContent

# Which ACP kind each of our tools is, so a client draws the right card (edits show their diff,
# executions their command). Tools not named here (MCP tools, job control) are "other".
TOOL_KINDS: dict[str, ToolKind] = {
    "python": "execute",
    "shell": "execute",
    "notebook_run": "execute",
    "edit": "edit",
    "write": "edit",
    "apply_patch": "edit",
    "notebook_edit": "edit",
    "read": "read",
    "read_line": "read",
    "view_image": "read",
    "notebook_read": "read",
    "kernel_history": "read",
    "list_variables": "read",
    "inspect_variable": "read",
    "tool_output_cache": "read",
    "tool_output_cache_line": "read",
    "tool_output_cache_grep": "search",
    "mcp_read_resource": "read",
    "grep": "search",
    "glob": "search",
    "search": "search",
    "webfetch": "fetch",
    "todo_read": "think",
    "todo_new": "think",
    "todo_append": "think",
    "todo_patch": "think",
    "todo_clear": "think",
}

# The answers a person can give in the client, and the decision each one is in the kernel.
ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject_once"
PERMISSION_OPTIONS = [
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Always allow", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
]
DECISIONS = {ALLOW_ONCE: "allow", ALLOW_ALWAYS: "allow_remember", REJECT: "deny"}

SessionUpdate = Any
"""One ``session/update`` payload (the SDK's union of update models)."""


def tool_kind(tool: str) -> ToolKind:
    return TOOL_KINDS.get(tool, "other")


def _title(tool: str, args: dict[str, Any], display_name: str | None) -> str:
    """A one-line title: the tool and what it works on (a path, a command, the code's start)."""
    name = display_name or tool
    for key in ("file_path", "path", "command", "url", "pattern", "query"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return f"{name}: {_line(value)}"
    code = args.get("code")
    if isinstance(code, str) and code.strip():
        return f"{name}: {_line(code)}"
    return name


def _line(text: str, limit: int = 80) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _edit_content(tool: str, args: dict[str, Any]) -> list[ToolContent]:
    """The diff an edit card shows, from the call's own arguments."""
    path = args.get("file_path")
    if not isinstance(path, str):
        return []
    if tool == "write" and isinstance(args.get("content"), str):
        return [tool_diff_content(path, args["content"])]
    old, new = args.get("old_string"), args.get("new_string")
    if tool == "edit" and isinstance(old, str) and isinstance(new, str):
        return [tool_diff_content(path, new, old or None)]
    return []


def _locations(args: dict[str, Any]) -> list[ToolCallLocation] | None:
    path = args.get("file_path") or args.get("path")
    return [ToolCallLocation(path=path)] if isinstance(path, str) and path else None


def _result_content(event: dict[str, Any]) -> list[ToolContent]:
    """A result's text, then each image part as an image block (a plot, a viewed image)."""
    content: list[ToolContent] = []
    text = event.get("result")
    if isinstance(text, str) and text:
        content.append(tool_content(text_block(text)))
    for part in event.get("parts") or []:
        if not isinstance(part, dict) or part.get("type") != "image_url":
            continue
        url = str((part.get("image_url") or {}).get("url") or "")
        if url.startswith("data:") and ";base64," in url:
            mime, data = url[len("data:") :].split(";base64,", 1)
            content.append(tool_content(image_block(data, mime)))
    return content


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _priority(value: Any) -> Literal["high", "medium", "low"]:
    number = value if isinstance(value, int) else 3
    return "high" if number <= 2 else "medium" if number == 3 else "low"


@dataclass
class RunTranslator:
    """Turns one run's events, in ``seq`` order, into ACP session updates."""

    last_seq: int = -1
    streamed_text: str = ""
    streamed_thought: str = ""
    usage: Usage | None = None
    tools: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """tool_call_id -> (tool name, arguments) of the calls this run announced."""

    def accept(self, seq: int) -> bool:
        """Whether the event numbered ``seq`` is new (a repeat or an older one is dropped)."""
        if seq <= self.last_seq:
            return False
        self.last_seq = seq
        return True

    def updates(self, event: dict[str, Any]) -> list[SessionUpdate]:
        kind = event.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        return handler(self, event) if handler is not None else []

    # -------------------------------------------------------------- text

    def _text_delta(self, event: dict[str, Any]) -> list[SessionUpdate]:
        delta = str(event.get("delta") or "")
        self.streamed_text += delta
        return [update_agent_message_text(delta)] if delta else []

    def _text_block(self, event: dict[str, Any]) -> list[SessionUpdate]:
        """A whole block (``text`` or ``final``): only what its deltas did not already stream."""
        content = str(event.get("content") or "")
        streamed, self.streamed_text = self.streamed_text, ""
        rest = content[len(streamed) :] if content.startswith(streamed) else ""
        if not streamed:
            rest = content
        return [update_agent_message_text(rest)] if rest else []

    def _text_discarded(self, _event: dict[str, Any]) -> list[SessionUpdate]:
        # ACP cannot take back a chunk: say so, so the retried text does not read as a repeat.
        had, self.streamed_text = self.streamed_text, ""
        return (
            [update_agent_message_text("\n\n[the reply was cut off; retrying]\n\n")] if had else []
        )

    def _thought_delta(self, event: dict[str, Any]) -> list[SessionUpdate]:
        delta = str(event.get("delta") or "")
        self.streamed_thought += delta
        return [update_agent_thought_text(delta)] if delta else []

    def _thought_block(self, event: dict[str, Any]) -> list[SessionUpdate]:
        content = str(event.get("content") or "")
        streamed, self.streamed_thought = self.streamed_thought, ""
        if streamed:
            rest = content[len(streamed) :] if content.startswith(streamed) else ""
        else:
            rest = content
        return [update_agent_thought_text(rest)] if rest else []

    # -------------------------------------------------------------- tools

    def _tool_call(self, event: dict[str, Any]) -> list[SessionUpdate]:
        tool = str(event.get("tool") or "tool")
        call_id = str(event.get("tool_call_id") or "")
        args = _args(event)
        self.tools[call_id] = (tool, args)
        kind = tool_kind(tool)
        return [
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=call_id,
                title=_title(tool, args, event.get("display_name")),
                kind=kind,
                status="in_progress",
                content=_edit_content(tool, args) if kind == "edit" else None,
                locations=_locations(args),
                raw_input=args,
            )
        ]

    def _tool_progress(self, event: dict[str, Any]) -> list[SessionUpdate]:
        call_id = event.get("tool_call_id")
        message = event.get("message")
        if not isinstance(call_id, str) or call_id not in self.tools or not message:
            return []
        return [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                status="in_progress",
                content=[tool_content(text_block(str(message)))],
            )
        ]

    def _tool_result(self, event: dict[str, Any]) -> list[SessionUpdate]:
        call_id = str(event.get("tool_call_id") or "")
        tool, args = self.tools.get(call_id, (str(event.get("tool") or ""), {}))
        content = _result_content(event)
        if tool_kind(tool) == "edit" and not event.get("is_error"):
            # An update's content replaces the card's: keep the diff above the result.
            content = _edit_content(tool, args) + content
        return [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                status="failed" if event.get("is_error") else "completed",
                content=content or None,
                raw_output=event.get("result"),
            )
        ]

    def _todos(self, event: dict[str, Any]) -> list[SessionUpdate]:
        entries = []
        for item in event.get("todos") or []:
            if not isinstance(item, dict):
                continue
            status = item.get("status")
            entries.append(
                plan_entry(
                    str(item.get("content") or ""),
                    priority=_priority(item.get("priority")),
                    status=status
                    if status in ("pending", "in_progress", "completed")
                    else "pending",
                )
            )
        return [update_plan(entries)]

    def _usage(self, event: dict[str, Any]) -> list[SessionUpdate]:
        total_in = int(event.get("total_input_tokens") or 0)
        total_out = int(event.get("total_output_tokens") or 0)
        self.usage = Usage(
            input_tokens=total_in,
            output_tokens=total_out,
            total_tokens=total_in + total_out,
            cached_read_tokens=event.get("cache_read_tokens"),
            cached_write_tokens=event.get("cache_write_tokens"),
        )
        limit = event.get("context_limit")
        if not isinstance(limit, int):
            return []
        used = sum(
            int(event.get(key) or 0)
            for key in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
        )
        cost = event.get("total_cost_usd")
        return [
            UsageUpdate(
                session_update="usage_update",
                used=used,
                size=limit,
                cost=Cost(amount=float(cost), currency="USD") if cost is not None else None,
            )
        ]


def permission_tool_call(event: dict[str, Any]) -> ToolCallUpdate:
    """The tool call a ``permission.request`` asks about, as ``session/request_permission``
    shows it (its title says what would happen)."""
    tool = str(event.get("tool") or "")
    args = _args(event)
    call_id = event.get("tool_call_id") or event.get("request_id")
    kind = tool_kind(tool)
    message = str(event.get("message") or "")
    content: list[ToolContent] = _edit_content(tool, args) if kind == "edit" else []
    if message:
        content.insert(0, tool_content(text_block(message)))
    return ToolCallUpdate(
        tool_call_id=str(call_id),
        title=str(event.get("title") or _title(tool, args, None)),
        kind=kind,
        status="pending",
        content=content or None,
        raw_input=args or None,
    )


def user_message(prompt: str) -> SessionUpdate:
    """A past prompt, replayed when a session is loaded."""
    return update_user_message_text(prompt)


_HANDLERS = {
    "text_delta": RunTranslator._text_delta,
    "text": RunTranslator._text_block,
    "final": RunTranslator._text_block,
    "text_discarded": RunTranslator._text_discarded,
    "reasoning_delta": RunTranslator._thought_delta,
    "reasoning": RunTranslator._thought_block,
    "tool_call": RunTranslator._tool_call,
    "tool.progress": RunTranslator._tool_progress,
    "tool_result": RunTranslator._tool_result,
    "todos.updated": RunTranslator._todos,
    "usage": RunTranslator._usage,
}
