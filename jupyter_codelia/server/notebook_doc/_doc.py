"""The notebook tools' requests answered by the server when no tab of the notebook is open.

The kernel's ``notebook_read`` / ``notebook_edit`` / ``notebook_run`` send ``notebook.request``s
that a JupyterLab tab answers from its live model. Called by an outside agent through the
server's relay with no tab open, nobody would answer: :class:`NotebookDoc` answers in the
tab's place, with the same result shapes and the same compare-and-swap, through one of two
backends:

- **ydoc** (jupyter-collaboration installed): the collaboration server's shared document
  (``get_document(..., copy=False, create=True)``), every change in one transaction with the
  origin ``"jupyter-codelia"``. Clients joining later, and the file once the room saves it,
  see the change with its ``metadata.codelia`` provenance.
- **contents** (otherwise): the contents manager's ``get`` / ``save``, with compare-and-swap on
  the file's state (its hash and modification time, checked right before the write): a file
  changed on disk between read and write is read again and the edit re-checked against it, and
  refused when it keeps changing, so the person's saved work is never overwritten.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ...wire import NotebookReply, NotebookRequest
from . import _cells
from ._cells import Cells, EditParams, EditRecord, ListCells, RevertParams, SnapshotParams
from ._errors import (
    InvalidNotebookRequestError,
    NeedsTabError,
    NotebookDocError,
    NotebookFileChangedError,
    NotebookNotFoundError,
    NotebookTooLargeError,
    NotebookUnreadableError,
)

# The largest notebook file read with no tab open: a snapshot holds every cell in memory.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Reads of a file that changed under a write before the write is refused (contents backend).
WRITE_ATTEMPTS = 3
# Edits kept for ``revert`` by id (the server lives long; each keeps the cell it replaced).
# Older ones are still undone from the cell's review metadata in a tab.
MAX_EDIT_RECORDS = 500

_T = TypeVar("_T")


class CellToRun(BaseModel):
    """One code cell the relay's kernel should run: its id and the source to execute."""

    model_config = ConfigDict(extra="forbid")
    cell_id: str
    code: str


class CellRunResult(BaseModel):
    """What running one cell in the kernel gave: written into the notebook, then returned."""

    model_config = ConfigDict(extra="forbid")
    cell_id: str
    status: Literal["done", "error", "interrupted", "running"]
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = Field(default_factory=list)


class RunCells(Protocol):
    """The relay's hook that runs cells in the notebook's kernel.

    Runs ``cells`` in order, each after the previous one succeeded, waiting at most
    ``wait_seconds`` (a cell still going then is ``running``, with its outputs so far, and is
    awaited again rather than re-run by a later call naming it); ``interrupt`` interrupts the
    kernel first. Returns one result per cell it started, and ``running`` with no outputs for
    those still queued behind a running one; cells after a failure are left out (they are
    reported ``skipped``).
    """

    def __call__(
        self, cells: list[CellToRun], wait_seconds: float, interrupt: bool
    ) -> Awaitable[list[CellRunResult]]: ...


class _RunParams(_cells._Params):
    cell_ids: list[str] = Field(min_length=1)
    wait_seconds: float = Field(default=30.0, ge=0)
    interrupt: bool = False
    channel: Literal["main", "subshell"] = "main"


class _Backend(Protocol):
    name: Literal["ydoc", "contents"]

    async def read(self, use: Callable[[Cells, bool], _T]) -> _T:
        """``use(cells, dirty)`` on the notebook as it is now."""
        ...

    async def change(self, use: Callable[[Cells], _T]) -> _T:
        """``use(cells)`` changes the notebook; committed as a whole or not at all. ``use``
        may be called again on a fresh read (it must check what it relies on each time)."""
        ...


