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
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, get_args

from .._redact import redact_secrets
from ..errors import CodeliaError

# pydantic and the wire models load with the first request, not with %load_ext.
if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

    from .. import wire
    from ..wire import StoreInfo
    from ._shell import KernelShell
    from .frontend import FrontendClient
    from .run.external import ExternalCalls
    from .run.runner import NotebookAgent

TARGET = "codelia"
# The target of a comm the kernel opens for a panel that asked with ``panel.attach``: a comm the
# front end opens waits for a busy cell to end, one the kernel opens works at once.
PANEL_TARGET = "codelia.panel"
log = logging.getLogger("jupyter_codelia.notebook.bridge")


class RequestError(CodeliaError, ValueError):
    """A request that cannot be served; its message is the ``error`` of the response."""


def _problem(kind: str, exc: ValidationError) -> str:
    """The first thing wrong with a request of type ``kind``, in words a client can act on."""
    error = exc.errors(include_url=False)[0]
    # The location inside the union starts with the request type; the field follows.
    where = [str(part) for part in error["loc"][1:]]
    name = where[0] if where else "?"
    if error["type"] == "missing":
        return f"{kind}: missing field {name!r}"
    if error["type"] == "literal_error":
        allowed = ", ".join(get_args(_model_of(kind).model_fields[name].annotation))
        return f"{kind}: {name} must be one of {allowed}"
    if error["type"] == "value_error":
        return f"{kind}: {error['msg'].removeprefix('Value error, ')}"
    wrong = str(error["msg"]).replace("Input should be", "must be")
    return f"{kind}: field {'.'.join(where) or name!r} {wrong}"


