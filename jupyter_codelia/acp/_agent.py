"""``codelia-acp``'s ACP agent: each ACP session is a codelia session run in a Jupyter kernel.

An ACP client (Jupyter AI's chat, Zed) starts this process and speaks ACP on its stdio. Each
prompt runs in the kernel of the notebook it is about: a notebook the prompt attaches (started
when no kernel runs it), else the kernel the session used last, else the notebook session with
the latest activity, else a scratch notebook created for it in the session's directory. The run
is a side-panel run (``run.start`` on the ``codelia`` comm); its events stream back as ACP
session updates (see ``_mapping``), approvals become ``session/request_permission`` and the
answer goes back into the kernel, ``session/cancel`` is the panel's Stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
)

from .. import __version__
from ._aliases import SessionAliases
from ._errors import BRIDGE_ERRORS, BridgeError
from ._jupyter import JupyterServer, find_server
from ._kernel import CodeliaKernel
from ._mapping import (
    DECISIONS,
    PERMISSION_OPTIONS,
    REJECT,
    RunTranslator,
    permission_tool_call,
    user_message,
)
from ._ws_channel import WebsocketKernelChannel

log = logging.getLogger("jupyter_codelia.acp")

NOTEBOOK_MIME = "application/x-ipynb+json"
_STOP_REASONS = {"completed": "end_turn", "cancelled": "cancelled", "error": "end_turn"}


@dataclass
class _Session:
    """One ACP session: where it runs, and the codelia session it continues."""

    acp_id: str
    cwd: Path
    server: JupyterServer
    mcp_servers: dict[str, dict[str, Any]]
    codelia_id: str | None = None
    kernel_id: str | None = None
    run: tuple[CodeliaKernel, str] | None = None
    mcp_added: set[str] = field(default_factory=set)
    """Kernels the session's MCP servers were added to."""


class CodeliaAcpAgent:
    """The ACP ``Agent`` side of the bridge (one per ``codelia-acp`` process)."""

    def __init__(
        self,
        *,
        server_url: str | None = None,
        token: str | None = None,
        aliases: SessionAliases | None = None,
    ) -> None:
        self._server_url = server_url
        self._token = token
        self._client: Client | None = None
        self._sessions: dict[str, _Session] = {}
        self._kernels: dict[str, CodeliaKernel] = {}
        self._kernel_lock = asyncio.Lock()
        self._aliases = aliases or SessionAliases.default()

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def client(self) -> Client:
        if self._client is None:
            raise BridgeError("no ACP client is connected")
        return self._client

    # ------------------------------------------------------------------ ACP: setup

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **_kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="codelia", title="codelia", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_kwargs: Any
    ) -> NewSessionResponse:
        session = self._open(self._aliases.new_id(), cwd, mcp_servers)
        return NewSessionResponse(session_id=session.acp_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_kwargs: Any
    ) -> LoadSessionResponse:
        """Resume a codelia session (an ACP session id we gave, or a codelia session id), and
        replay its conversation as session updates first, as ACP asks."""
        session = self._open(session_id, cwd, mcp_servers)
        session.codelia_id = self._aliases.get(session_id) or session_id
        try:
            records = await session.server.codelia_transcript(session.codelia_id)
        except BridgeError:
            self._sessions.pop(session_id, None)
            raise RequestError.resource_not_found(session_id) from None
        translators: dict[str, RunTranslator] = {}
        for message in records:
            run_id = str(message.get("run_id"))
            if message.get("type") == "run.started":
                translators[run_id] = RunTranslator()
                await self._update(session_id, user_message(str(message.get("prompt") or "")))
            elif message.get("type") == "agent.event":
                translator = translators.setdefault(run_id, RunTranslator())
                await self._forward(session_id, translator, message)
        return LoadSessionResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_kwargs: Any
    ) -> ListSessionsResponse:
        where = Path(cwd) if cwd else Path.cwd()
        server = find_server(where, self._server_url, self._token)
        sessions = [
            SessionInfo(
                session_id=str(item["session_id"]),
                cwd=str(where),
                title=item.get("title") or item.get("last_user_message") or None,
                updated_at=item.get("updated_at"),
            )
            for item in await server.codelia_sessions()
            if isinstance(item.get("session_id"), str)
        ]
        return ListSessionsResponse(sessions=sessions)

    def _open(self, acp_id: str, cwd: str, mcp_servers: list[Any] | None) -> _Session:
        where = Path(cwd)
        try:
            server = find_server(where, self._server_url, self._token)
        except BRIDGE_ERRORS as exc:
            raise RequestError.internal_error({"message": str(exc)}) from None
        session = _Session(acp_id, where, server, mcp_entries(mcp_servers or []))
        self._sessions[acp_id] = session
        return session

    # ------------------------------------------------------------------ ACP: a turn

    async def prompt(self, session_id: str, prompt: list[Any], **_kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        text, notebooks = prompt_text(prompt, session.server)
        if not text.strip():
            raise RequestError.invalid_params({"message": "the prompt has no text"})
        try:
            kernel = await self._kernel_for(session, notebooks)
            fields: dict[str, Any] = {"prompt": text}
            if session.codelia_id is not None:
                fields["session_id"] = session.codelia_id
            else:
                fields["new_session"] = True
            run_id, codelia_id = await _start(kernel, fields)
        except BRIDGE_ERRORS as exc:
            await self._update(session_id, update_agent_message_text(f"codelia: {exc}"))
            return PromptResponse(stop_reason="end_turn")
        if session.codelia_id is None and codelia_id:
            session.codelia_id = codelia_id
            self._aliases.set(session.acp_id, codelia_id)
        session.run = (kernel, run_id)
        try:
            return await self._stream(session, kernel, run_id)
        finally:
            session.run = None

    async def _stream(
        self, session: _Session, kernel: CodeliaKernel, run_id: str
    ) -> PromptResponse:
        translator = RunTranslator()
        asks: set[asyncio.Task[None]] = set()
        status, message = "completed", None
        try:
            async for note in kernel.notifications(run_id):
                kind = note.get("type")
                if kind == "agent.event":
                    event = note.get("event") or {}
                    if event.get("type") == "permission.request" and translator.accept(
                        int(note.get("seq", -1))
                    ):
                        task = asyncio.ensure_future(self._ask(session, kernel, event))
                        asks.add(task)
                        task.add_done_callback(asks.discard)
                        continue
                    await self._forward(session.acp_id, translator, note)
                elif kind == "run.status" and note.get("status") in _STOP_REASONS:
                    status, message = str(note["status"]), note.get("message")
        except BRIDGE_ERRORS as exc:
            status, message = "error", str(exc)
        finally:
            for task in asks:
                task.cancel()
        if status == "error":
            await self._update(
                session.acp_id, update_agent_message_text(f"\n\ncodelia: the run failed: {message}")
            )
        return PromptResponse(stop_reason=_STOP_REASONS[status], usage=translator.usage)

    async def _forward(
        self, session_id: str, translator: RunTranslator, note: dict[str, Any]
    ) -> None:
        """One ``agent.event`` as its session updates (a repeated ``seq`` sends nothing)."""
        seq = note.get("seq")
        if not isinstance(seq, int) or not translator.accept(seq):
            return
        event = note.get("event")
        for update in translator.updates(event if isinstance(event, dict) else {}):
            await self._update(session_id, update)

    async def _ask(self, session: _Session, kernel: CodeliaKernel, event: dict[str, Any]) -> None:
        """A permission request put to the client; its answer goes back into the kernel."""
        fields: dict[str, Any] = {"permission_request_id": str(event.get("request_id"))}
        if event.get("kind", "tool") != "tool":
            # Forms, links and sign-ins need the notebook: ACP has no way to show them.
            fields.update(decision="deny", reason="not answerable from an ACP client")
        else:
            answer = await self.client.request_permission(
                session_id=session.acp_id,
                tool_call=permission_tool_call(event),
                options=PERMISSION_OPTIONS,
            )
            outcome = answer.outcome
            option = outcome.option_id if isinstance(outcome, AllowedOutcome) else REJECT
            fields["decision"] = DECISIONS.get(option, "deny")
            if option == REJECT:
                fields["reason"] = "rejected in the ACP client"
        with contextlib.suppress(*BRIDGE_ERRORS):  # answered elsewhere meanwhile (the side panel)
            await kernel.control("permission.respond", fields)

    async def cancel(self, session_id: str, **_kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.run is None:
            return
        kernel, run_id = session.run
        with contextlib.suppress(*BRIDGE_ERRORS):  # it ended meanwhile
            await kernel.control("run.cancel", {"run_id": run_id})

    async def _update(self, session_id: str, update: Any) -> None:
        await self.client.session_update(session_id=session_id, update=update)

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"message": f"unknown session {session_id}: create it with session/new first"}
            )
        return session

    # ------------------------------------------------------------------ kernels

    async def _kernel_for(self, session: _Session, notebooks: list[str]) -> CodeliaKernel:
        """The kernel this prompt runs in (see the module docstring for the choice)."""
        server = session.server
        running = [s for s in await server.sessions() if (s.get("kernel") or {}).get("id")]
        chosen: dict[str, Any] | None = None
        if notebooks:
            path = notebooks[0]
            chosen = next((s for s in running if s.get("path") == path), None)
            if chosen is None:
                chosen = await server.start_session(path)
        if chosen is None and session.kernel_id is not None:
            chosen = next((s for s in running if s["kernel"]["id"] == session.kernel_id), None)
        if chosen is None:
            notebook_sessions = [s for s in running if s.get("type") == "notebook"]
            if notebook_sessions:
                chosen = max(notebook_sessions, key=lambda s: str(s["kernel"].get("last_activity")))
        if chosen is None:
            path = await self._scratch_notebook(session)
            chosen = await server.start_session(path)
            await self._update(
                session.acp_id,
                update_agent_message_text(f"(codelia works in a new notebook: {path})\n\n"),
            )
        kernel_id = str(chosen["kernel"]["id"])
        session.kernel_id = kernel_id
        kernel = await self._connect(server, kernel_id)
        if kernel_id not in session.mcp_added:
            for name, entry in session.mcp_servers.items():
                await kernel.request("mcp.add", {"name": name, "server": entry})
            session.mcp_added.add(kernel_id)
        return kernel

    async def _scratch_notebook(self, session: _Session) -> str:
        folder = session.server.relative_path(session.cwd) or ""
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        name = f"codelia-acp-{stamp}.ipynb"
        path = f"{folder}/{name}" if folder and folder != "." else name
        await session.server.create_notebook(path)
        return path

    async def _connect(self, server: JupyterServer, kernel_id: str) -> CodeliaKernel:
        async with self._kernel_lock:
            kernel = self._kernels.get(kernel_id)
            if kernel is not None and not kernel.closed:
                return kernel
            if kernel is not None:  # restarted or gone: let its websocket go
                with contextlib.suppress(Exception):
                    await kernel.close()
            channel = await WebsocketKernelChannel.open(server, kernel_id)
            kernel = CodeliaKernel(channel, kernel_id)
            try:
                await kernel.start()
            except BaseException:
                await kernel.close()
                raise
            self._kernels[kernel_id] = kernel
            return kernel

    async def close(self) -> None:
        for kernel in self._kernels.values():
            with contextlib.suppress(Exception):
                await kernel.close()
        self._kernels.clear()


async def _start(kernel: CodeliaKernel, fields: dict[str, Any]) -> tuple[str, str | None]:
    from ..wire import RunStartResult, read_result

    started = read_result(RunStartResult, await kernel.request("run.start", fields))
    return started.run_id, started.session_id


def prompt_text(blocks: list[Any], server: JupyterServer) -> tuple[str, list[str]]:
    """The prompt's text for the kernel, and the notebooks (server paths) it attaches.

    Attached files are named in the text (the agent reads them with its tools); embedded text
    resources are added whole; images and audio are noted, since a run takes text only.
    """
    parts: list[str] = []
    notebooks: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            path = server_path(block.uri, server)
            if block.uri.endswith(".ipynb") or block.mime_type == NOTEBOOK_MIME:
                notebooks.append(path)
                parts.append(f"(This is about the notebook {path}.)")
            else:
                parts.append(f"(Attached: {path})")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(f"Attached {server_path(resource.uri, server)}:\n```\n{text}\n```")
        elif kind in ("image", "audio"):
            parts.append(f"(An attached {kind} was left out: codelia runs take text.)")
    return "\n\n".join(part for part in parts if part), notebooks


def server_path(uri: str, server: JupyterServer) -> str:
    """A ``file://`` URI or path as the server names it (relative to its root where inside)."""
    parsed = urlparse(uri)
    local = unquote(parsed.path) if parsed.scheme == "file" else uri
    if Path(local).is_absolute():
        return server.relative_path(Path(local)) or local
    return local


def mcp_entries(servers: list[Any]) -> dict[str, dict[str, Any]]:
    """ACP's MCP server descriptions as ``mcpServers`` entries of the codelia config."""
    entries: dict[str, dict[str, Any]] = {}
    for server in servers:
        kind = getattr(server, "type", None)
        if kind in ("http", "sse"):
            entry: dict[str, Any] = {"url": server.url}
            if kind == "sse":
                entry["type"] = "sse"
            if server.headers:
                entry["headers"] = {h.name: h.value for h in server.headers}
        elif getattr(server, "command", None):
            entry = {"command": server.command, "args": list(server.args)}
            if server.env:
                entry["env"] = {e.name: e.value for e in server.env}
        else:
            continue
        entries[server.name] = entry
    return entries