def api_path(path: object) -> str:
    """``path`` as a contents-API path under the server's root, or a clear refusal.

    One spelling per file (``./a.ipynb`` is ``a.ipynb``): the collaboration server keeps one
    room per path it is given, and two rooms of one file would diverge."""
    if not isinstance(path, str) or not path.strip("/"):
        raise InvalidNotebookRequestError(
            "the notebook path is empty: give it relative to the root"
        )
    clean = path.strip("/")
    parts = clean.replace("\\", "/").split("/")
    if "\x00" in clean or any(part in ("..", "") for part in parts):
        raise InvalidNotebookRequestError(
            f"notebook path {path!r} is not a plain path under the server's root "
            "(no '..', no empty parts)"
        )
    if not clean.endswith(".ipynb"):
        raise InvalidNotebookRequestError(f"{path!r} is not a notebook (.ipynb) path")
    return "/".join(part for part in clean.split("/") if part != ".")


async def _maybe_await(value: Any) -> Any:
    # Contents managers are sync or async (jupyter_server has both kinds).
    return await value if asyncio.iscoroutine(value) or asyncio.isfuture(value) else value


def _http_status(exc: BaseException) -> int | None:
    """The status of a tornado ``HTTPError`` (contents managers raise them), else None."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and type(exc).__name__ == "HTTPError" else None


class _ContentsBackend:
    name: Literal["ydoc", "contents"] = "contents"

    def __init__(
        self, contents_manager: Any, path: str, max_bytes: int, new_id: Callable[[], str]
    ) -> None:
        self._cm = contents_manager
        self._path = path
        self._max_bytes = max_bytes
        self._new_id = new_id
        self._lock = asyncio.Lock()

    async def _get(self, kind: str = "notebook", **kwargs: Any) -> dict[str, Any]:
        try:
            model = await _maybe_await(self._cm.get(self._path, type=kind, **kwargs))
        except Exception as exc:
            status = _http_status(exc)
            if status is None:
                raise
            reason = self._without_root(str(getattr(exc, "log_message", None) or exc))
            if status == 404:
                raise NotebookNotFoundError(
                    f"no notebook {self._path!r} under the server's root ({reason})"
                ) from None
            raise NotebookUnreadableError(
                f"cannot read {self._path!r} as a notebook: {reason}. Nothing was changed; "
                "fix or re-save the file in JupyterLab."
            ) from None
        if not isinstance(model, dict):
            raise NotebookUnreadableError(f"the contents manager gave no model for {self._path!r}")
        return model

    def _without_root(self, message: str) -> str:
        """The contents manager's message without the server's own directory (the caller may
        be an outside agent: it knows the notebook by its path under the root)."""
        root = getattr(self._cm, "root_dir", None)
        if isinstance(root, str) and root:
            message = message.replace(root.rstrip("/") + "/", "")
        return message

    async def _check_size(self) -> None:
        stat = await self._get(content=False)
        size = stat.get("size")
        if isinstance(size, int) and size > self._max_bytes:
            raise NotebookTooLargeError(
                f"{self._path!r} is {size / 1e6:.1f} MB, more than the "
                f"{self._max_bytes / 1e6:.0f} MB read without a tab; open it in JupyterLab "
                "to let the agent work on it"
            )

    async def load(self) -> tuple[dict[str, Any], ListCells]:
        """The file's model (with its hash) and its cells, after the size check, read as the
        server reads a notebook it will save: converted to nbformat 4, validated, trust marked
        (so a trusted notebook stays signed when the edit keeps it trustworthy)."""
        await self._check_size()
        model = await self._get(content=True, require_hash=True)
        content = model.get("content")
        if not isinstance(content, dict):
            raise NotebookUnreadableError(f"{self._path!r} has no notebook content")
        try:
            return model, ListCells(content, self._new_id)
        except InvalidNotebookRequestError as exc:
            raise NotebookUnreadableError(
                f"cannot read {self._path!r} as a notebook: {exc}. Nothing was changed; fix or "
                "re-save the file in JupyterLab."
            ) from None

    async def read(self, use: Callable[[Cells, bool], _T]) -> _T:
        # A read writes nothing: the file's JSON as it is, without the validation and trust
        # check that cost most of a notebook read (several times over for large ones).
        await self._check_size()
        model = await self._get("file", content=True, format="text")
        try:
            content = json.loads(str(model.get("content")))
        except (ValueError, RecursionError) as exc:
            raise NotebookUnreadableError(
                f"cannot read {self._path!r} as a notebook: it is not JSON ({exc}). Nothing "
                "was changed; fix or re-save the file in JupyterLab."
            ) from None
        if not isinstance(content, dict) or content.get("nbformat") != 4:
            # Older formats (nbformat 3 worksheets) are converted by the server's reader.
            _model, cells = await self.load()
            return use(cells, False)
        try:
            return use(ListCells(content, self._new_id), False)
        except InvalidNotebookRequestError as exc:
            raise NotebookUnreadableError(
                f"cannot read {self._path!r} as a notebook: {exc}. Nothing was changed; fix or "
                "re-save the file in JupyterLab."
            ) from None

    async def change(self, use: Callable[[Cells], _T]) -> _T:
        async with self._lock:  # this server's own writes never race each other
            for attempt in range(WRITE_ATTEMPTS):
                model, cells = await self.load()
                cells.ensure_ids()
                value = use(cells)
                try:
                    await self._save_if_unchanged(model, cells.notebook)
                except NotebookFileChangedError:
                    if attempt + 1 == WRITE_ATTEMPTS:
                        raise
                    continue
                return value
        raise AssertionError("unreachable: the loop returns or raises")

    async def _save_if_unchanged(self, read: dict[str, Any], notebook: dict[str, Any]) -> None:
        now = await self._get(content=False, require_hash=True)
        if (now.get("hash"), now.get("last_modified")) != (
            read.get("hash"),
            read.get("last_modified"),
        ):
            raise NotebookFileChangedError(
                f"{self._path!r} kept changing on disk while the edit was written (someone "
                "is saving it); nothing was written: read the notebook again"
            )
        model = {"type": "notebook", "format": "json", "content": notebook}
        try:
            await _maybe_await(self._cm.save(model, self._path))
        except Exception as exc:
            status = _http_status(exc)
            if status is None:
                raise
            reason = self._without_root(str(getattr(exc, "log_message", None) or exc))
            raise NotebookUnreadableError(f"cannot write {self._path!r}: {reason}") from None


class _YDocBackend:
    name: Literal["ydoc", "contents"] = "ydoc"

    def __init__(self, extension: Any, contents: _ContentsBackend, path: str) -> None:
        self._extension = extension
        self._contents = contents
        self._path = path

    async def _document(self) -> Any:
        kwargs = {"path": self._path, "content_type": "notebook", "file_format": "json"}
        document = await self._extension.get_document(copy=False, create=False, **kwargs)
        if document is None:
            # No room yet: the file is checked (there, bounded, a readable notebook) through
            # the contents API first; a room that fails to load says less.
            await self._contents.load()
            document = await self._extension.get_document(copy=False, create=True, **kwargs)
        if document is None or not hasattr(document, "ycells"):
            raise NotebookUnreadableError(
                f"the collaboration server has no notebook {self._path!r}"
            )
        return document

    async def read(self, use: Callable[[Cells, bool], _T]) -> _T:
        from ._ydoc import YCells

        document = await self._document()
        return use(YCells(document), bool(document.dirty))

    async def change(self, use: Callable[[Cells], _T]) -> _T:
        from ._ydoc import ORIGIN, YCells

        document = await self._document()
        # Every refusal is raised before the first change, so a failed ``use`` leaves nothing.
        with document.ydoc.transaction(origin=ORIGIN):
            return use(YCells(document))


class NotebookDoc:
    """Answers the kernel's notebook requests for one notebook that no tab has open.

    :param contents_manager: the server's ``contents_manager`` (sync or async).
    :param path: the notebook's contents-API path (relative to the server's root).
    :param ydoc_extension: jupyter-collaboration's ``YDocExtension``
        (``serverapp.web_app.settings["jupyter_server_ydoc"]``) when installed: edits then go
        through the shared document; ``None``: through the file, with compare-and-swap.
    :param run_cells: the relay's hook running cells in the kernel (:class:`RunCells`); without
        it a ``run`` is refused with ``error_kind="needs_tab"``.
    :param max_bytes: the largest file read (bigger ones are refused, ``too_large``).

    Keep one instance per notebook while the server runs: ``revert`` finds an edit by the
    records this instance kept, as a tab does (the cells' ``metadata.codelia`` review part lets
    a tab opened later revert them too). A bad path raises
    :class:`InvalidNotebookRequestError` here.
    """

    def __init__(
        self,
        contents_manager: Any,
        path: str,
        *,
        ydoc_extension: Any | None = None,
        run_cells: RunCells | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.path = api_path(path)
        self._new_id = new_id
        self._run_cells = run_cells
        contents = _ContentsBackend(contents_manager, self.path, max_bytes, new_id)
        self._backend: _Backend = (
            contents
            if ydoc_extension is None
            else _YDocBackend(ydoc_extension, contents, self.path)
        )
        self.edits: list[EditRecord] = []

    @classmethod
    def for_server(
        cls, serverapp: Any, path: str, *, run_cells: RunCells | None = None
    ) -> NotebookDoc:
        """The instance for ``path`` on this server, through jupyter-collaboration when it is
        installed and enabled (4.4 or later: ``get_document(create=True)`` opens a room no tab
        opened; with an older one, or with ``disable_rtc``, the file is edited and rooms
        reload it from disk)."""
        settings = getattr(getattr(serverapp, "web_app", None), "settings", {}) or {}
        extension = settings.get("jupyter_server_ydoc")
        getter = getattr(extension, "get_document", None)
        if getter is None or "create" not in inspect.signature(getter).parameters:
            extension = None
        elif getattr(extension, "disable_rtc", False):
            extension = None  # tabs do not use its rooms: the file is the document
        return cls(serverapp.contents_manager, path, ydoc_extension=extension, run_cells=run_cells)

    @property
    def backend(self) -> Literal["ydoc", "contents"]:
        return self._backend.name

    async def answer(self, request: NotebookRequest) -> NotebookReply:
        """The reply a tab would send to ``request``; never raises (as a tab's answer never
        throws): a refusal is ``ok=False`` with the reason in ``error`` and its kind in
        ``error_kind``; an unforeseen failure (a contents manager's own error) is ``ok=False``
        without a kind."""
        try:
            result = await self.serve(request)
        except NotebookDocError as exc:
            return NotebookReply(
                reply_to=request.request_id, ok=False, error=str(exc), error_kind=exc.kind
            )
        except Exception as exc:
            error = f"the server could not answer {request.action} for {self.path!r}: {exc!r}"
            return NotebookReply(reply_to=request.request_id, ok=False, error=error)
        return NotebookReply(reply_to=request.request_id, ok=True, result=result)

    async def serve(self, request: NotebookRequest) -> dict[str, Any]:
        """The result of ``request``; a refusal raises its :class:`NotebookDocError`."""
        params = request.params
        if request.action == "ping":
            return {}
        if request.action == "snapshot":
            return await self.snapshot(params)
        if request.action == "edit":
            return await self.edit(params)
        if request.action == "revert":
            await self.revert(_cells.parse_params(RevertParams, params, "revert").edit_id)
            return {}
        return await self.run(params)

    # ------------------------------------------------------------------ actions

    async def snapshot(self, params: dict[str, Any]) -> dict[str, Any]:
        """The ``snapshot`` result: every cell (outputs for ``outputs_for``), nobody's page."""
        wanted = _cells.parse_params(SnapshotParams, params, "snapshot")
        return await self._backend.read(
            lambda cells, dirty: _cells.snapshot(cells, wanted, self.path, dirty)
        )

    async def edit(self, params: dict[str, Any]) -> dict[str, Any]:
        """The ``edit`` result ``{edit_id, cell_id, index}``; refused (``cell_changed``) when
        the cell's source is not ``expected_source``."""
        edit = _cells.parse_params(EditParams, params, "edit")
        edit_id, new_cell_id = self._new_id(), self._new_id()
        result, record = await self._backend.change(
            lambda cells: _cells.apply_edit(cells, edit, edit_id, new_cell_id)
        )
        self.edits.append(record)
        del self.edits[:-MAX_EDIT_RECORDS]
        return result

    async def revert(self, edit_id: str) -> None:
        """Undo one agent edit made through this instance (refused when the cell changed)."""
        record = next((r for r in self.edits if r.edit_id == edit_id), None)
        await self._backend.change(lambda cells: _cells.apply_revert(cells, record))
        if record is not None:
            record.reverted = True

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        """The ``run`` result: the kernel runs the cells through the relay's hook and their
        outputs are written into the notebook as a tab would show them."""
        run = _cells.parse_params(_RunParams, params, "run")
        if run.channel == "subshell" and run.interrupt:
            raise InvalidNotebookRequestError(
                "cannot interrupt: the cells run beside a blocking %%codelia cell and an "
                "interrupt would stop that run too; ask the user to press the stop button"
            )
        to_run = await self._backend.read(lambda cells, _dirty: _cells_to_run(cells, run.cell_ids))
        if self._run_cells is None:
            raise NeedsTabError(
                "running cells with no tab open needs the server's kernel relay; open the "
                "notebook in JupyterLab, or use the python tool to run the code"
            )
        # Collaborators see the cells running, as in a tab (a file holds no such state).
        shows_running = self._backend.name == "ydoc"
        ids = [cell.cell_id for cell in to_run]
        if shows_running:
            await self._backend.change(lambda cells: _mark_running(cells, ids, True))
        try:
            results = await self._run_cells(to_run, run.wait_seconds, run.interrupt)
        except BaseException:
            if shows_running:
                await self._backend.change(lambda cells: _mark_running(cells, ids, False))
            raise
        by_id = {result.cell_id: result for result in results}
        return await self._backend.change(lambda cells: _write_outputs(cells, run.cell_ids, by_id))


def _mark_running(cells: Cells, cell_ids: list[str], running: bool) -> None:
    for cell_id in cell_ids:
        index = cells.find(cell_id)
        if index >= 0:
            cells.set_running(index, running)


def _cells_to_run(cells: Cells, cell_ids: list[str]) -> list[CellToRun]:
    missing = [cell_id for cell_id in cell_ids if cells.find(cell_id) < 0]
    if missing:
        raise NotebookNotFoundError(
            f"no cell with id {', '.join(missing)}; call notebook_read() for the ids"
        )
    found = [(cell_id, cells.peek(cells.find(cell_id))) for cell_id in cell_ids]
    return [
        CellToRun(cell_id=cell_id, code=_cells.joined(cell.get("source")))
        for cell_id, cell in found
        if cell.get("cell_type") == "code"
    ]


def _write_outputs(
    cells: Cells, cell_ids: list[str], results: dict[str, CellRunResult]
) -> dict[str, Any]:
    """Each run cell's outputs into the notebook; the ``run`` result in the tab's shape."""
    views: list[dict[str, Any]] = []
    failed = False
    for cell_id in cell_ids:
        index = cells.find(cell_id)
        if index < 0:
            continue  # deleted while it ran, as a tab leaves it out
        is_code = cells.peek(index).get("cell_type") == "code"
        result = results.get(cell_id)
        # A cell still going stays shown running until a later ``run`` names it again.
        cells.set_running(index, result is not None and result.status == "running")
        if result is not None:
            cells.set_outputs(index, result.outputs, result.execution_count)
            status: str = result.status
        elif is_code or failed:
            status = "skipped"
        else:
            status = "done"  # a markdown cell "runs" by rendering
        failed = failed or status in ("error", "interrupted", "skipped")
        view = _cells.cell_view(cells, index, True, with_index=True)
        view["status"] = status
        views.append(view)
    return {"cells": views}
