"""MCP servers as tool sources, through the official ``mcp`` SDK (stdio and streamable HTTP).

A :class:`McpServers` holds the configured servers (the ``mcpServers`` map other MCP clients
use: ``{"name": {"command": ..., "args": [...], "env": {...}}}`` or ``{"name": {"url": ...}}``).
Servers start lazily, the first time their tools are asked for, and stay connected across
turns; every connection lives on one private event-loop thread, so callers on any loop (a
notebook cell, a background run) share it, and :meth:`McpServers.close` (also run at
interpreter exit) stops them all.

Each listed tool becomes a :class:`McpTool` named ``<server>__<tool>`` whose JSON schema is the
server's own. Results map to our content parts (text, images, embedded text and blob
resources), so the cache, trimming and the panel treat them like ours. A server that fails to
start, crashes mid-call or hangs past its timeout yields an error result naming the server and
the cause (with the tail of its stderr), and the run goes on; a crashed server is restarted on
its next call. Permission rules match ``<server>__<tool>`` or a whole server as ``<server>__*``.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import json
import re
import tempfile
import threading
from collections.abc import Coroutine, Mapping
from concurrent.futures import Future
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .._redact import register_secret
from .._text import compact_json
from ..errors import CodeliaError
from ..llm.messages import (
    DocumentPart,
    DocumentSource,
    FunctionToolDefinition,
    ImagePart,
    OtherPart,
    TextPart,
)
from ..tools import PartsResult, TextResult, ToolContext, ToolError

TOOL_SEPARATOR = "__"
DEFAULT_CALL_TIMEOUT_S = 120.0
DEFAULT_START_TIMEOUT_S = 30.0
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_TOOL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
# Both Anthropic and OpenAI refuse tool names longer than this.
_MAX_TOOL_NAME = 64
_STDERR_TAIL_CHARS = 600
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})

ServerState = Literal["not started", "starting", "ready", "failed", "crashed", "stopped"]
T = TypeVar("T")


class McpConfigError(CodeliaError, ValueError):
    """An ``mcpServers`` entry cannot be used; the message names the server and the problem."""


class McpServerError(ToolError):
    """An MCP server could not answer a call (start failure, crash, timeout, error result)."""


class McpServerConfig(BaseModel):
    """One ``mcpServers`` entry: a command to run over stdio, or a streamable-HTTP ``url``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # Other clients write the transport explicitly; we infer it but accept the key.
    type: Literal["stdio", "http", "streamable-http", "streamable_http"] | None = None
    timeout: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)
    startup_timeout: float = Field(default=DEFAULT_START_TIMEOUT_S, gt=0)
    disabled: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError('give either "command" (stdio) or "url" (streamable HTTP), not both')
        if self.command is not None and not self.command.strip():
            raise ValueError('"command" must not be empty')
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f'"url" must start with http:// or https://, got {self.url!r}')
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """Where the server is, without env values or headers (they may hold secrets)."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return self.url or ""


def parse_mcp_servers(raw: Any, where: str) -> dict[str, McpServerConfig]:
    """Validate an ``mcpServers`` map (``where`` names its source in error messages)."""
    if not isinstance(raw, dict):
        raise McpConfigError(
            f'{where}: "mcpServers" must be an object mapping names to server settings, '
            f"got {type(raw).__name__}"
        )
    servers: dict[str, McpServerConfig] = {}
    for name, entry in raw.items():
        check_server_name(name, where)
        try:
            servers[name] = McpServerConfig.model_validate(entry)
        except ValidationError as exc:
            problems = "; ".join(
                (".".join(str(p) for p in err["loc"]) + ": " if err["loc"] else "") + err["msg"]
                for err in exc.errors(include_url=False)
            )
            raise McpConfigError(f"{where}: MCP server {name!r}: {problems}") from None
    return servers


def check_server_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not _SERVER_NAME.match(name) or TOOL_SEPARATOR in name:
        raise McpConfigError(
            f"{where}: MCP server name {name!r} must start with a letter or digit and use only "
            f"letters, digits, '-' and single '_' (tools are named <server>{TOOL_SEPARATOR}<tool>)"
        )


def tool_name(server: str, tool: str) -> str:
    """``<server>__<tool>``, made safe for every provider (allowed characters, 64 at most)."""
    return f"{server}{TOOL_SEPARATOR}{_TOOL_NAME_CHARS.sub('_', tool)}"[:_MAX_TOOL_NAME]


# --- results -----------------------------------------------------------------------------------


def _resource_part(resource: Any) -> Any:
    uri = resource.uri
    mime = resource.mime_type or ""
    text = getattr(resource, "text", None)
    if text is not None:
        return TextPart(text=f"[resource {uri}]\n{text}")
    blob = getattr(resource, "blob", "")
    if mime in _IMAGE_TYPES:
        return ImagePart.from_bytes(base64.b64decode(blob), mime)  # type: ignore[arg-type]
    if mime == "application/pdf":
        return DocumentPart(source=DocumentSource(data=blob))
    return OtherPart(provider="mcp", kind="resource", payload={"uri": uri, "mime_type": mime})


def content_parts(result: Any) -> list[Any]:
    """An MCP ``CallToolResult``'s content → our content parts (same order)."""
    parts: list[Any] = []
    for block in result.content:
        kind = block.type
        if kind == "text":
            parts.append(TextPart(text=block.text))
        elif kind == "image" and block.mime_type in _IMAGE_TYPES:
            parts.append(ImagePart.from_bytes(base64.b64decode(block.data), block.mime_type))
        elif kind == "resource":
            parts.append(_resource_part(block.resource))
        elif kind == "resource_link":
            parts.append(TextPart(text=f"[resource link {block.uri}] {block.name}"))
        else:  # audio, images of other formats: kept, described to the model by kind
            mime = getattr(block, "mime_type", None)
            parts.append(OtherPart(provider="mcp", kind=str(kind), payload={"mime_type": mime}))
    if not parts and result.structured_content is not None:
        parts.append(TextPart(text=compact_json(result.structured_content)))
    return parts


# --- the loop thread -----------------------------------------------------------------------------


class _LoopThread:
    """A daemon thread running the event loop every MCP connection lives on."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="codelia-mcp", daemon=True
        )
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)


# --- one server --------------------------------------------------------------------------------


@dataclass
class McpServer:
    """One configured server and its connection (all methods run on the MCP loop)."""

    name: str
    config: McpServerConfig
    state: ServerState = "not started"
    error: str | None = None
    tools: list[Any] = field(default_factory=list)
    _session: Any = None
    _stop: asyncio.Event | None = None
    _runner: asyncio.Task[None] | None = None
    _starting: asyncio.Future[None] | None = None
    _stderr: Any = None

    @property
    def is_ready(self) -> bool:
        return self.state == "ready"

    async def start(self) -> None:
        """Connect and list tools (once; concurrent callers share the attempt)."""
        if self.state == "ready":
            return
        if self._starting is not None and not self._starting.done():
            await asyncio.shield(self._starting)
            return
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._starting = ready
        self.state, self.error = "starting", None
        self._stop = asyncio.Event()
        self._runner = loop.create_task(self._run(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.config.startup_timeout)
        except asyncio.TimeoutError:
            await self._abandon()
            self._fail(f"did not finish starting within {self.config.startup_timeout:g} s")
        if not self.is_ready:  # _run set the state meanwhile
            raise McpServerError(self._failure_text())

    async def _run(self, ready: asyncio.Future[None]) -> None:
        """Hold the connection open (anyio scopes must close in the task that opened them)."""
        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                listed = await session.list_tools()
                self._session, self.tools = session, list(listed.tools)
                self.state = "ready"
                ready.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # ExceptionGroups from anyio task groups included
            if not ready.done():
                self._fail(f"failed to start: {_describe(exc)}")
                ready.set_result(None)
            elif self.state == "ready":
                self.state, self.error = "crashed", f"connection lost: {_describe(exc)}"
        finally:
            self._session = None
            if not ready.done():
                ready.set_result(None)

    def _transport(self) -> Any:
        config = self.config
        if config.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            if self._stderr is not None:  # a restart: the last run's log was reported already
                self._stderr.close()
            # Kept open for the connection's life, read back for crash reports; closed in stop().
            self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                mode="w+", encoding="utf-8", errors="replace"
            )
            parameters = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
            )
            return stdio_client(parameters, errlog=self._stderr)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=config.headers or None)
        return _owning(client, streamable_http_client(config.url or "", http_client=client))

    def _fail(self, reason: str) -> None:
        self.state, self.error = "failed", reason

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()[-_STDERR_TAIL_CHARS:].strip()
        except (OSError, ValueError):
            return ""
        return f"\nLast lines of its stderr:\n{text}" if text else ""

    def _failure_text(self) -> str:
        return (
            f"MCP server {self.name!r} ({self.config.describe()}) {self.error or 'is not running'}."
            f"{self._stderr_tail()}"
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        if self.state != "ready":
            await self.start()
        session = self._session
        timeout = self.config.timeout
        try:
            return await asyncio.wait_for(session.call_tool(tool, arguments), timeout)
        except asyncio.TimeoutError:
            raise McpServerError(
                f"MCP server {self.name!r} did not answer {tool!r} within {timeout:g} s; the "
                'call was abandoned (raise the server\'s "timeout" if it is just slow).'
            ) from None
        except Exception as exc:
            if (self._runner is not None and self._runner.done()) or _is_connection_loss(exc):
                await self._abandon()
                self.state, self.error = "crashed", f"crashed during {tool!r}: {_describe(exc)}"
                raise McpServerError(
                    self._failure_text() + "\nIt will be restarted on its next call."
                ) from None
            raise McpServerError(
                f"MCP server {self.name!r} refused {tool!r}: {_describe(exc)}"
            ) from None

    async def _abandon(self) -> None:
        runner, self._runner = self._runner, None
        if self._stop is not None:
            self._stop.set()
        if runner is not None and not runner.done():
            try:
                await asyncio.wait_for(runner, 5)
            except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
                runner.cancel()
        self._session = None

    async def stop(self) -> None:
        await self._abandon()
        if self.state in ("ready", "starting"):
            self.state = "stopped"
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


class _owning:  # noqa: N801 - reads as a context-manager helper
    """Enter ``transport`` and close ``client`` after it (the SDK leaves a given client open)."""

    def __init__(self, client: Any, transport: Any) -> None:
        self._client, self._transport = client, transport

    async def __aenter__(self) -> Any:
        return await self._transport.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._transport.__aexit__(*exc)
        finally:
            await self._client.aclose()


def _describe(exc: BaseException) -> str:
    grouped = getattr(exc, "exceptions", None)  # an ExceptionGroup from an anyio task group
    if isinstance(grouped, (list, tuple)) and grouped:
        return _describe(grouped[0])
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_connection_loss(exc: BaseException) -> bool:
    import anyio

    if isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, EOFError)):
        return True
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError) and "closed" in str(getattr(exc, "error", exc)).lower()


# --- tools ---------------------------------------------------------------------------------------


class McpTool:
    """One tool of one MCP server, as our ``Tool`` protocol (schema passed through)."""

    def __init__(self, servers: McpServers, server: McpServer, listed: Any) -> None:
        self.server_name = server.name
        self.remote_name: str = listed.name
        self.name = tool_name(server.name, listed.name)
        self.display_name = f"{listed.name} (MCP: {server.name})"
        about = (listed.description or "").strip()
        self.description = f"{about}\n(MCP server '{server.name}')".strip()
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
        result = await self._servers.run(
            self._servers.call(self.server_name, self.remote_name, arguments)
        )
        parts = content_parts(result)
        if result.is_error:
            text = "".join(p.text for p in parts if isinstance(p, TextPart)) or "(no message)"
            raise McpServerError(f"MCP server {self.server_name!r} reported an error: {text}")
        if all(isinstance(p, TextPart) for p in parts):
            return TextResult(text="".join(p.text for p in parts))
        return PartsResult(parts=parts)


# --- all servers ---------------------------------------------------------------------------------


class McpServers:
    """The configured MCP servers of one kernel: lazy start, shared connections, listing."""

    def __init__(self, configs: Mapping[str, McpServerConfig] | None = None) -> None:
        self._servers: dict[str, McpServer] = {}
        self._loop: _LoopThread | None = None
        self._lock = threading.Lock()
        for name, config in (configs or {}).items():
            self.add(name, config)

    def __repr__(self) -> str:
        return f"McpServers({', '.join(self._servers) or 'none'})"

    @property
    def names(self) -> list[str]:
        return list(self._servers)

    def server(self, name: str) -> McpServer:
        return self._servers[name]

    def add(self, name: str, config: McpServerConfig) -> None:
        """Add or replace a server (a replaced one is stopped).

        Its ``env`` values and ``headers`` (tokens, as a rule) become known secrets, redacted
        from tool outputs, events, logs and sessions like the kernel's own secret variables.
        """
        check_server_name(name, "MCP server")
        for value in (*config.env.values(), *config.headers.values()):
            register_secret(value)
            # "Bearer <token>": the token alone may appear in error texts too.
            register_secret(value.split(" ", 1)[-1])
        old = self._servers.get(name)
        self._servers[name] = McpServer(name, config)
        if old is not None and self._loop is not None:
            self._loop.submit(old.stop()).result(timeout=15)

    def fingerprint(self) -> str:
        """Changes whenever a server is added, removed or reconfigured."""
        return compact_json({n: s.config.model_dump(mode="json") for n, s in self._servers.items()})

    def _thread(self) -> _LoopThread:
        with self._lock:
            if self._loop is None:
                self._loop = _LoopThread()
                atexit.register(self.close)
            return self._loop

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the MCP loop from any event loop (cancellation carries over)."""
        return await asyncio.wrap_future(self._thread().submit(coro))

    def run_blocking(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the MCP loop from synchronous code."""
        return self._thread().submit(coro).result(timeout=timeout)

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        return await self._servers[server].call(tool, arguments)

    async def start_all(self) -> dict[str, str]:
        """Start every enabled server not running yet (in parallel); failures by server name."""
        pending = [
            s for s in self._servers.values() if not s.config.disabled and s.state != "ready"
        ]
        outcomes = await asyncio.gather(*(s.start() for s in pending), return_exceptions=True)
        return {
            s.name: str(outcome)
            for s, outcome in zip(pending, outcomes, strict=True)
            if isinstance(outcome, BaseException)
        }

    def tools(self) -> tuple[list[McpTool], dict[str, str]]:
        """Every ready server's tools, starting servers first; and the failures (name → text).

        Blocking: the notebook calls it while preparing a run, before the model is asked.
        """
        if not self._servers:
            return [], {}
        failures = self.run_blocking(self.start_all())
        tools = [
            McpTool(self, server, listed)
            for server in self._servers.values()
            if server.state == "ready"
            for listed in server.tools
        ]
        return tools, failures

    def describe(self) -> str:
        """The ``%codelia mcp`` listing: each server's transport, state and tools."""
        if not self._servers:
            return (
                "No MCP servers configured. Add one with\n"
                "  %codelia mcp add NAME -- command args...   (stdio)\n"
                "  %codelia mcp add NAME --url http://host/mcp   (streamable HTTP)\n"
                'or an "mcpServers" map in the codelia config file.'
            )
        lines = []
        for server in self._servers.values():
            state = "disabled" if server.config.disabled else server.state
            lines.append(
                f"{server.name}  [{server.config.transport}, {state}]  {server.config.describe()}"
            )
            if server.error and state in ("failed", "crashed"):
                lines.append(f"    error: {server.error}")
            for listed in server.tools:
                lines.append(f"    {tool_name(server.name, listed.name)}")
        return "\n".join(lines)

    async def _stop_all(self) -> None:
        await asyncio.gather(*(s.stop() for s in self._servers.values()))

    def close(self) -> None:
        """Stop every server and the loop thread (idempotent; also runs at exit)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            loop.submit(self._stop_all()).result(timeout=15)
        except Exception:  # best effort at shutdown: the processes die with us anyway
            pass
        loop.stop()
        atexit.unregister(self.close)


__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_START_TIMEOUT_S",
    "TOOL_SEPARATOR",
    "McpConfigError",
    "McpServer",
    "McpServerConfig",
    "McpServerError",
    "McpServers",
    "McpTool",
    "content_parts",
    "parse_mcp_servers",
    "tool_name",
]
