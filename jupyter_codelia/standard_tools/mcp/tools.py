"""The model-facing tools: one :class:`McpTool` per server tool, and the resource pair.

An :class:`McpTool` passes the server's JSON schema through and carries the server's annotations
as :class:`ToolHints`, and declares its risk from them (``ToolHints.risk``): ``title`` names its
card, ``readOnlyHint`` lets it run without asking in ``minimal`` mode (unless a rule says
otherwise), ``destructiveHint`` and ``openWorldHint`` are said on the approval card, and
``autoApprove`` / ``trust`` from the config let it run without asking. A result too big for the
context is streamed into the output cache under the call's ref (from the transport's spool,
never whole in memory) and the model gets a head and a tail with the ref.

``mcp_resources`` lists the resources and resource templates of every ready server (with the
ones that changed since they were read); ``mcp_read_resource`` reads one by URI, optionally
subscribing to its updates where the server offers subscriptions.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..._text import compact_json
from ...llm.messages import FunctionToolDefinition, TextPart
from ...tools import (
    FunctionTool,
    PartsResult,
    TextResult,
    ToolContext,
    ToolError,
    ToolRisk,
    define_tool,
)
from ._bigline import CHARS_KEY, HEAD_KEY, SPOOL_KEY, with_suppressed_unlink
from .asks import CallScope
from .results import block_parts, content_parts, joined_text, resource_parts
from .server import McpServerError, host_of

if TYPE_CHECKING:
    from .servers import McpServers

_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class ToolHints:
    """A server's annotations of one tool (hints: a server may be wrong about itself)."""

    title: str | None = None
    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True

    @classmethod
    def of(cls, listed: Any) -> ToolHints:
        notes = getattr(listed, "annotations", None)
        if notes is None:
            return cls(title=getattr(listed, "title", None))
        read_only = bool(notes.read_only_hint)
        return cls(
            title=notes.title or getattr(listed, "title", None),
            read_only=read_only,
            # The spec's defaults: destructive unless said otherwise (and never when read-only).
            destructive=not read_only and notes.destructive_hint is not False,
            idempotent=bool(notes.idempotent_hint),
            open_world=notes.open_world_hint is not False,
        )

    def risk(self, *, approved: bool) -> ToolRisk:
        """The tool's declared risk (``approved``: autoApprove or trust in the config)."""
        return ToolRisk.from_annotations(
            read_only=self.read_only,
            destructive=self.destructive,
            idempotent=self.idempotent,
            open_world=self.open_world,
            approved=approved,
            note=self.approval_note(),
        )

    def approval_note(self) -> str:
        """What the approval card says about the tool, from its annotations."""
        if self.read_only:
            said = "The server says this tool only reads."
        elif self.destructive:
            said = "The server says this tool may change or delete things."
        else:
            said = "The server says this tool only adds things, never deletes."
        if self.open_world:
            said += " It reaches outside (the web, other services)."
        return said


class McpTool:
    """One tool of one MCP server, as our ``Tool`` protocol (schema passed through)."""

    def __init__(
        self, servers: McpServers, server_name: str, listed: Any, name: str, auto_approved: bool
    ) -> None:
        self.server_name = server_name
        self.remote_name: str = listed.name
        self.name = name
        self.hints = ToolHints.of(listed)
        self.auto_approved = auto_approved
        self.risk = self.hints.risk(approved=auto_approved)
        self.display_name = f"{self.hints.title or listed.name} (MCP: {server_name})"
        about = (listed.description or "").strip()
        origin = f"(MCP server '{server_name}'" + (
            f", tool '{listed.name}')" if name != f"{server_name}__{listed.name}" else ")"
        )
        self.description = f"{about}\n{origin}".strip()
        schema = dict(listed.input_schema or {})
        schema.setdefault("type", "object")
        self.definition = FunctionToolDefinition(
            name=self.name, description=self.description, parameters=schema
        )
        self._servers = servers

    def __repr__(self) -> str:
        return f"<McpTool {self.name}>"

    async def execute_raw(self, raw_args_json: str, ctx: ToolContext) -> Any:
        try:
            arguments = json.loads(raw_args_json) if raw_args_json.strip() else {}
        except ValueError as exc:
            raise ToolError(f"Invalid tool arguments JSON for {self.name}: {exc}") from None
        if not isinstance(arguments, dict):
            raise ToolError(f"Arguments of {self.name} must be one JSON object")
        scope = await call_scope(ctx)
        result = await self._servers.run(
            self._servers.call(self.server_name, self.remote_name, arguments, scope)
        )
        spooled = None
        if any(SPOOL_KEY in (getattr(block, "meta", None) or {}) for block in result.content):
            spooled = await self._servers.run_sync(lambda: keep_spooled(result, self._servers, ctx))
        parts = content_parts(result)
        if result.is_error:
            text = joined_text(parts) or "(no message)"
            raise McpServerError(f"MCP server {self.server_name!r} reported an error: {text}")
        if spooled:
            parts = [TextPart(text=spooled), *[p for p in parts if not isinstance(p, TextPart)]]
        if all(isinstance(p, TextPart) for p in parts):
            return TextResult(text=joined_text(parts))
        return PartsResult(parts=parts)


