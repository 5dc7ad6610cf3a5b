"""One server's connection: start, list, call, crash, retry, stop (all on the MCP loop).

* **Start** opens the transport and the SDK's ``ClientSession``, sends ``initialize`` and lists
  tools, resources, templates and prompts, all within ``startup_timeout``. A server that does
  not answer in time (a hanging ``initialize`` included) is abandoned at the deadline: its
  process is stopped in the background, so the run waits no longer than the timeout.
* **Retry**: a server that failed to start is tried again on a later run, after a backoff that
  doubles per failure (2 s, 4 s, ... up to 5 min); ``%codelia mcp`` shows the state, the attempt
  and when the next try may happen. A server that crashed mid-call restarts on its next call.
* **Capabilities** the client advertises (answered in ``asks.py``): roots, sampling and elicitation
  (answered through the run's host, see ``tools/_host.py``; declined where nobody can answer).
  ``notifications/tools/list_changed`` (and the resource and prompt ones) mark the listings
  stale; they are fetched again before the next turn. Progress notifications and log messages
  during a call reach the call's tool card as ``tool.progress`` events.
* A tool that declares an ``outputSchema`` has the SDK validate its structured results; the
  validator library is imported in a worker thread as soon as such a tool is listed, so the
  first call neither pays the import nor stalls the loop other servers' calls run on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...tools import ToolContext, ToolError
from ...tools._host import (
    RUN_HOST,
    RunHost,
)
from ...tools.events import ToolProgressEvent
from .asks import CallScope, Listing, ServerAsks
from .config import McpServerConfig
from .transport import StderrLog, http_transport, stdio_transport

ServerState = Literal["not started", "starting", "ready", "failed", "crashed", "stopped"]
RETRY_BASE_S = 2.0
RETRY_MAX_S = 300.0
_CLIENT_NAME = "jupyter-codelia"


class McpServerError(ToolError):
    """An MCP server could not answer a call (start failure, crash, timeout, error result)."""


def _import_sdk() -> None:
    for module in ("mcp", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.sse"):
        importlib.import_module(module)


def _import_validator() -> None:
    importlib.import_module("jsonschema.validators")  # the SDK's outputSchema validator
    importlib.import_module("referencing")


_imports: dict[str, concurrent.futures.Future[None]] = {}
_imports_lock = threading.Lock()


def _imported(name: str, work: Callable[[], None]) -> concurrent.futures.Future[None]:
    """``work`` run once per process in a thread of its own; any event loop may await it."""
    with _imports_lock:
        future = _imports.get(name)
        if future is None:
            future = _imports[name] = concurrent.futures.Future()

            def run() -> None:
                try:
                    work()
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(None)

            threading.Thread(target=run, name=f"codelia-import-{name}", daemon=True).start()
    return future


async def _settled(future: concurrent.futures.Future[None]) -> None:
    # Once done, no wrap_future: its callback would wake the loop through its self-pipe, on
    # every tool call.
    if future.done():
        future.result()
    else:
        await asyncio.wrap_future(future)


async def sdk_imported() -> None:
    """Import the SDK (seconds on a cold, busy machine) off the loop, once, before any server's
    start clock runs: a startup timeout measures the server, not our imports."""
    await _settled(_imported("sdk", _import_sdk))


async def validator_ready() -> None:
    """The output-schema validator, imported off the loop once a tool declaring a schema is
    listed; a call of such a tool waits for it here instead of importing on the loop."""
    await _settled(_imported("validator", _import_validator))


@dataclass
class McpServer(ServerAsks):
    """One configured server and its connection (every method runs on the MCP loop)."""

    name: str
    config: McpServerConfig
    spool_dir: str = ""
    roots: list[Path] = field(default_factory=list)
    retry_base_s: float = RETRY_BASE_S
    state: ServerState = "not started"
    error: str | None = None
    attempts: int = 0
    next_retry_at: float = 0.0
    listing: Listing = field(default_factory=Listing)
    capabilities: Any = None
    updated_resources: set[str] = field(default_factory=set)
    subscribed: set[str] = field(default_factory=set)
    oauth: Any = None
    sign_in: tuple[Path, Callable[[str, str], None]] | None = None
    """Where OAuth tokens are kept and how a sign-in URL is shown (HTTP servers only)."""
    _session: Any = None
    _stop: asyncio.Event | None = None
    _runner: asyncio.Task[None] | None = None
    _starting: asyncio.Future[None] | None = None
    _stderr: StderrLog | None = None
    _scopes: list[CallScope] = field(default_factory=list)
    _retired: set[asyncio.Task[None]] = field(default_factory=set)
    """Connections abandoned at a deadline, still stopping their process (stop() waits)."""

    @property
    def tools(self) -> list[Any]:
        return self.listing.tools

    @property
    def is_ready(self) -> bool:
        return self.state == "ready"

    def due(self, now: float) -> bool:
        """Whether a start should be tried now (never started, crashed, or its backoff ran out)."""
        if self.config.disabled or self.state in ("ready", "starting"):
            return False
        return self.state != "failed" or now >= self.next_retry_at

    # -- start ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and list (concurrent callers share one attempt); raises on failure."""
        if self.state == "ready":
            return
        if self._starting is not None and not self._starting.done():
            await asyncio.shield(self._starting)
        else:
            await sdk_imported()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            self._starting = ready
            self.state, self.error = "starting", None
            self.attempts += 1
            self._stop = asyncio.Event()
            self._runner = loop.create_task(self._run(ready))
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.config.startup_timeout)
            except asyncio.TimeoutError:
                self._abandon_in_background()
                self._fail(
                    f"did not finish starting within {self.config.startup_timeout:g} s "
                    "(no answer to initialize)"
                )
        if not self.is_ready:
            raise McpServerError(self.failure_text())

    async def _run(self, ready: asyncio.Future[None]) -> None:
        """Hold the connection open (anyio scopes must close in the task that opened them)."""
        from mcp import ClientSession
        from mcp_types import Implementation

        from ... import __version__

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        sampling_callback=self._sample,
                        elicitation_callback=self._elicit,
                        list_roots_callback=self._list_roots,
                        logging_callback=self._log,
                        message_handler=self._on_message,
                        client_info=Implementation(name=_CLIENT_NAME, version=__version__),
                    )
                )
                initialized = await session.initialize()
                self.capabilities = initialized.capabilities
                self._session = session
                await self.refresh()
                self.state = "ready"
                self.attempts = 0
                ready.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # ExceptionGroups from anyio task groups included
            if not ready.done():
                self._fail(f"failed to start: {describe_exc(exc)}")
            elif self.state == "ready":
                self.state, self.error = "crashed", f"connection lost: {describe_exc(exc)}"
        finally:
            self._session = None
            if not ready.done():
                ready.set_result(None)

    def _transport(self) -> Any:
        if self.config.transport == "stdio":
            if self._stderr is not None:  # a restart: the last run's log was reported already
                self._stderr.close()
            self._stderr = StderrLog()
            return stdio_transport(self.config, self._stderr, self.spool_dir)
        if self.oauth is None and self.sign_in is not None and not _has_auth(self.config):
            from .oauth import oauth_provider

            token_dir, show = self.sign_in
            self.oauth = oauth_provider(self.name, self.config.url or "", token_dir, show)
        return http_transport(self.config, self.oauth)

    async def refresh(self) -> None:
        """List tools, resources, templates and prompts again (each only if offered), at once:
        one round trip's wait, not four."""
        session = self._session
        caps = self.capabilities
        resources = caps is not None and caps.resources is not None
        prompts = caps is not None and caps.prompts is not None
        listings = await asyncio.gather(
            _all_pages(session.list_tools, "tools"),
            _all_pages(session.list_resources, "resources") if resources else _nothing(),
            _all_pages(session.list_resource_templates, "resource_templates")
            if resources
            else _nothing(),
            _all_pages(session.list_prompts, "prompts") if prompts else _nothing(),
        )
        self.listing = Listing(*listings)
        if any(tool.output_schema for tool in self.listing.tools):
            _imported("validator", _import_validator)

    def _fail(self, reason: str) -> None:
        self.state, self.error = "failed", reason
        self.next_retry_at = time.monotonic() + min(
            RETRY_MAX_S, self.retry_base_s * 2 ** max(0, self.attempts - 1)
        )

    def failure_text(self) -> str:
        tail = self._stderr.tail() if self._stderr is not None else ""
        where = f"MCP server {self.name!r} ({self.config.describe()})"
        text = f"{where} {self.error or 'is not running'}."
        return f"{text}\nLast lines of its stderr:\n{tail}" if tail else text

    def state_text(self) -> str:
        """The state as ``%codelia mcp`` shows it (with the retry schedule of a failed one)."""
        if self.config.disabled:
            return "disabled"
        if self.state != "failed":
            return self.state
        wait = self.next_retry_at - time.monotonic()
        when = "on the next run" if wait <= 0 else f"on a run {wait:.0f} s from now or later"
        return f"failed, attempt {self.attempts}; tried again {when}"

    # -- calls ---------------------------------------------------------------------------------

    async def session(self) -> Any:
        if self.state != "ready":
            await self.start()
        if self.listing.stale:
            await self.refresh()
        return self._session

    async def call(self, tool: str, arguments: dict[str, Any], scope: CallScope) -> Any:
        session = await self.session()
        timeout = self.config.timeout
        if any(t.name == tool and t.output_schema for t in self.listing.tools):
            await validator_ready()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            scope.send(
                ToolProgressEvent(
                    tool_call_id=scope.ctx.tool_call_id,
                    progress=done,
                    total=total,
                    message=message,
                )
            )

        self._scopes.append(scope)
        try:
            return await asyncio.wait_for(
                session.call_tool(tool, arguments, progress_callback=progress), timeout
            )
        except asyncio.TimeoutError:
            raise McpServerError(
                f"MCP server {self.name!r} did not answer {tool!r} within {timeout:g} s; the "
                'call was abandoned (raise the server\'s "timeout" if it is just slow).'
            ) from None
        except Exception as exc:
            if (self._runner is not None and self._runner.done()) or is_connection_loss(exc):
                await self._abandon()
                self.state, self.error = "crashed", f"crashed during {tool!r}: {describe_exc(exc)}"
                raise McpServerError(
                    self.failure_text() + "\nIt will be restarted on its next call."
                ) from None
            raise McpServerError(
                f"MCP server {self.name!r} refused {tool!r}: {describe_exc(exc)}"
            ) from None
        finally:
            self._scopes.remove(scope)

    async def request(self, what: str, coro_factory: Any) -> Any:
        """A non-tool request (resources, prompts) with the call timeout and clear errors."""
        session = await self.session()
        try:
            return await asyncio.wait_for(coro_factory(session), self.config.timeout)
        except asyncio.TimeoutError:
            raise McpServerError(
                f"MCP server {self.name!r} did not answer {what} within {self.config.timeout:g} s"
            ) from None
        except McpServerError:
            raise
        except Exception as exc:
            raise McpServerError(
                f"MCP server {self.name!r} refused {what}: {describe_exc(exc)}"
            ) from None

    # -- stop ----------------------------------------------------------------------------------

    def _abandon_in_background(self) -> None:
        """Stop the connection without waiting (a hanging server must not hold the caller)."""
        runner, self._runner = self._runner, None
        if self._stop is not None:
            self._stop.set()
        if runner is not None and not runner.done():
            runner.cancel()
            self._retired.add(runner)
            runner.add_done_callback(self._retired.discard)
        self._session = None

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
        if self._retired:  # their shutdown is bounded (stdin closed, grace, kill)
            await asyncio.wait(set(self._retired), timeout=15)
        if self.state in ("ready", "starting"):
            self.state = "stopped"
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _has_auth(config: McpServerConfig) -> bool:
    return any(key.lower() == "authorization" for key in config.headers)


async def _nothing() -> list[Any]:
    return []


async def _all_pages(method: Any, attribute: str) -> list[Any]:
    """Every page of a paginated listing (at most 100 pages: a runaway cursor must end)."""
    from mcp_types import PaginatedRequestParams

    items: list[Any] = []
    cursor = None
    for _ in range(100):
        page = await method(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def host_of(ctx: ToolContext) -> RunHost | None:
    return await ctx.resolve(RUN_HOST)


def describe_exc(exc: BaseException) -> str:
    grouped = getattr(exc, "exceptions", None)  # an ExceptionGroup from an anyio task group
    if isinstance(grouped, (list, tuple)) and grouped:
        return describe_exc(grouped[0])
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_connection_loss(exc: BaseException) -> bool:
    import anyio

    if isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, EOFError)):
        return True
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED
