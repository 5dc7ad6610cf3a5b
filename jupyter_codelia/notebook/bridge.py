"""The ``codelia`` comm bridge for the JupyterLab side panel (docs/comm-protocol.md).

Front ends open a comm with target ``codelia``; the kernel answers ``hello`` and then forwards
every run's events as JSON envelopes to every open comm. Requests get exactly one ``response``;
malformed ones get ``ok: false`` with a message naming the problem, never a kernel traceback.

:func:`control` is the thread-safe entry point the side panel calls through an
``execute_request`` on a kernel subshell, so Stop and approval answers get through while a cell
is busy: ``__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control(json_str)``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._redact import redact_secrets
from ..errors import CodeliaError

if TYPE_CHECKING:
    from ..wire import StoreInfo
    from .frontend import FrontendClient
    from .run.external import ExternalCalls
    from .run.runner import NotebookAgent

TARGET = "codelia"
# The target of a comm the kernel opens for a panel that asked with ``panel.attach``: a comm the
# front end opens waits for a busy cell to end, one the kernel opens works at once.
PANEL_TARGET = "codelia.panel"
log = logging.getLogger("jupyter_codelia.notebook.bridge")

_DECISIONS = ("allow", "allow_remember", "deny")
# Requests that only touch thread-safe state, so control() may serve them from a subshell:
# besides Stop and approvals, the store reads (the session index and the tool-output cache are
# safe for several threads), so the panel can browse history while a cell is busy.
_CONTROL_SAFE = frozenset(
    {
        "run.cancel",
        "permission.respond",
        "cell.control",
        "state.get",
        "sessions.list",
        "session.transcript",
        "cache.list",
        "cache.read",
        "cache.grep",
        "cache.line",
        "cache.parts",
        "todos.get",
        "jobs.list",
        "job.stop",
        "notebook.reply",
        "panel.attach",
        # An outside agent's calls (the server's MCP endpoint): answered while a cell is busy.
        "tools.list",
        "tool.call",
    }
)


class RequestError(CodeliaError, ValueError):
    """A request that cannot be served; its message is the ``error`` of the response."""


def _field(data: dict[str, Any], name: str, kind: type, *, required: bool = True) -> Any:
    value = data.get(name)
    if value is None:
        if required:
            raise RequestError(f"{data.get('type')}: missing field {name!r}")
        return None
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise RequestError(f"{data.get('type')}: field {name!r} must be an integer")
    if not isinstance(value, kind):
        raise RequestError(f"{data.get('type')}: field {name!r} must be a {kind.__name__}")
    return value


class Bridge:
    """Serves the protocol for one kernel: open comms, requests and notifications."""

    def __init__(self, notebook_agent: NotebookAgent, frontend: FrontendClient) -> None:
        self.nb = notebook_agent
        self.frontend = frontend
        self.comms: list[Any] = []
        self._lock = threading.Lock()
        self._unsubscribe: Callable[[], None] | None = None
        self._external: ExternalCalls | None = None

    @property
    def external(self) -> ExternalCalls:
        """Outside agents' tool calls; someone can approve them while a panel is attached."""
        with self._lock:
            if self._external is None:
                from .run.external import ExternalCalls

                self._external = ExternalCalls(self.nb, lambda: bool(self.comms))
            return self._external

    # ------------------------------------------------------------------ comms

    def on_open(self, comm: Any, _msg: Any) -> None:
        self._adopt(comm)
        comm.send(self.hello())

    def _adopt(self, comm: Any) -> None:
        """Serve requests on ``comm`` and send it every notification from now on."""
        with self._lock:
            self.comms.append(comm)
            if self._unsubscribe is None:
                self._unsubscribe = self.nb.subscribe(self.notify)
        comm.on_msg(lambda msg: self._on_msg(comm, msg))
        comm.on_close(lambda _msg: self._forget(comm))

    def _forget(self, comm: Any) -> None:
        with self._lock:
            if comm in self.comms:
                self.comms.remove(comm)

    def _on_msg(self, comm: Any, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data")
        comm.send(self.handle(data))

    def notify(self, envelope: dict[str, Any]) -> None:
        with self._lock:
            comms = list(self.comms)
        for comm in comms:
            try:
                comm.send(envelope)
            except Exception:
                log.exception("could not send to a codelia comm")

    # ------------------------------------------------------------------ requests

    def hello(self, client_id: str | None = None) -> dict[str, Any]:
        from ..wire import Hello

        return Hello(**self.state(), client_id=client_id).dump()

    def state(self) -> dict[str, Any]:
        from ..wire import ActiveRun as WireActiveRun
        from ..wire import KernelState
        from .config import ConfigError, api_key_configured, api_key_env

        try:
            settings = self.nb.settings()
            model, mode = settings.model, settings.approval_mode
            provider = settings.provider
            if provider != "anthropic":  # the panel shows which service the model is on
                model = f"{provider}:{model}"
        except ConfigError as exc:
            model, mode = f"(configuration error: {exc})", "minimal"
            provider = "anthropic"
        active = self.nb.active
        agent = self.nb.agent
        state = KernelState(
            session_id=agent.session_id if agent is not None else None,
            model=model,
            approval_mode=mode,
            active_run=None
            if active is None
            else WireActiveRun(
                run_id=active.run_id,
                session_id=active.session_id,
                prompt=redact_secrets(active.prompt),
                source=active.source,
            ),
            provider=provider,
            api_key_env=api_key_env(provider),
            api_key_configured=api_key_configured(provider=provider),
            store=self.store(),
            # What control() serves, so front ends know which reads may go on a subshell.
            control_requests=sorted(_CONTROL_SAFE),
        )
        return state.dump()

    def store_changed(self) -> None:
        from ..wire import StoreChanged

        self.notify(StoreChanged(store=self.store()).dump())

    def store(self) -> StoreInfo:
        """Where this kernel's sessions and cache live, and the store id that names them.

        The Jupyter server compares the id with the one it sees at its own home: equal ids mean
        both read the same files, so the panel may list sessions from the server directly.
        """
        from ..session import ensure_store_id
        from ..wire import StoreInfo

        home = self.nb.home()
        try:
            store_id: str | None = ensure_store_id(home)
        except OSError as exc:
            log.warning("cannot create the store id in %s: %s", home, exc)
            store_id = None
        return StoreInfo(home=str(home), store_id=store_id)

    def handle(self, data: Any, *, from_control: bool = False) -> dict[str, Any]:
        """One request → one response envelope (never raises)."""
        from ..wire import response

        request_id = data.get("request_id") if isinstance(data, dict) else None
        if not isinstance(request_id, str):
            request_id = None
        try:
            if not isinstance(data, dict):
                raise RequestError(f"a request must be a JSON object, got {type(data).__name__}")
            if request_id is None:
                raise RequestError("missing field 'request_id' (a string chosen by the client)")
            kind = data.get("type")
            handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
            if handler is None:
                known = ", ".join(sorted(_HANDLERS))
                raise RequestError(f"unknown request type {kind!r}; known types: {known}")
            if from_control and kind not in _CONTROL_SAFE:
                raise RequestError(
                    f"{kind} cannot be sent through control(); send it over the codelia comm"
                )
            result = handler(self, data)
        except RequestError as exc:
            return response(request_id, error=str(exc))
        except Exception as exc:
            log.exception("codelia request failed")
            return response(request_id, error=f"{type(exc).__name__}: {exc}")
        return response(request_id, result=result)

    def _run_start(self, data: dict[str, Any]) -> dict[str, Any]:
        from .config import ConfigError, api_key_configured, api_key_help

        prompt = _field(data, "prompt", str)
        if not prompt.strip():
            raise RequestError("run.start: prompt is empty")
        session_id = _field(data, "session_id", str, required=False)
        new_session = bool(_field(data, "new_session", bool, required=False))
        if self.nb.active is not None:
            raise RequestError(f"a run is already active (run {self.nb.active.run_id})")
        try:
            settings = self.nb.settings()
            if not api_key_configured(provider=settings.provider):
                raise RequestError(api_key_help(settings.provider))
            agent = self.nb.prepare(settings, new_session=new_session, session_id=session_id)
        except ConfigError as exc:
            raise RequestError(str(exc)) from None
        except (KeyError, ValueError, OSError) as exc:
            raise RequestError(str(exc)) from None
        handle = self.nb.start_background(agent, prompt, source="panel")
        return {"run_id": handle.run_id, "session_id": handle.session_id}

    def _run_cancel(self, data: dict[str, Any]) -> dict[str, Any]:
        if not self.nb.cancel(_field(data, "run_id", str)):
            raise RequestError("run not found")
        return {}

    def _permission_respond(self, data: dict[str, Any]) -> dict[str, Any]:
        request_id = _field(data, "permission_request_id", str)
        decision = _field(data, "decision", str)
        if decision not in _DECISIONS:
            raise RequestError(
                f"permission.respond: decision must be one of {', '.join(_DECISIONS)}"
            )
        reason = _field(data, "reason", str, required=False)
        content = _field(data, "content", dict, required=False)
        if not self.nb.respond(request_id, decision, reason, content):
            raise RequestError("permission request not found")
        return {}

    def _cell_control(self, data: dict[str, Any]) -> dict[str, Any]:
        """A button of a blocking cell's panel: answer one of its run's approvals, or Stop."""
        from pydantic import ValidationError

        from ..wire import CellControl

        try:
            control = CellControl.model_validate(data)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise RequestError(f"cell.control: {where}: {problem['msg']}") from None
        if control.action == "stop":
            if not self.nb.cancel(control.run_id):
                raise RequestError("cell.control: this run has already ended")
            return {}
        approval_id = control.permission_request_id
        if approval_id is None:
            raise RequestError("cell.control: missing field 'permission_request_id'")
        request = self.nb.approvals.get(approval_id)
        # The button names its run: a stale page's button never answers another run's request.
        if request is None or request.run_id != control.run_id:
            raise RequestError("cell.control: this approval is no longer open")
        if not self.nb.respond(approval_id, control.action, control.reason):
            raise RequestError("cell.control: this approval was answered already")
        return {}

    def _sessions_list(self, _data: dict[str, Any]) -> dict[str, Any]:
        store = self.nb.session_store()
        return {
            "sessions": [
                s.model_dump(mode="json", exclude_none=True) for s in store.list_sessions()
            ]
        }

    def _session_transcript(self, data: dict[str, Any]) -> dict[str, Any]:
        from ..session import SessionNotFound
        from ..wire import transcript_messages

        session_id = _field(data, "session_id", str)
        agent = self.nb.agent
        if agent is not None and agent.session_id == session_id:
            # Run-log writes are queued on a writer thread: wait for them, so a panel that joins
            # mid-run replays every event numbered before its live stream began. A slow disk
            # gives a shorter transcript, never an error.
            with contextlib.suppress(concurrent.futures.TimeoutError):
                agent.flush_sync(timeout=5.0)
        try:
            records = self.nb.session_store().transcript(session_id)
        except SessionNotFound:
            raise RequestError(f"session not found: {session_id}") from None
        except ValueError as exc:
            raise RequestError(str(exc)) from None
        messages = transcript_messages(records, session_id)
        active = self.nb.active
        if active is not None and active.session_id == session_id:
            # The reply streaming now is logged only when it ends: add what was streamed of it.
            from .run.streamed import with_streamed

            streamed = active.streamed.messages(active.run_id)
            messages = with_streamed(messages, active.run_id, streamed)
        return {"session_id": session_id, "events": messages}

    def _cache_call(self, method: Callable[[], Any]) -> Any:
        try:
            return method()
        except (KeyError, ValueError, LookupError) as exc:
            raise RequestError(str(exc).strip("'\"")) from None

    def _cache_list(self, _data: dict[str, Any]) -> dict[str, Any]:
        from .ui.cache_browser import ordered_entries, whose

        store = self.nb.output_store()
        keys = ("ref_id", "tool_name", "created_at", "size_bytes", "line_count")
        rows = []
        for entry in ordered_entries(store):  # this kernel's entries first
            row = entry.model_dump(mode="json", include=set(keys) | {"has_parts", "is_error"})
            row["whose"] = whose(entry, store)
            rows.append(row)
        return {"entries": rows}

    def _cache_read(self, data: dict[str, Any]) -> dict[str, Any]:
        ref_id = _field(data, "ref_id", str)
        offset = _field(data, "offset", int, required=False) or 0
        limit = _field(data, "limit", int, required=False)
        store = self.nb.output_store()
        return {"text": self._cache_call(lambda: store.read(ref_id, offset, limit))}

    def _cache_grep(self, data: dict[str, Any]) -> dict[str, Any]:
        ref_id = _field(data, "ref_id", str)
        pattern = _field(data, "pattern", str)
        kwargs: dict[str, Any] = {"regex": bool(_field(data, "regex", bool, required=False))}
        for name in ("before", "after", "max_matches"):
            value = _field(data, name, int, required=False)
            if value is not None:
                kwargs[name] = value
        store = self.nb.output_store()
        return {"text": self._cache_call(lambda: store.grep(ref_id, pattern, **kwargs))}

    def _cache_line(self, data: dict[str, Any]) -> dict[str, Any]:
        ref_id = _field(data, "ref_id", str)
        line_number = _field(data, "line_number", int)
        kwargs: dict[str, Any] = {}
        for name in ("char_offset", "char_limit"):
            value = _field(data, name, int, required=False)
            if value is not None:
                kwargs[name] = value
        store = self.nb.output_store()
        return {"text": self._cache_call(lambda: store.read_line(ref_id, line_number, **kwargs))}

    def _cache_parts(self, data: dict[str, Any]) -> dict[str, Any]:
        ref_id = _field(data, "ref_id", str)
        store = self.nb.output_store()
        parts = self._cache_call(lambda: store.read_parts(ref_id))
        return {"parts": [p.dump() for p in parts]}

    def _todos_get(self, _data: dict[str, Any]) -> dict[str, Any]:
        session_id, todos = self.nb.todos()
        return {"session_id": session_id, "todos": todos}

    def _state_get(self, _data: dict[str, Any]) -> dict[str, Any]:
        return self.state()

    def _panel_attach(self, data: dict[str, Any]) -> dict[str, Any]:
        """Open a ``codelia.panel`` comm to the panel ``client_id`` (sent through control()).

        The kernel takes no ``comm_open`` while a cell runs, so a panel that connects during a
        blocking ``%%codelia`` run (a reloaded page) asks for this comm on a subshell: the
        kernel opens it at once, with the hello as its data, and notifications flow on it.
        """
        client_id = _field(data, "client_id", str)
        from comm import create_comm, get_comm_manager

        if TARGET not in get_comm_manager().targets:
            # control() works without %load_ext; a panel must not run the agent where the
            # magics are missing: it loads the extension itself once the shell is free.
            raise RequestError(
                "panel.attach: jupyter_codelia is not loaded in this kernel (%load_ext "
                "jupyter_codelia)"
            )
        comm = create_comm(target_name=PANEL_TARGET, data=self.hello(client_id))
        self._adopt(comm)
        return {}

    def _notebook_reply(self, data: dict[str, Any]) -> dict[str, Any]:
        """The notebook front end's answer to a kernel request (see notebook/frontend.py)."""
        reply_to = _field(data, "reply_to", str)
        ok = bool(_field(data, "ok", bool))
        error = _field(data, "error", str, required=False)
        if not self.frontend.resolve(reply_to, ok, data.get("result"), error):
            raise RequestError(f"notebook.reply: no open kernel request {reply_to!r}")
        return {}


def _tools_list(bridge: Bridge, _data: dict[str, Any]) -> dict[str, Any]:
    return bridge.external.listing().dump()


def _tool_call(bridge: Bridge, data: dict[str, Any]) -> dict[str, Any]:
    from pydantic import ValidationError

    from ..wire import ToolCallRequest
    from .run.external import UnknownToolError

    try:
        request = ToolCallRequest.model_validate(data)
    except ValidationError as exc:
        raise RequestError(f"tool.call: {exc.errors(include_url=False)}") from None
    try:
        return bridge.external.call(request).dump()
    except UnknownToolError as exc:
        raise RequestError(str(exc)) from None


def _mcp_add(bridge: Bridge, data: dict[str, Any]) -> dict[str, Any]:
    """Add (or replace) an MCP server for the kernel's runs, as ``%codelia mcp add`` does: an
    ACP client passes the servers of its session this way."""
    from ..standard_tools.mcp import McpConfigError, parse_one_server

    name = _field(data, "name", str)
    try:
        config = parse_one_server(name, _field(data, "server", dict), "mcp.add")
        bridge.nb.mcp_servers().add(name, config)
    except McpConfigError as exc:
        raise RequestError(str(exc)) from None
    return {}


def _jobs_list(bridge: Bridge, _data: dict[str, Any]) -> dict[str, Any]:
    from .run.job_updates import job_view

    return {"jobs": [job_view(job).dump() for job in bridge.nb.jobs.jobs()]}


def _job_stop(bridge: Bridge, data: dict[str, Any]) -> dict[str, Any]:
    from ..standard_tools.jobs import JobNotFoundError
    from .run.job_updates import job_view

    try:
        job = bridge.nb.jobs.get(_field(data, "job_id", str))
    except JobNotFoundError as exc:
        raise RequestError(str(exc)) from None
    job.stop()
    return {"job": job_view(job).dump()}


_HANDLERS: dict[str, Callable[[Bridge, dict[str, Any]], dict[str, Any]]] = {
    "run.start": Bridge._run_start,
    "run.cancel": Bridge._run_cancel,
    "permission.respond": Bridge._permission_respond,
    "cell.control": Bridge._cell_control,
    "sessions.list": Bridge._sessions_list,
    "session.transcript": Bridge._session_transcript,
    "cache.list": Bridge._cache_list,
    "cache.read": Bridge._cache_read,
    "cache.grep": Bridge._cache_grep,
    "cache.line": Bridge._cache_line,
    "cache.parts": Bridge._cache_parts,
    "todos.get": Bridge._todos_get,
    "state.get": Bridge._state_get,
    "panel.attach": Bridge._panel_attach,
    "mcp.add": _mcp_add,
    "jobs.list": _jobs_list,
    "job.stop": _job_stop,
    "notebook.reply": Bridge._notebook_reply,
    "tools.list": _tools_list,
    "tool.call": _tool_call,
}


# ---------------------------------------------------------------------- kernel wiring


def register_comm_target(shell: Any, bridge: Callable[[], Bridge]) -> None:
    """Accept ``codelia`` comms (no-op outside a kernel, e.g. in a terminal IPython)."""
    if getattr(shell, "kernel", None) is None:
        return
    from comm import get_comm_manager

    get_comm_manager().register_target(TARGET, lambda comm, msg: bridge().on_open(comm, msg))


def unregister_comm_target(shell: Any) -> None:
    if getattr(shell, "kernel", None) is None:
        return
    from comm import get_comm_manager

    manager = get_comm_manager()
    if TARGET in manager.targets:
        manager.unregister_target(TARGET, manager.targets[TARGET])


class ControlResponse(str):
    """A response envelope as JSON text that also displays as ``application/json``.

    The side panel calls :func:`control` in a user expression, whose value comes back as a
    mime bundle: the ``application/json`` entry carries the envelope itself, so the browser
    reads large answers (a session transcript) without decoding the Python ``repr`` that
    IPython still puts in ``text/plain`` for every ``str``.
    """

    envelope: dict[str, Any]

    def __new__(cls, envelope: dict[str, Any]) -> ControlResponse:
        text = super().__new__(cls, json.dumps(envelope))
        text.envelope = envelope
        return text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"application/json": self.envelope}


def control(request_json: str) -> str:
    """Thread-safe control entry point (run.cancel, permission.respond, state and store reads).

    Returns the response envelope as a JSON string (a :class:`ControlResponse`).
    """
    from IPython import get_ipython

    from ..wire import response

    try:
        data = json.loads(request_json)
    except (TypeError, ValueError) as exc:
        return ControlResponse(response(None, error=f"invalid JSON: {exc}"))
    shell = get_ipython()
    if shell is None:
        request_id = data.get("request_id") if isinstance(data, dict) else None
        return ControlResponse(
            response(
                request_id if isinstance(request_id, str) else None,
                error="no IPython kernel is running here; run %load_ext jupyter_codelia",
            )
        )
    from .extension import kernel_extension

    return ControlResponse(kernel_extension(shell).bridge.handle(data, from_control=True))
