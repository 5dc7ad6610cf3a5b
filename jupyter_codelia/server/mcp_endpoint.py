"""Our in-kernel tools for every agent: an MCP server at ``/codelia/mcp`` (streamable HTTP).

Claude Code, Cursor, Codex or Jupyter AI's agents connect with the Jupyter server's own token
(``Authorization: token …``); the handler is a Jupyter API handler, so a request without a valid
token is refused (403) and a cookie-only request needs the XSRF token like any other Jupyter
API call. The MCP protocol is the official SDK's (a low-level ``Server`` behind its
``StreamableHTTPSessionManager``), bridged into Tornado by :class:`McpHandler`.

Every kernel tool takes a ``notebook_path``: the server's session manager maps it to the
notebook's kernel, and a :class:`~.kernel_peer.KernelPeer` per kernel carries the call there
(``tool.call``, served by the kernel's own tools, approvals and side-panel cards). There is no
shared "current notebook": two agents, or one agent on two notebooks, never race for one. The
``notebooks`` tool lists open notebooks and their kernels.

A ``python`` call (or ``notebook_run``, ``job_wait``) waits at most :attr:`Relay.call_seconds`
(below the usual client timeouts): code still running then goes on as a background job, whose
id the result names, to be picked up with ``job_wait`` / ``job_output``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib.resources
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import tornado.iostream
import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import ensure_async, url_path_join

from .._redact import redact_secrets
from ..tools import ToolResultData
from ..wire import ExternalTool, ToolCallResult, ToolsListResult, read_result
from ._server_channel import ServerKernelChannel, tab_connected
from .kernel_peer import KernelPeer, PeerError

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger("jupyter_codelia.server.mcp")

SERVER_NAME = "jupyter-codelia"
CALL_SECONDS = 50.0
"""How long one call may keep its HTTP request open: clients give up after about a minute."""
LIST_SECONDS = 30.0
_MARGIN_SECONDS = 30.0
# The argument of each tool that says how long it waits; capped at call_seconds.
_WAIT_ARGUMENTS = {"python": "timeout_seconds", "notebook_run": "wait_seconds"}
_WAIT_ARGUMENTS_CAPPED = {"job_wait": "timeout_seconds"}
NOTEBOOK_PATH = {
    "type": "string",
    "description": "The notebook's path relative to the Jupyter server's root, as the "
    "notebooks tool lists it (e.g. 'analysis/sales.ipynb'). Its kernel runs the call.",
}
NOTEBOOKS_DESCRIPTION = (
    "List the notebooks open on this Jupyter server: path, kernel, its state, and whether a "
    "JupyterLab tab shows it. Every other tool takes one of these paths as notebook_path."
)


ERROR_OUTCOMES = frozenset({"error", "denied", "cut_off"})
"""The outcomes an MCP client hears as ``isError``: the call failed or was never run."""


@dataclasses.dataclass(frozen=True)
class RelayedCall:
    """A kernel tool's answer as the relay got it, and how it got there."""

    result: ToolCallResult
    queued: bool
    """Whether the call waited for a running cell (the kernel has no subshells)."""
    kernel_started: str | None
    """The kernel spec of the kernel started for the call, when no kernel ran the notebook."""


class KernelToolResult(ToolResultData):
    """A kernel tool's structured result over MCP (``structuredContent``): what the tool's
    result data says (how the call ended, the diff, the edit, the namespace changes, the job),
    and where the call is seen."""

    run_id: str | None = None
    """The run this call shows as in the notebook's codelia side panel."""
    output_ref: str | None = None
    """The output-cache entry with the whole output, when the content was cut to fit."""
    queued: bool = False
    """Whether the call waited for a running cell (the kernel has no subshells)."""


@functools.cache
def _packaged() -> tuple[dict[str, Any], ...]:
    text = importlib.resources.files(__package__).joinpath("kernel_tools.json").read_text()
    return tuple(json.loads(text)["tools"])