def _model_of(kind: str) -> type[BaseModel]:
    from ..wire import request_models

    return request_models()[kind]


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

        return Hello(**dict(self.state()), client_id=client_id).dump()

    def state(self) -> wire.KernelState:
        from ..wire import CONTROL_SAFE, KernelState
        from ..wire import ActiveRun as WireActiveRun
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
            control_requests=sorted(CONTROL_SAFE),
        )
        return state

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
            result = self._serve(self._parse(data, from_control=from_control))
        except RequestError as exc:
            return response(request_id, error=str(exc))
        except Exception as exc:
            log.exception("codelia request failed")
            return response(request_id, error=f"{type(exc).__name__}: {exc}")
        return response(request_id, result=result.dump())

    @staticmethod
    def _parse(data: Any, *, from_control: bool) -> wire.Request:
        from pydantic import ValidationError

        from ..wire import CONTROL_SAFE, request_adapter, request_models

        if not isinstance(data, dict):
            raise RequestError(f"a request must be a JSON object, got {type(data).__name__}")
        if not isinstance(data.get("request_id"), str):
            raise RequestError("missing field 'request_id' (a string chosen by the client)")
        kind = data.get("type")
        if not isinstance(kind, str) or kind not in request_models():
            known = ", ".join(sorted(request_models()))
            raise RequestError(f"unknown request type {kind!r}; known types: {known}")
        if from_control and kind not in CONTROL_SAFE:
            raise RequestError(
                f"{kind} cannot be sent through control(); send it over the codelia comm"
            )
        try:
            return request_adapter().validate_python(data)
        except ValidationError as exc:
            raise RequestError(_problem(kind, exc)) from None

    def _serve(self, request: wire.Request) -> wire.Result:
        from typing_extensions import assert_never

        from .. import wire

        match request:
            case wire.RunStartRequest():
                return self._run_start(request)
            case wire.RunCancelRequest():
                if not self.nb.cancel(request.run_id):
                    raise RequestError("run not found")
                return wire.Empty()
            case wire.PermissionRespondRequest():
                return self._permission_respond(request)
            case wire.CellControl():
                return self._cell_control(request)
            case wire.StateGetRequest():
                return self.state()
            case wire.SessionsListRequest():
                return wire.SessionsListResult(sessions=self.nb.session_store().list_sessions())
            case wire.SessionTranscriptRequest():
                return self._session_transcript(request)
            case wire.CacheListRequest():
                return self._cache_list()
            case wire.CacheReadRequest() | wire.CacheGrepRequest() | wire.CacheLineRequest():
                return wire.CacheTextResult(text=self._cache_text(request))
            case wire.CachePartsRequest():
                with _cache_errors():
                    parts = self.nb.output_store().read_parts(request.ref_id)
                return wire.CachePartsResult(parts=[part.dump() for part in parts])
            case wire.TodosGetRequest():
                session_id, todos = self.nb.todos()
                return wire.TodosResult.model_validate({"session_id": session_id, "todos": todos})
            case wire.PanelAttachRequest():
                return self._panel_attach(request)
            case wire.JobsListRequest():
                from .run.job_updates import job_view

                return wire.JobsListResult(jobs=[job_view(job) for job in self.nb.jobs.jobs()])
            case wire.JobStopRequest():
                return self._job_stop(request)
            case wire.McpAddRequest():
                return self._mcp_add(request)
            case wire.NotebookReplyRequest():
                # The notebook front end's answer to a kernel request (see notebook/frontend.py).
                reply_to = request.reply_to
                if not self.frontend.resolve(reply_to, request.ok, request.result, request.error):
                    raise RequestError(f"notebook.reply: no open kernel request {reply_to!r}")
                return wire.Empty()
            case wire.ToolsListRequest():
                return self.external.listing()
            case wire.ToolCallRequest():
                from .run.external import UnknownToolError

                try:
                    return self.external.call(request)
                except UnknownToolError as exc:
                    raise RequestError(str(exc)) from None
            case _:
                assert_never(request)

    def _run_start(self, request: wire.RunStartRequest) -> wire.RunStartResult:
        from ..agent import RunAlreadyActiveError
        from ..wire import RunStartResult
        from .config import ConfigError, api_key_configured, api_key_help

        if self.nb.active is not None:
            # The same words as the agent's own "busy" (the one error for it).
            raise RequestError(str(RunAlreadyActiveError(self.nb.active.run_id)))
        try:
            settings = self.nb.settings()
            if not api_key_configured(provider=settings.provider):
                raise RequestError(api_key_help(settings.provider))
            agent = self.nb.prepare(
                settings, new_session=request.new_session, session_id=request.session_id
            )
        except (ConfigError, KeyError, ValueError, OSError) as exc:
            raise RequestError(str(exc)) from None
        handle = self.nb.start_background(agent, request.prompt, source="panel")
        return RunStartResult(run_id=handle.run_id, session_id=handle.session_id)

    def _permission_respond(self, request: wire.PermissionRespondRequest) -> wire.Empty:
        from ..wire import Empty

        answered = self.nb.respond(
            request.permission_request_id, request.decision, request.reason, request.content
        )
        if not answered:
            raise RequestError("permission request not found")
        return Empty()

    def _cell_control(self, request: wire.CellControl) -> wire.Empty:
        """A button of a blocking cell's panel: answer one of its run's approvals, or Stop."""
        from ..wire import Empty

        if request.action == "stop":
            if not self.nb.cancel(request.run_id):
                raise RequestError("cell.control: this run has already ended")
            return Empty()
        approval_id = request.permission_request_id
        if approval_id is None:
            raise RequestError("cell.control: missing field 'permission_request_id'")
        approval = self.nb.approvals.get(approval_id)
        # The button names its run: a stale page's button never answers another run's request.
        if approval is None or approval.run_id != request.run_id:
            raise RequestError("cell.control: this approval is no longer open")
        if not self.nb.respond(approval_id, request.action, request.reason):
            raise RequestError("cell.control: this approval was answered already")
        return Empty()

    def _mcp_add(self, request: wire.McpAddRequest) -> wire.Empty:
        """Add (or replace) an MCP server for the kernel's runs, as ``%codelia mcp add`` does:
        an ACP client passes the servers of its session this way."""
        from ..standard_tools.mcp import McpConfigError, parse_one_server
        from ..wire import Empty

        try:
            config = parse_one_server(request.name, request.server, "mcp.add")
            self.nb.mcp_servers().add(request.name, config)
        except McpConfigError as exc:
            raise RequestError(str(exc)) from None
        return Empty()

    def _session_transcript(self, request: wire.SessionTranscriptRequest) -> wire.TranscriptResult:
        from ..session import SessionNotFound
        from ..wire import TranscriptResult, transcript_messages

        session_id = request.session_id
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
        return TranscriptResult(session_id=session_id, events=messages)

    def _cache_list(self) -> wire.CacheListResult:
        from ..wire import CacheEntry, CacheListResult
        from .ui.cache_browser import ordered_entries, whose

        store = self.nb.output_store()
        fields = set(CacheEntry.model_fields) - {"whose"}
        rows = [
            CacheEntry(**entry.model_dump(mode="json", include=fields), whose=whose(entry, store))
            for entry in ordered_entries(store)  # this kernel's entries first
        ]
        return CacheListResult(entries=rows)

    def _cache_text(
        self, request: wire.CacheReadRequest | wire.CacheGrepRequest | wire.CacheLineRequest
    ) -> str:
        from .. import wire

        store = self.nb.output_store()
        # Only what the request sets: the store's own defaults apply to the rest.
        options = request.model_dump(exclude_unset=True, exclude={"type", "request_id", "ref_id"})
        with _cache_errors():
            if isinstance(request, wire.CacheReadRequest):
                return store.read(request.ref_id, request.offset, request.limit)
            if isinstance(request, wire.CacheGrepRequest):
                del options["pattern"]
                return store.grep(request.ref_id, request.pattern, **options)
            del options["line_number"]
            return store.read_line(request.ref_id, request.line_number, **options)

    def _panel_attach(self, request: wire.PanelAttachRequest) -> wire.Empty:
        """Open a ``codelia.panel`` comm to the panel ``client_id`` (sent through control()).

        The kernel takes no ``comm_open`` while a cell runs, so a panel that connects during a
        blocking ``%%codelia`` run (a reloaded page) asks for this comm on a subshell: the
        kernel opens it at once, with the hello as its data, and notifications flow on it.
        """
        from comm import create_comm, get_comm_manager

        from ..wire import Empty

        if TARGET not in get_comm_manager().targets:
            # control() works without %load_ext; a panel must not run the agent where the
            # magics are missing: it loads the extension itself once the shell is free.
            raise RequestError(
                "panel.attach: jupyter_codelia is not loaded in this kernel (%load_ext "
                "jupyter_codelia)"
            )
        comm = create_comm(target_name=PANEL_TARGET, data=self.hello(request.client_id))
        self._adopt(comm)
        return Empty()

    def _job_stop(self, request: wire.JobStopRequest) -> wire.JobStopResult:
        from ..standard_tools.jobs import JobNotFoundError
        from ..wire import JobStopResult
        from .run.job_updates import job_view

        try:
            job = self.nb.jobs.get(request.job_id)
        except JobNotFoundError as exc:
            raise RequestError(str(exc)) from None
        job.stop()
        return JobStopResult(job=job_view(job))


@contextlib.contextmanager
def _cache_errors() -> Iterator[None]:
    """A cache miss or a bad argument is the client's to fix: its message is the error."""
    try:
        yield
    except (KeyError, ValueError, LookupError) as exc:
        raise RequestError(str(exc).strip("'\"")) from None


# ---------------------------------------------------------------------- kernel wiring


def register_comm_target(shell: KernelShell, bridge: Callable[[], Bridge]) -> None:
    """Accept ``codelia`` comms (no-op outside a kernel, e.g. in a terminal IPython)."""
    if getattr(shell, "kernel", None) is None:
        return
    from comm import get_comm_manager

    get_comm_manager().register_target(TARGET, lambda comm, msg: bridge().on_open(comm, msg))


def unregister_comm_target(shell: KernelShell) -> None:
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