async def call_scope(ctx: ToolContext) -> CallScope:
    """Where this call's progress, log lines and questions go: its context, on its loop."""
    return CallScope(ctx=ctx, loop=asyncio.get_running_loop(), host=await host_of(ctx))


def keep_spooled(result: Any, servers: McpServers, ctx: ToolContext) -> str | None:
    """Stream an oversized result's text into the output cache (bounded memory).

    Returns the model's view of its text (each spooled block's head, the cut with the ref, its
    tail), or None when nothing was spooled. Without an output store the head and tail are all
    that is kept, and the view says so.
    """
    texts = [block for block in result.content if block.type == "text"]
    spooled = [block for block in texts if SPOOL_KEY in (block.meta or {})]
    if not spooled:
        return None
    store = servers.output_store
    writer = None
    if store is not None and ctx.tool_call_id:
        writer = store.writer(tool_call_id=ctx.tool_call_id, tool_name=ctx.tool_name or "mcp")
    try:
        for block in texts:
            path = (block.meta or {}).get(SPOOL_KEY)
            if writer is None:
                continue
            if path is None:
                writer.write(block.text)
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                for chunk in iter(lambda: handle.read(_COPY_CHUNK), ""):
                    writer.write(chunk)
        ref = writer.close() if writer is not None else None
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        for block in spooled:
            with_suppressed_unlink(str((block.meta or {})[SPOOL_KEY]))
    return "".join(_window(block, ref.id if ref is not None else None) for block in texts)


def _window(block: Any, ref_id: str | None) -> str:
    meta = block.meta or {}
    chars = int(meta.get(CHARS_KEY, 0))
    head_chars = int(meta.get(HEAD_KEY, len(block.text)))
    if SPOOL_KEY not in meta or len(block.text) >= chars:
        return str(block.text)
    head, tail = block.text[:head_chars], block.text[head_chars:]
    cut = chars - len(head) - len(tail)
    if ref_id is None:
        where = "no output cache here, so the rest is not kept"
    else:
        line = head.count("\n") + 1
        offset = len(head) - (head.rfind("\n") + 1)
        read_on = compact_json(
            {"ref_id": ref_id, "line_number": line, "char_offset": offset, "char_limit": 10000}
        )
        where = f"the whole output is ref={ref_id}; read on with tool_output_cache_line({read_on})"
    return f"{head}\n\n[... {cut} of {chars} characters cut here; {where} ...]\n\n{tail}"


# --- resources -----------------------------------------------------------------------------------


class ResourcesInput(BaseModel):
    server: str | None = Field(None, description="Only this server's resources (default: all).")


class ReadResourceInput(BaseModel):
    server: str = Field(description="The MCP server that offers the resource.")
    uri: str = Field(description="The resource URI (from mcp_resources, a link or a template).")
    subscribe: bool = Field(
        False, description="Also be told when it changes (where the server offers updates)."
    )


def resource_tools(servers: McpServers) -> list[FunctionTool]:
    """``mcp_resources`` and ``mcp_read_resource`` over every ready server that has resources."""

    async def list_resources(params: ResourcesInput, ctx: ToolContext) -> str:
        return await servers.run(servers.resource_listing(params.server))

    async def read_resource(params: ReadResourceInput, ctx: ToolContext) -> Any:
        result = await servers.run(
            servers.read_resource(params.server, params.uri, params.subscribe)
        )
        parts = [part for contents in result.contents for part in resource_parts(contents)]
        if not parts:
            return f"Resource {params.uri} is empty."
        if all(isinstance(p, TextPart) for p in parts):
            return TextResult(text="\n".join(p.text for p in parts))
        return PartsResult(parts=parts)

    return [
        define_tool(
            name="mcp_resources",
            description=(
                "List the resources and resource templates the MCP servers offer (URI, name, "
                "type, size), marking those that changed since you read them. Read one with "
                "mcp_read_resource. Read-only."
            ),
            input=ResourcesInput,
            execute=list_resources,
            risk=ToolRisk(kind="network"),
        ),
        define_tool(
            name="mcp_read_resource",
            description=(
                "Read an MCP resource by URI (from mcp_resources, a resource link in a tool "
                "result, or a template with its {placeholders} filled in). Read-only."
            ),
            input=ReadResourceInput,
            execute=read_resource,
            risk=ToolRisk(kind="network"),
        ),
    ]


def describe_resource(resource: Any, updated: bool) -> str:
    about = [resource.mime_type or "", f"{resource.size} bytes" if resource.size else ""]
    extra = ", ".join(a for a in about if a)
    title = resource.title or resource.name
    flag = "  (changed since read)" if updated else ""
    return f"  {resource.uri}  {title}" + (f" [{extra}]" if extra else "") + flag


def describe_template(template: Any) -> str:
    title = template.title or template.name
    return f"  {template.uri_template}  {title} (template)"


def prompt_text(result: Any) -> str:
    """A prompt's messages as the text of one turn (roles marked when it has several)."""
    texts = []
    for message in result.messages:
        text = joined_text(block_parts(message.content))
        texts.append((message.role, text))
    if len(texts) == 1:
        return texts[0][1]
    return "\n\n".join(f"[{role}]\n{text}" for role, text in texts)