def packaged_listing() -> list[ExternalTool]:
    """The kernel tools as a kernel with the default settings lists them (``tools.list``),
    shipped with the package: ``kernel_tools.json``, which
    ``python -m jupyter_codelia.notebook.run.external`` writes."""
    return [ExternalTool.model_validate(tool) for tool in _packaged()]


@functools.cache
def output_schema() -> dict[str, Any]:
    """The JSON schema of every kernel tool's structured result."""
    return KernelToolResult.model_json_schema()


NOTEBOOKS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "notebooks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "notebook_path": {"type": "string"},
                    "kernel_id": {"type": "string"},
                    "kernel_name": {"type": ["string", "null"]},
                    "execution_state": {"type": ["string", "null"]},
                    "tab_open": {
                        "type": "boolean",
                        "description": "a websocket (a tab, or another tool) holds the kernel",
                    },
                },
                "required": ["notebook_path", "kernel_id", "tab_open"],
            },
        }
    },
    "required": ["notebooks"],
}


class RelayUnavailableError(PeerError):
    """The jupyter_codelia server extension is not loaded in this Jupyter server."""


_current: list[Relay] = []
"""The relay of the Jupyter server in this process (set when the extension loads)."""


def current_relay() -> Relay:
    """This process's relay, for tools registered elsewhere (Jupyter AI's MCP server)."""
    if not _current:
        raise RelayUnavailableError(
            "the jupyter_codelia server extension is not loaded in this Jupyter server "
            "(jupyter server extension enable jupyter_codelia, then restart it)"
        )
    return _current[-1]


class NotebookNotFoundError(PeerError):
    """No running kernel belongs to the notebook path a call named."""


