"""All MCP servers of one kernel: one private loop thread, concurrent starts, the listing.

Every connection lives on one daemon thread's event loop, so callers on any loop (a notebook
cell's private loop, a background run on the kernel's loop) share them; :meth:`McpServers.close`
(also run at interpreter exit) stops them all. :meth:`McpServers.tools` is what a run asks
for before the model is called: it starts every server that is due (never started, crashed, or
failed with its backoff run out) concurrently, each within its own ``startup_timeout``, fetches
again the listings a server said changed, and returns the tools with unique names.
"""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from ..._redact import register_secret
from ..._text import compact_json
from .asks import CallScope
from .config import TOOL_SEPARATOR, McpServerConfig, ParsedServers, check_server_name
from .naming import unique_tool_names
from .server import RETRY_BASE_S, McpServer, McpServerError
from .tools import McpTool, describe_resource, describe_template, prompt_text, resource_tools

T = TypeVar("T")


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


class McpServers:
    """The configured MCP servers of one kernel: lazy start, shared connections, listing."""

    def __init__(
        self,
        configs: Mapping[str, McpServerConfig] | ParsedServers | None = None,
        *,
        retry_base_s: float = RETRY_BASE_S,
    ) -> None:
        self._servers: dict[str, McpServer] = {}
        self._loop: _LoopThread | None = None
        self._lock = threading.Lock()
        self._spool_dir: str | None = None
        self.retry_base_s = retry_base_s
        self.problems: dict[str, str] = {}
        self.notes: dict[str, list[str]] = {}
        self._reported: set[str] = set()
        self.output_store: Any = None
        """Where oversized results are streamed (the agent's output cache store)."""
        self.roots: list[Path] = []
        """What the servers are told they may work in (``roots/list``): the sandbox root."""
        self.token_dir: Path | None = None
        """Where OAuth tokens are kept (``<home>/mcp-oauth``); None: no OAuth."""
        self.show_sign_in: Callable[[str, str], None] = _print_sign_in
        """How a server's sign-in URL reaches the person (the notebook prints it)."""
        if isinstance(configs, ParsedServers):
            self.problems, self.notes = dict(configs.problems), dict(configs.notes)
            configs = configs.servers
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
        self._servers[name] = McpServer(name, config, retry_base_s=self.retry_base_s)
        self.problems.pop(name, None)
        if old is not None and self._loop is not None:
            self._loop.submit(old.stop()).result(timeout=15)

    def fingerprint(self) -> str:
        """Changes whenever a server is added, removed or reconfigured."""
        return compact_json({n: s.config.model_dump(mode="json") for n, s in self._servers.items()})

    # -- the loop ------------------------------------------------------------------------------

    def _thread(self) -> _LoopThread:
        with self._lock:
            if self._loop is None:
                self._loop = _LoopThread()
                atexit.register(self.close)
            if self._spool_dir is None:
                self._spool_dir = tempfile.mkdtemp(prefix="codelia-mcp-")
            return self._loop

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the MCP loop from any event loop (cancellation carries over)."""
        return await asyncio.wrap_future(self._thread().submit(coro))

    async def run_sync(self, work: Callable[[], T]) -> T:
        """Run blocking ``work`` (file copying) in a worker thread of the caller's loop."""
        return await asyncio.to_thread(work)

    def run_blocking(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the MCP loop from synchronous code."""
        return self._thread().submit(coro).result(timeout=timeout)

    # -- calls ---------------------------------------------------------------------------------

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], scope: CallScope
    ) -> Any:
        return await self._servers[server].call(tool, arguments, scope)

    def _ready(self, name: str) -> McpServer:
        server = self._servers.get(name)
        if server is None:
            known = ", ".join(self._servers) or "none"
            raise McpServerError(f"No MCP server {name!r} (configured: {known})")
        return server

    async def read_resource(self, name: str, uri: str, subscribe: bool = False) -> Any:
        server = self._ready(name)
        result = await server.request(f"resources/read {uri!r}", lambda s: s.read_resource(uri))
        server.updated_resources.discard(uri)
        caps = server.capabilities
        if subscribe and uri not in server.subscribed:
            if caps is None or caps.resources is None or not caps.resources.subscribe:
                raise McpServerError(
                    f"MCP server {name!r} offers no resource subscriptions; read {uri} again "
                    "when you need it fresh"
                )
            await server.request(f"resources/subscribe {uri!r}", lambda s: _subscribe(s, uri))
            server.subscribed.add(uri)
        return result

    async def resource_listing(self, name: str | None) -> str:
        servers = [self._ready(name)] if name else list(self._servers.values())
        lines: list[str] = []
        for server in servers:
            if name is None and not server.is_ready:
                continue
            await server.session()
            listing = server.listing
            if not listing.resources and not listing.templates:
                continue
            lines.append(f"MCP server {server.name!r}:")
            lines += [
                describe_resource(r, r.uri in server.updated_resources) for r in listing.resources
            ]
            lines += [describe_template(t) for t in listing.templates]
        return "\n".join(lines) or "No MCP server offers resources."

    async def prompt(self, name: str, prompt: str, arguments: dict[str, str]) -> str:
        """A server prompt, filled in with ``arguments``, as the text of one turn."""
        server = self._ready(name)
        await server.session()
        known = {p.name: p for p in server.listing.prompts}
        if prompt not in known:
            offered = ", ".join(known) or "none"
            raise McpServerError(
                f"MCP server {name!r} has no prompt {prompt!r} (its prompts: {offered})"
            )
        missing = [
            a.name for a in known[prompt].arguments or [] if a.required and a.name not in arguments
        ]
        if missing:
            raise McpServerError(
                f"Prompt {prompt!r} of MCP server {name!r} needs "
                + ", ".join(f"{m}=..." for m in missing)
            )
        result = await server.request(
            f"prompt {prompt!r}", lambda s: s.get_prompt(prompt, arguments)
        )
        return prompt_text(result)

    def turn_notice(self) -> str | None:
        """A block for the next turn naming subscribed resources that changed, or None."""
        changed = [
            f"{server.name}: {uri}"
            for server in self._servers.values()
            for uri in sorted(server.updated_resources & server.subscribed)
        ]
        if not changed:
            return None
        return (
            "<mcp_resources_changed>\nThese MCP resources you subscribed to changed since you "
            "read them (mcp_read_resource reads them again):\n"
            + "\n".join(changed)
            + "\n</mcp_resources_changed>"
        )

    # -- starting and listing ---------------------------------------------------------------

    async def start_due(self) -> dict[str, str]:
        """Start (concurrently) every server that is due; refresh stale listings; failures."""
        now = time.monotonic()
        for server in self._servers.values():
            server.spool_dir = self._spool_dir or ""
            server.roots = list(self.roots)
            if self.token_dir is not None:
                server.sign_in = (self.token_dir, self.show_sign_in)
        pending = [s for s in self._servers.values() if s.due(now)]
        outcomes = await asyncio.gather(*(s.start() for s in pending), return_exceptions=True)
        failures = {
            s.name: str(outcome)
            for s, outcome in zip(pending, outcomes, strict=True)
            if isinstance(outcome, BaseException)
        }
        stale = [s for s in self._servers.values() if s.is_ready and s.listing.stale]
        refreshed = await asyncio.gather(*(s.refresh() for s in stale), return_exceptions=True)
        for server, outcome in zip(stale, refreshed, strict=True):
            if isinstance(outcome, BaseException):
                failures[server.name] = (
                    f"MCP server {server.name!r}: could not list again: {outcome}"
                )
        return failures

    def tools(self) -> tuple[list[Any], dict[str, str]]:
        """Every ready server's tools (servers due start first) and what to report (name → text).

        The report holds this call's start failures and, once each, the config problems.
        Blocking: the notebook calls it while preparing a run, before the model is asked.
        """
        report = {n: p for n, p in self.problems.items() if n not in self._reported}
        self._reported.update(report)
        if not self._servers:
            return [], report
        report.update(self.run_blocking(self.start_due()))
        ready = [s for s in self._servers.values() if s.is_ready]
        offered = [
            (server, listed)
            for server in ready
            for listed in server.tools
            if server.config.offers(listed.name) and not _needs_tasks(listed)
        ]
        names = unique_tool_names((s.name, listed.name) for s, listed in offered)
        tools: list[Any] = [
            McpTool(
                self,
                server.name,
                listed,
                names[(server.name, listed.name)],
                auto_approved=server.config.trust or listed.name in server.config.auto_approve,
            )
            for server, listed in offered
        ]
        if any(s.listing.resources or s.listing.templates for s in ready):
            tools += resource_tools(self)
        return tools, report

    def describe(self) -> str:
        """The ``%codelia mcp`` listing: each server's transport, state, tools and notes."""
        if not self._servers and not self.problems:
            return (
                "No MCP servers configured. Add one with\n"
                "  %codelia mcp add NAME -- command args...   (stdio)\n"
                "  %codelia mcp add NAME --url http://host/mcp   (streamable HTTP)\n"
                'or an "mcpServers" map in the codelia config file.'
            )
        lines = []
        for server in self._servers.values():
            config = server.config
            state = server.state_text()
            lines.append(f"{server.name}  [{config.transport}, {state}]  {config.describe()}")
            if server.error and server.state in ("failed", "crashed"):
                lines.append(f"    error: {server.error}")
            for note in self.notes.get(server.name, []):
                lines.append(f"    note: {note}")
            names = unique_tool_names((server.name, t.name) for t in server.tools)
            for listed in server.tools:
                local = names[(server.name, listed.name)]
                exact = local == f"{server.name}{TOOL_SEPARATOR}{listed.name}"
                shown = local if exact else f"{local}  <- {listed.name!r}"
                if not config.offers(listed.name):
                    shown += "  (not offered: includeTools/excludeTools)"
                elif _needs_tasks(listed):
                    shown += "  (not offered: it runs only as an MCP task)"
                lines.append(f"    {shown}")
            if server.listing.resources or server.listing.templates:
                lines.append(
                    f"    resources: {len(server.listing.resources)}, templates: "
                    f"{len(server.listing.templates)} (mcp_resources, mcp_read_resource)"
                )
            if server.listing.prompts:
                lines.append(
                    "    prompts: "
                    + ", ".join(p.name for p in server.listing.prompts)
                    + f"  (%codelia mcp prompt {server.name} NAME key=value ...)"
                )
        for name, problem in self.problems.items():
            lines.append(f"{name or '(mcpServers)'}  [not usable]  {problem}")
        return "\n".join(lines)

    # -- stopping ------------------------------------------------------------------------------

    async def _stop_all(self) -> None:
        await asyncio.gather(*(s.stop() for s in self._servers.values()))

    def close(self) -> None:
        """Stop every server and the loop thread (idempotent; also runs at exit)."""
        with self._lock:
            loop, self._loop = self._loop, None
            spool, self._spool_dir = self._spool_dir, None
        if loop is not None:
            try:
                loop.submit(self._stop_all()).result(timeout=15)
            except Exception:  # best effort at shutdown: the processes die with us anyway
                pass
            loop.stop()
            atexit.unregister(self.close)
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


def _print_sign_in(server: str, url: str) -> None:
    print(
        f"MCP server {server!r} asks you to sign in: open {url}\n"
        "(the page sends you back to 127.0.0.1 on this machine; the run goes on after)",
        flush=True,
    )


def _needs_tasks(listed: Any) -> bool:
    execution = getattr(listed, "execution", None)
    return execution is not None and execution.task_support == "required"


async def _subscribe(session: Any, uri: str) -> Any:
    import warnings

    with warnings.catch_warnings():  # deprecated for 2026 servers; 2025 servers still use it
        warnings.simplefilter("ignore")
        return await session.subscribe_resource(uri)
