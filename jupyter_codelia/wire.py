"""The ``codelia`` wire protocol: every message the kernel sends to a side panel, typed.

One definition for the three places that send (the comm bridge, the event sink and the runner)
and for the REST transcript the server replays. ``docs/comm-protocol.md`` describes the protocol;
``labextension/src/wire.ts`` is generated from these models (``python -m jupyter_codelia.wire
--typescript``) and a test keeps the committed file equal to the generator's output, so the side
panel's types cannot drift from what the kernel sends.

Messages are built once per send on a hot path (every coalesced text delta), so they are
pydantic models only at the edges that need a schema; ``dump()`` gives the JSON dict the comm
sends, without ``None`` fields.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, WithJsonSchema, field_validator

from ._approval import ApprovalMode, Decision
from .agent.events import AgentEvent, TodoItemView
from .session import SessionSummary
from .tools import COMPLETED, ToolResultData

PROTOCOL_VERSION = 1

ResultT = TypeVar("ResultT", bound=BaseModel)

RunSource = Literal["magic", "panel", "external"]
"""Where a run came from: a ``%%codelia`` cell, the side panel, or an agent outside the kernel
(one ``tool.call`` through the server's MCP endpoint shows as a run of its own)."""
RunStatus = Literal["running", "awaiting_ui", "completed", "error", "cancelled"]


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def dump(self) -> dict[str, Any]:
        """The JSON object sent on the comm: optional fields that are ``None`` are left out,
        required ones are sent as ``null``."""
        required = _required_fields(type(self))
        data = self.model_dump(mode="json", by_alias=True)
        return {key: value for key, value in data.items() if value is not None or key in required}


@functools.cache
def _required_fields(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(name for name, info in model.model_fields.items() if info.is_required())


class ActiveRun(_Message):
    """The run going on in the kernel when a panel connects."""

    run_id: str
    session_id: str | None
    prompt: str
    source: RunSource


class StoreInfo(_Message):
    """A codelia home as one process sees it; equal ``store_id``s mean the same files."""

    home: str
    store_id: str | None


class KernelState(_Message):
    """What the kernel tells a panel about itself (never the API key, only whether one is set).

    ``store`` names where the kernel keeps sessions and cache, so the panel reads history from
    the server only when it sees that very store; ``control_requests`` lists what ``control()``
    serves on a subshell (both absent from older kernels). ``provider`` is the configured model
    service and ``api_key_env`` the variable its key is read from (``None`` for a local server
    that needs none), so a panel can say how to set the key that is missing.
    """

    protocol: int = PROTOCOL_VERSION
    session_id: str | None
    model: str | None = None
    provider: str | None = None
    api_key_env: str | None = None
    approval_mode: ApprovalMode | None = None
    active_run: ActiveRun | None
    api_key_configured: bool | None = None
    store: StoreInfo | None = None
    control_requests: list[str] | None = None


class Hello(KernelState):
    """Sent on a comm as soon as the kernel accepts it. On a comm the kernel opened for a
    ``panel.attach`` request this is the comm's opening data, with the asking panel's
    ``client_id``."""

    type: Literal["hello"] = "hello"
    client_id: str | None = None


class Response(_Message):
    """The one answer to a request with ``request_id``: a result, or an actionable error."""

    type: Literal["response"] = "response"
    request_id: str | None
    ok: bool
    result: dict[str, Any] | None = None
    error: str | None = None


class RunStarted(_Message):
    type: Literal["run.started"] = "run.started"
    run_id: str
    session_id: str | None
    prompt: str
    source: RunSource
    demo: bool = False
    """The offline demo's scripted server answers this run: its usage costs nothing."""


class AgentEventMessage(_Message):
    """One agent event; ``seq`` is the agent's number for it (the same on every channel)."""

    type: Literal["agent.event"] = "agent.event"
    run_id: str
    seq: int
    event: AgentEvent


class RunStatusMessage(_Message):
    type: Literal["run.status"] = "run.status"
    run_id: str
    status: RunStatus
    message: str | None = None


class StoreChanged(_Message):
    """``%config Codelia.home`` moved the kernel's store; it replaces ``hello.store``."""

    type: Literal["store.changed"] = "store.changed"
    store: StoreInfo


class JobProgress(_Message):
    """The latest tqdm-style progress line of a job's output."""

    percent: int
    done: str
    total: str


class JobView(_Message):
    """A background job: its state, elapsed seconds, last output lines and progress."""

    job_id: str
    kind: Literal["python", "shell"]
    title: str
    state: Literal["running", "completed", "failed", "stopped"]
    elapsed_s: float
    summary: str | None = None
    last_lines: list[str]
    progress: JobProgress | None


class JobUpdated(_Message):
    """A background job started, printed something new, or ended (jobs outlive runs)."""

    type: Literal["job.updated"] = "job.updated"
    job: JobView


KernelMessage = Annotated[
    Hello
    | Response
    | RunStarted
    | AgentEventMessage
    | RunStatusMessage
    | StoreChanged
    | JobUpdated,
    Field(discriminator="type"),
]


# --------------------------------------------------------------------------- notebook tools
# The kernel's requests to the notebook front end, on the comm it opens with target
# ``codelia.notebook`` (jupyter_codelia/notebook/frontend.py, labextension/src/notebooktools.ts).

NotebookAction = Literal["snapshot", "edit", "run", "revert", "ping"]


class NotebookHello(_Message):
    """The data of the kernel's ``comm_open``: the front end answers with its client id."""

    type: Literal["hello"] = "hello"
    request_id: str
    protocol: int = PROTOCOL_VERSION


class NotebookRequest(_Message):
    """One request to the live notebook; the answer comes back as a ``notebook.reply``."""

    type: Literal["notebook.request"] = "notebook.request"
    request_id: str
    client_id: str
    action: NotebookAction
    params: dict[str, Any]


class OutputFinished(_Message):
    """A live codelia widget (a background run's panel, job cards) finished after its cell:
    every output showing widget ``model_id`` should show ``data`` instead, for good (the saved
    notebook then keeps readable output). The data of a one-shot ``comm_open``."""

    type: Literal["output.finished"] = "output.finished"
    model_id: str
    data: dict[str, Any]


NotebookKernelMessage = Annotated[
    NotebookHello | NotebookRequest | OutputFinished, Field(discriminator="type")
]

# Why a notebook request was refused, for callers that must tell cases apart (the error text is
# for people and models). A tab's replies carry none; the server's answer with no tab open does.
NotebookErrorKind = Literal[
    "invalid",  # the request itself is wrong (unknown op, missing field, bad path)
    "not_found",  # no such notebook file, or no cell with that id
    "cell_changed",  # the cell's source is not the one the edit expected
    "file_changed",  # the file changed on disk between read and write: nothing was written
    "unreadable",  # not UTF-8, not JSON, not a notebook
    "too_large",  # past the size the server reads without a tab
    "needs_tab",  # only a front end can do this (run without a kernel relay)
    "refused",  # a revert that cannot be done safely
]


class NotebookReply(_Message):
    """The answer to one :class:`NotebookRequest`: ``result`` when ``ok``, else ``error``.

    Tabs build it in TypeScript (``notebookcomm.ts``); the server builds it when no tab of the
    notebook is open (``jupyter_codelia/server/notebook_doc``)."""

    type: Literal["notebook.reply"] = "notebook.reply"
    reply_to: str
    ok: bool
    result: dict[str, Any] | None = None
    error: str | None = None
    error_kind: NotebookErrorKind | None = None


# --------------------------------------------------------------------------- requests
# Front end → kernel, on the ``codelia`` comm or through ``bridge.control()`` on a subshell:
# one model per request type, and one model for its result (the ``result`` of the response).


class _Request(BaseModel):
    """A request; ``request_id`` is the client's and comes back on the one response.

    Strict, because requests arrive as JSON (a number in a string field is a bug to report);
    extra fields are ignored, so a newer panel does not fail on an older kernel.
    """

    model_config = ConfigDict(extra="ignore", strict=True)
    control_safe: ClassVar[bool] = False
    """It only touches thread-safe state, so ``control()`` may serve it from a subshell."""

    request_id: str


class Empty(_Message):
    """The result of a request that only acts."""


class RunStartRequest(_Request):
    """Start a *background* run from the panel (resume ``session_id``, or a new session)."""

    type: Literal["run.start"]
    prompt: str
    session_id: str | None = None
    new_session: bool = False

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("prompt is empty")
        return value


class RunStartResult(_Message):
    run_id: str
    session_id: str | None


class RunCancelRequest(_Request):
    type: Literal["run.cancel"]
    control_safe: ClassVar[bool] = True
    run_id: str


class PermissionRespondRequest(_Request):
    """Answer an approval request (its event's ``request_id`` is ``permission_request_id``)."""

    type: Literal["permission.respond"]
    control_safe: ClassVar[bool] = True
    permission_request_id: str
    decision: Decision
    reason: str | None = None
    content: dict[str, Any] | None = None
    """A filled-in form's values, when the request asked for some."""


class StateGetRequest(_Request):
    type: Literal["state.get"]
    control_safe: ClassVar[bool] = True


class SessionsListRequest(_Request):
    type: Literal["sessions.list"]
    control_safe: ClassVar[bool] = True


class SessionsListResult(_Message):
    """The saved sessions, newest first (also ``GET /codelia/api/sessions``)."""

    sessions: list[SessionSummary]


class SessionTranscriptRequest(_Request):
    type: Literal["session.transcript"]
    control_safe: ClassVar[bool] = True
    session_id: str


class TranscriptResult(_Message):
    """A session's runs as the messages a live panel would have received, oldest first (also
    ``GET /codelia/api/sessions/<id>/transcript``)."""

    session_id: str
    # Messages already in their JSON form (built by transcript_messages, not validated again:
    # a long session has thousands); the panel reads them as kernel messages.
    events: Annotated[
        list[dict[str, Any]],
        WithJsonSchema({"type": "array", "items": {"tsType": "KernelMessage"}}),
    ]


class CacheListRequest(_Request):
    type: Literal["cache.list"]
    control_safe: ClassVar[bool] = True


class CacheEntry(_Message):
    """One tool-output cache entry."""

    ref_id: str
    tool_name: str
    created_at: str
    size_bytes: int
    line_count: int
    has_parts: bool
    is_error: bool
    whose: str
    """"(this session)", "(this kernel)", "(this notebook)" or "(other: ...)"."""


class CacheListResult(_Message):
    """The cache's entries, this kernel's first."""

    entries: list[CacheEntry]


class CacheReadRequest(_Request):
    type: Literal["cache.read"]
    control_safe: ClassVar[bool] = True
    ref_id: str
    offset: int = 0
    limit: int | None = None


class CacheGrepRequest(_Request):
    type: Literal["cache.grep"]
    control_safe: ClassVar[bool] = True
    ref_id: str
    pattern: str
    regex: bool = False
    before: int | None = None
    after: int | None = None
    max_matches: int | None = None


class CacheLineRequest(_Request):
    type: Literal["cache.line"]
    control_safe: ClassVar[bool] = True
    ref_id: str
    line_number: int
    char_offset: int | None = None
    char_limit: int | None = None


class CacheTextResult(_Message):
    """Text in the ``tool_output_cache`` tool's format (``cache.read``, ``.grep``, ``.line``)."""

    text: str


class CachePartsRequest(_Request):
    type: Literal["cache.parts"]
    control_safe: ClassVar[bool] = True
    ref_id: str


class CachePartsResult(_Message):
    """An entry's content parts; images as ``{"type": "image_url", "image_url": {"url"}}``."""

    parts: list[dict[str, Any]]


class TodosGetRequest(_Request):
    type: Literal["todos.get"]
    control_safe: ClassVar[bool] = True


class TodosResult(_Message):
    session_id: str | None
    todos: list[TodoItemView]


class PanelAttachRequest(_Request):
    """Open a ``codelia.panel`` comm to the panel ``client_id`` (only through ``control()``)."""

    type: Literal["panel.attach"]
    control_safe: ClassVar[bool] = True
    client_id: str


class JobsListRequest(_Request):
    type: Literal["jobs.list"]
    control_safe: ClassVar[bool] = True


class JobsListResult(_Message):
    jobs: list[JobView]


class JobStopRequest(_Request):
    """Ask a job to stop; a ``job.updated`` follows when it ends."""

    type: Literal["job.stop"]
    control_safe: ClassVar[bool] = True
    job_id: str


class JobStopResult(_Message):
    job: JobView


class CellControl(_Request):
    """A click on a button of a blocking ``%%codelia`` cell's own panel.

    The cell holds the kernel's main shell, so an ipywidgets click would wait for the run to
    end; the labextension catches the click on the panel's HTML buttons (they carry the run id
    and the approval id) and sends this through ``bridge.control()`` on a kernel subshell.
    ``action`` answers approval ``permission_request_id`` of run ``run_id``, or stops the run.
    """

    type: Literal["cell.control"]
    control_safe: ClassVar[bool] = True
    run_id: str
    action: Literal[Decision, "stop"]
    permission_request_id: str | None = None
    reason: str | None = None


class McpAddRequest(_Request):
    """Add (or replace) the kernel's MCP server ``name`` from the next run on, as ``%codelia
    mcp add`` does; ``server`` is one ``mcpServers`` entry (``codelia-acp`` passes an ACP
    session's servers this way)."""

    type: Literal["mcp.add"]
    name: str
    server: dict[str, Any]


class NotebookReplyRequest(_Request, NotebookReply):
    """A :class:`NotebookReply` sent to the kernel: the notebook front end's (or the server's)
    answer to a ``notebook.request`` whose id is ``reply_to``."""

    model_config = ConfigDict(extra="ignore", strict=True)
    type: Literal["notebook.reply"]
    control_safe: ClassVar[bool] = True


# --------------------------------------------------------------------------- outside agents
# ``tools.list`` and ``tool.call``, sent through ``control()`` by the Jupyter server extension on
# behalf of an agent outside the kernel (jupyter_codelia/server/mcp_endpoint.py).


class ExternalTool(_Message):
    """One in-kernel tool offered to agents outside the kernel."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    """It changes nothing (no approval in any mode)."""
    destructive: bool
    """It may change or delete what exists (code, the notebook's cells)."""


class ToolsListResult(_Message):
    """The result of ``tools.list``."""

    tools: list[ExternalTool]


class ToolsListRequest(_Request):
    type: Literal["tools.list"]
    control_safe: ClassVar[bool] = True


class ToolCallRequest(_Request):
    """``tool.call``: run one in-kernel tool for ``caller`` (the outside agent, by its name)."""

    type: Literal["tool.call"]
    control_safe: ClassVar[bool] = True
    caller: str = Field(min_length=1, max_length=200)
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallResult(_Message):
    """The result of ``tool.call``: the tool's answer as content parts (``text`` /
    ``image_url`` data URLs, as ``cache.parts`` gives them); ``output_ref`` names the cached
    whole output when the answer was cut to fit."""

    is_error: bool
    content: list[dict[str, Any]]
    output_ref: str | None = None
    run_id: str
    """The run this call shows as in the side panel."""
    data: ToolResultData = COMPLETED
    """What the application reads of the result (how the call ended, its diff, edit, namespace
    changes, job): the MCP relay's structured content."""


Request = Annotated[
    RunStartRequest
    | RunCancelRequest
    | PermissionRespondRequest
    | StateGetRequest
    | SessionsListRequest
    | SessionTranscriptRequest
    | CacheListRequest
    | CacheReadRequest
    | CacheGrepRequest
    | CacheLineRequest
    | CachePartsRequest
    | TodosGetRequest
    | PanelAttachRequest
    | JobsListRequest
    | JobStopRequest
    | CellControl
    | McpAddRequest
    | NotebookReplyRequest
    | ToolsListRequest
    | ToolCallRequest,
    Field(discriminator="type"),
]

Result = (
    Empty
    | RunStartResult
    | KernelState
    | SessionsListResult
    | TranscriptResult
    | CacheListResult
    | CacheTextResult
    | CachePartsResult
    | TodosResult
    | JobsListResult
    | JobStopResult
    | ToolsListResult
    | ToolCallResult
)

# The result model of each request type (``state.get`` answers the hello's body).
RESULTS: dict[str, type[BaseModel]] = {
    "run.start": RunStartResult,
    "run.cancel": Empty,
    "permission.respond": Empty,
    "state.get": KernelState,
    "sessions.list": SessionsListResult,
    "session.transcript": TranscriptResult,
    "cache.list": CacheListResult,
    "cache.read": CacheTextResult,
    "cache.grep": CacheTextResult,
    "cache.line": CacheTextResult,
    "cache.parts": CachePartsResult,
    "todos.get": TodosResult,
    "panel.attach": Empty,
    "jobs.list": JobsListResult,
    "job.stop": JobStopResult,
    "cell.control": Empty,
    "mcp.add": Empty,
    "notebook.reply": Empty,
    "tools.list": ToolsListResult,
    "tool.call": ToolCallResult,
}


@functools.cache
def request_models() -> Mapping[str, type[_Request]]:
    """Each request type's model, by its ``type``."""
    return MappingProxyType(
        {
            get_args(model.model_fields["type"].annotation)[0]: model
            for model in get_args(get_args(Request)[0])
        }
    )


@functools.cache
def request_adapter() -> TypeAdapter[Request]:
    """The validator of :data:`Request`, built once (building it costs about 2 ms)."""
    return TypeAdapter(Request)


CONTROL_SAFE: frozenset[str] = frozenset(
    name for name, model in request_models().items() if model.control_safe
)
"""The request types ``control()`` serves on a subshell (the hello's ``control_requests``)."""


def read_result(model: type[ResultT], result: dict[str, Any]) -> ResultT:
    """A response's ``result`` read as ``model`` (its entry in :data:`RESULTS`); top-level
    fields a newer kernel adds are left out, so an older reader still understands it."""
    return model.model_validate({key: result[key] for key in result if key in model.model_fields})


def event_message(run_id: str, seq: int, event_json: dict[str, Any]) -> dict[str, Any]:
    """An ``agent.event`` message around an event already in its JSON form (the hot path)."""
    return {"type": "agent.event", "run_id": run_id, "seq": seq, "event": event_json}


def status_message(run_id: str, status: RunStatus, message: str | None = None) -> dict[str, Any]:
    return RunStatusMessage(run_id=run_id, status=status, message=message or None).dump()


def response(
    request_id: str | None, *, result: dict[str, Any] | None = None, error: str | None = None
) -> dict[str, Any]:
    """The response to ``request_id``: ``ok`` with ``result``, or not ``ok`` with ``error``."""
    if error is not None:
        return Response(request_id=request_id, ok=False, error=error).dump()
    return Response(request_id=request_id, ok=True, result=result or {}).dump()


def transcript_messages(records: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """Run-log records as the messages a live panel would have received, in order."""
    messages: list[dict[str, Any]] = []
    for record in records:
        kind = record.get("type")
        run_id = record.get("run_id")
        if not isinstance(run_id, str):
            continue
        if kind == "run.start":
            user_input = record.get("input") or {}
            prompt = user_input.get("text") if isinstance(user_input, dict) else None
            started = RunStarted(
                run_id=run_id,
                session_id=record.get("session_id") or session_id,
                prompt=prompt or "",
                source="magic",
                demo=record.get("priced") is False,  # a stand-in answered: nothing to price
            )
            messages.append(started.dump())
        elif kind == "agent.event" and isinstance(record.get("seq"), int):
            messages.append(event_message(run_id, record["seq"], record.get("event") or {}))
        elif kind == "run.status" and record.get("status") in get_args(RunStatus):
            messages.append(status_message(run_id, record["status"], record.get("message")))
    return messages


# --------------------------------------------------------------------------- TypeScript mirror


def typescript() -> str:
    """``labextension/src/wire.ts``: the TypeScript types of every message, both ways."""

    def schema_of(kind: Any) -> dict[str, Any]:
        schema = TypeAdapter(kind).json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        return schema

    defs: dict[str, Any] = {}
    unions = {
        "KernelMessage": schema_of(KernelMessage),
        "NotebookKernelMessage": schema_of(NotebookKernelMessage),
        "Request": schema_of(Request),
    }
    for model in set(RESULTS.values()):
        defs[model.__name__] = schema_of(model)
    lines = [
        "/**",
        " * GENERATED from jupyter_codelia/wire.py by `python -m jupyter_codelia.wire "
        "--typescript`:",
        " * do not edit. A test fails when this file and the Python models differ.",
        " */",
        "",
    ]
    for name in sorted(defs):
        lines.append(f"export type {name} = {_ts(defs[name], 0)};")
        lines.append("")
    for name, schema in unions.items():
        lines.append(f"export type {name} = {_ts(schema, 0)};")
        lines.append("")
    lines.append("/** The result of each request type. */")
    lines.append("export type RequestResults = {")
    lines.extend(f"  {_key(kind)}: {model.__name__};" for kind, model in RESULTS.items())
    lines.append("};")
    lines.append("")
    return "\n".join(lines)


def _ts(node: dict[str, Any], depth: int) -> str:
    if "tsType" in node:  # a type named by hand in the schema (see TranscriptResult)
        return str(node["tsType"])
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    if "const" in node:
        return json.dumps(node["const"]).replace('"', "'")
    if "enum" in node:
        return " | ".join(json.dumps(v).replace('"', "'") for v in node["enum"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " | ".join(_ts(option, depth) for option in node[key])
    kind = node.get("type")
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        item = _ts(node.get("items", {}), depth)
        return f"Array<{item}>"
    if kind == "object" and node.get("properties") == {}:
        return "Record<string, never>"
    if kind == "object" and "properties" in node:
        required = set(node.get("required", []))
        pad = "  " * (depth + 1)
        fields = []
        for name, prop in node["properties"].items():
            options = prop.get("anyOf", [prop])
            nullable = any(option.get("type") == "null" for option in options)
            if "const" in prop or (name in required and not nullable):
                fields.append(f"{pad}{_key(name)}: {_ts(prop, depth + 1)};")
            elif nullable:
                # Absent or null: senders leave out fields that are None.
                solid = [option for option in options if option.get("type") != "null"]
                text = " | ".join(_ts(option, depth + 1) for option in solid) or "null"
                fields.append(f"{pad}{_key(name)}?: {text} | null;")
            else:  # a default that is never None: may be left out, never null
                fields.append(f"{pad}{_key(name)}?: {_ts(prop, depth + 1)};")
        return "{\n" + "\n".join(fields) + "\n" + "  " * depth + "}"
    if kind == "object":
        extra = node.get("additionalProperties")
        value = _ts(extra, depth) if isinstance(extra, dict) and extra else "unknown"
        return f"{{ [key: string]: {value} }}"
    return "unknown"


def _key(name: str) -> str:
    return name if name.isidentifier() else json.dumps(name).replace('"', "'")


if __name__ == "__main__":
    if sys.argv[1:] != ["--typescript"]:
        sys.exit("usage: python -m jupyter_codelia.wire --typescript > labextension/src/wire.ts")
    sys.stdout.write(typescript())