class Relay:
    """One per Jupyter server: notebook paths to kernels, and a kernel peer per kernel."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self.call_seconds = CALL_SECONDS
        self._peers: dict[str, KernelPeer] = {}
        self._peer_lock = asyncio.Lock()
        self._listing: list[ExternalTool] | None = None
        self._start_lock = asyncio.Lock()

    # ------------------------------------------------------------------ notebooks

    async def notebooks(self) -> list[dict[str, Any]]:
        """The open notebooks (sessions of type notebook) with their kernels."""
        sessions = await self.serverapp.session_manager.list_sessions()
        rows = []
        for session in sessions:
            kernel = session.get("kernel") or {}
            if session.get("type", "notebook") != "notebook" or not kernel.get("id"):
                continue
            rows.append(
                {
                    "notebook_path": session.get("path"),
                    "kernel_id": kernel["id"],
                    "kernel_name": kernel.get("name"),
                    "execution_state": kernel.get("execution_state"),
                    "tab_open": tab_connected(self.serverapp.kernel_manager, kernel["id"]),
                }
            )
        return rows

    async def kernel_of(self, notebook_path: str) -> tuple[str, str | None]:
        """The kernel of ``notebook_path``, and the kernel's name when it was started now.

        A notebook file nobody has open gets a kernel of its own (its kernelspec's), as
        JupyterLab starts one when the person opens it; a path with no notebook is refused."""
        wanted = notebook_path.strip().lstrip("/")
        rows = await self.notebooks()
        for row in rows:
            if str(row["notebook_path"]).lstrip("/") == wanted:
                return str(row["kernel_id"]), None
        async with self._start_lock:
            for row in await self.notebooks():  # started by a call that held the lock
                if str(row["notebook_path"]).lstrip("/") == wanted:
                    return str(row["kernel_id"]), None
            started = await self._start_kernel(wanted)
        if started is not None:
            return started
        known = ", ".join(repr(row["notebook_path"]) for row in rows) or "none"
        raise NotebookNotFoundError(
            f"no notebook {notebook_path!r} on this Jupyter server (open notebooks: {known}); "
            "pass the path of an .ipynb file relative to the server's root"
        )

    async def _start_kernel(self, path: str) -> tuple[str, str] | None:
        """Start ``path``'s kernel through the session manager (a session JupyterLab joins
        when the person opens the notebook); None when ``path`` is no notebook file."""
        contents = self.serverapp.contents_manager
        if not path.endswith(".ipynb") or not await ensure_async(contents.file_exists(path)):
            return None
        model = await ensure_async(contents.get(path, content=True, type="notebook"))
        metadata = (model.get("content") or {}).get("metadata") or {}
        spec = metadata.get("kernelspec") or {}
        name = spec.get("name") if isinstance(spec.get("name"), str) else None
        kernel_name = name or self.serverapp.kernel_manager.default_kernel_name
        session = await self.serverapp.session_manager.create_session(
            path=path, name=path.rsplit("/", 1)[-1], type="notebook", kernel_name=kernel_name
        )
        log.info("started a %s kernel for %s (an MCP call named it)", kernel_name, path)
        return str(session["kernel"]["id"]), str(kernel_name)

    # ------------------------------------------------------------------ kernels

    async def peer(self, kernel_id: str) -> KernelPeer:
        async with self._peer_lock:
            peer = self._peers.get(kernel_id)
            if peer is not None and not peer.closed:
                return peer
            if peer is not None:  # the kernel restarted or went away: let its channel go
                with contextlib.suppress(Exception):
                    await peer.close()
            manager = self.serverapp.kernel_manager
            channel = await ServerKernelChannel.open(manager, kernel_id)
            peer = KernelPeer(channel, has_tab=lambda: tab_connected(manager, kernel_id))
            peer.on_notebook_request = self._no_tab_answerer(peer, kernel_id)
            self._peers[kernel_id] = peer
        await peer.start()
        return peer

    def _no_tab_answerer(
        self, peer: KernelPeer, kernel_id: str
    ) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None:
        """The server-side answerer of the kernel's notebook requests when no tab is open,
        running cells through ``peer``."""
        import importlib
        import importlib.util

        from ._cell_runs import CellRuns

        # Written alongside (the no-tab edits); until it is installed the kernel says no tab.
        name = f"{__package__}.notebook_without_tab"
        if importlib.util.find_spec(name) is None:
            return None
        module: Any = importlib.import_module(name)
        documents: Any = importlib.import_module(f"{__package__}.notebook_doc")
        run_cells = CellRuns(peer, documents.CellRunResult)
        answerer = module.NotebookWithoutTab(self.serverapp, kernel_id, run_cells=run_cells)
        answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] = answerer.answer
        return answer

    async def close(self) -> None:
        peers, self._peers = list(self._peers.values()), {}
        for peer in peers:
            with contextlib.suppress(Exception):
                await peer.close()

    async def listing(self) -> list[ExternalTool]:
        """The kernel tools' descriptions, from the first notebook kernel that gives them;
        while none runs, the ones this package ships (listing never starts a kernel)."""
        if self._listing is not None:
            return self._listing
        for row in await self.notebooks():
            try:
                peer = await self.peer(str(row["kernel_id"]))
                reply = await peer.request("tools.list", timeout=LIST_SECONDS)
            except PeerError as exc:
                log.info("no tool listing from the kernel of %s: %s", row["notebook_path"], exc)
                continue
            self._listing = read_result(ToolsListResult, reply.result).tools
            return self._listing
        return packaged_listing()

    async def call(self, caller: str, name: str, arguments: dict[str, Any]) -> RelayedCall:
        """Run tool ``name`` in the kernel of ``arguments["notebook_path"]``: its result, whether
        it waited for a busy main shell, and the kernel started for it if none ran."""
        arguments = dict(arguments)
        path = arguments.pop("notebook_path", None)
        if not isinstance(path, str) or not path.strip():
            raise NotebookNotFoundError(
                f"{name} needs notebook_path (the notebooks tool lists the open notebooks)"
            )
        kernel_id, started = await self.kernel_of(path)
        peer = await self.peer(kernel_id)
        self._cap_waits(name, arguments)
        request = {"caller": caller, "tool": name, "arguments": arguments}
        reply = await peer.request(
            "tool.call", request, timeout=self.call_seconds + _MARGIN_SECONDS
        )
        answer = dict(reply.result)
        if isinstance(answer.get("data"), dict):
            # Only the result data this server knows: a newer kernel may send more.
            known = ToolResultData.model_fields
            answer["data"] = {key: value for key, value in answer["data"].items() if key in known}
        return RelayedCall(read_result(ToolCallResult, answer), reply.queued, started)

    def _cap_waits(self, name: str, arguments: dict[str, Any]) -> None:
        key = _WAIT_ARGUMENTS.get(name) or _WAIT_ARGUMENTS_CAPPED.get(name)
        if key is None or arguments.get("background"):
            return
        asked = arguments.get(key)
        limit = self.call_seconds
        if isinstance(asked, (int, float)) and not isinstance(asked, bool) and asked > 0:
            arguments[key] = min(float(asked), limit)
        elif name in _WAIT_ARGUMENTS:
            arguments[key] = limit


# ---------------------------------------------------------------------- the MCP server


def tool_annotations(tool: ExternalTool) -> dict[str, Any]:
    """The MCP annotations of a kernel tool, from what the kernel declares for it."""
    return {
        "readOnlyHint": tool.read_only,
        "destructiveHint": tool.destructive,
        "openWorldHint": False,
    }


def mcp_tools(listing: list[ExternalTool]) -> list[types.Tool]:
    """The MCP tools: the kernel's, each with ``notebook_path`` first, and ``notebooks``."""
    import mcp_types as types

    tools = [
        types.Tool(
            name="notebooks",
            description=NOTEBOOKS_DESCRIPTION,
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema=NOTEBOOKS_SCHEMA,
            annotations=types.ToolAnnotations(readOnlyHint=True, openWorldHint=False),
        )
    ]
    for tool in listing:
        schema = dict(tool.input_schema or {"type": "object"})
        schema["properties"] = {"notebook_path": NOTEBOOK_PATH, **(schema.get("properties") or {})}
        schema["required"] = ["notebook_path", *(schema.get("required") or [])]
        tools.append(
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=schema,
                output_schema=output_schema(),
                annotations=types.ToolAnnotations(**tool_annotations(tool)),
            )
        )
    return tools


def mcp_content(parts: list[dict[str, Any]]) -> list[Any]:
    """Content parts of a kernel result as MCP content blocks (images stay images)."""
    import mcp_types as types

    blocks: list[Any] = []
    for part in parts:
        if part.get("type") == "text":
            blocks.append(types.TextContent(text=str(part.get("text", ""))))
            continue
        url = str((part.get("image_url") or {}).get("url", ""))
        if part.get("type") == "image_url" and url.startswith("data:") and ";base64," in url:
            mime, data = url[len("data:") :].split(";base64,", 1)
            blocks.append(types.ImageContent(data=data, mime_type=mime))
        else:
            blocks.append(types.TextContent(text=json.dumps(part)))
    return blocks


def call_result(call: RelayedCall) -> types.CallToolResult:
    """A kernel's ``tool.call`` result as MCP's: the content (images as images), the typed
    result data as structured content, and ``isError`` when the call failed or was refused."""
    import mcp_types as types

    result = call.result
    content = mcp_content(result.content)
    if call.kernel_started:
        note = f"(No kernel ran this notebook: a {call.kernel_started} kernel was started for it.)"
        content.insert(0, types.TextContent(text=note))
    if call.queued:
        note = "(This kernel has no subshells: the call waited for the running cell to end.)"
        content.append(types.TextContent(text=note))
    data = KernelToolResult(
        **dict(result.data),
        run_id=result.run_id,
        output_ref=result.output_ref,
        queued=call.queued,
    )
    return types.CallToolResult(
        content=content,
        structured_content=data.model_dump(mode="json", exclude_none=True),
        is_error=result.is_error or data.outcome in ERROR_OUTCOMES,
    )


def build_server(relay: Relay) -> Server[Any]:
    """The MCP server whose tools run in the notebooks' kernels through ``relay``."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools(await relay.listing()))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name == "notebooks":
            rows = await relay.notebooks()
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(rows, indent=1))],
                structured_content={"notebooks": rows},
            )
        try:
            result = await relay.call(caller_name(ctx), params.name, arguments)
        except PeerError as exc:
            text = redact_secrets(str(exc))
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        return call_result(result)

    return Server(
        SERVER_NAME,
        instructions=(
            "Tools that run inside the Jupyter kernels of this server's notebooks, next to the "
            "person's live variables. Call notebooks first; pass its notebook_path to every "
            "other tool. Calls that change things may need the person's approval in the "
            "notebook's codelia side panel."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def caller_name(ctx: Any) -> str:
    """The calling agent's name, as its MCP client introduced itself."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return str(name)[:200] if name else "an MCP client"


class McpService:
    """The SDK's session manager, run for the server's life (started on the first request)."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self._manager: StreamableHTTPSessionManager | None = None
        self._task: asyncio.Task[None] | None = None
        self._started: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None

    async def manager(self) -> StreamableHTTPSessionManager:
        if self._started is None:
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            self._started, self._stop = asyncio.Event(), asyncio.Event()
            self._manager = StreamableHTTPSessionManager(
                app=build_server(self.relay), json_response=True
            )
            self._task = asyncio.ensure_future(_serve(self._manager, self._started, self._stop))
        await self._started.wait()
        assert self._manager is not None
        return self._manager

    async def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        await self.relay.close()


async def _serve(
    manager: StreamableHTTPSessionManager, started: asyncio.Event, stop: asyncio.Event
) -> None:
    async with manager.run():
        started.set()
        await stop.wait()


class McpHandler(APIHandler):
    """``/codelia/mcp``: the MCP streamable HTTP endpoint, behind Jupyter's authentication.

    Each request is handed to the SDK as an ASGI call; its answer (JSON, or an SSE stream that
    is flushed as it comes) is written back through Tornado.
    """

    def initialize(self, service: McpService) -> None:
        self.service = service
        self._gone = asyncio.Event()

    def on_connection_close(self) -> None:
        self._gone.set()

    @tornado.web.authenticated
    async def post(self) -> None:
        await self._serve()

    @tornado.web.authenticated
    async def get(self) -> None:
        await self._serve()

    @tornado.web.authenticated
    async def delete(self) -> None:
        await self._serve()

    async def _serve(self) -> None:
        manager = await self.service.manager()
        request = self.request
        host, _, port = (request.host or "127.0.0.1").partition(":")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.protocol,
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": (request.query or "").encode("latin-1"),
            "headers": [
                (key.lower().encode("latin-1"), value.encode("latin-1"))
                for key, value in request.headers.get_all()
            ],
            "client": (request.remote_ip or "127.0.0.1", 0),
            "server": (host, int(port) if port.isdigit() else 80),
        }
        body_sent = False
        content_type = "application/json"

        async def receive() -> dict[str, Any]:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": request.body or b"", "more_body": False}
            await self._gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal content_type
            if message["type"] == "http.response.start":
                self.set_status(message["status"])
                self.clear_header("Content-Type")
                for raw_key, raw_value in message.get("headers") or []:
                    key, value = raw_key.decode("latin-1"), raw_value.decode("latin-1")
                    if key.lower() == "content-type":
                        content_type = value
                    elif key.lower() != "content-length":
                        self.add_header(key, value)
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    self.write(message["body"])
                if message.get("more_body") and not self._gone.is_set():
                    self.set_header("Content-Type", content_type)
                    with contextlib.suppress(tornado.iostream.StreamClosedError):
                        await self.flush()

        await manager.handle_request(scope, receive, send)
        if not self._finished:
            self.finish(set_content_type=content_type)


def setup_mcp(web_app: Any, serverapp: Any) -> McpService:
    """Mount ``/codelia/mcp`` on the server; the service is closed with the extension."""
    relay = Relay(serverapp)
    service = McpService(relay)
    web_app.settings["codelia_relay"] = relay
    _current[:] = [relay]
    path = url_path_join(web_app.settings.get("base_url", "/"), "codelia", "mcp")
    web_app.add_handlers(".*$", [(path, McpHandler, {"service": service})])
    return service
