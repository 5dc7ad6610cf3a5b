"""The notebook tools ``notebook_read``, ``notebook_edit`` and ``notebook_run``.

They let the agent see and change the notebook the person is looking at. Reads and edits go to
the live notebook model in the front end (:mod:`.frontend`); without a front end that answers,
``notebook_read`` reads the saved ``.ipynb`` (and says so), ``kernel_history`` still works, and
``notebook_edit`` / ``notebook_run`` refuse with a message naming what is missing: an edit that
did not happen is never reported as done.

Every cell the agent inserts or edits carries ``metadata.codelia`` provenance (session, run,
tool call, model, action, time, prompt) so the person can see and list what the agent touched.

>>> tools = notebook_tools(NotebookContext(get_ipython(), FrontendClient()))
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..._redact import redact_secrets
from ...llm.messages import TextPart
from ...standard_tools.diff import diff_data, diff_payload, unified_diff
from ...standard_tools.files._edit_match import explain_no_match, find_exact
from ...standard_tools.images import model_images
from ...tools import FunctionTool, ToolContext, ToolError, ToolReturn, ToolRisk, define_tool
from ...wire import NotebookAction
from ..frontend import FrontendClient, FrontendError, FrontendUnavailableError
from . import cells as nbcells
from .kernel_history import kernel_history_tool

if TYPE_CHECKING:
    from .._shell import KernelShell

MAX_RUN_CELLS = 20
DEFAULT_RUN_WAIT_SECONDS = 30.0
MAX_RUN_WAIT_SECONDS = 600.0
PROMPT_IN_PROVENANCE_CHARS = 200


@dataclass
class NotebookContext:
    """What the notebook tools need from the kernel: the shell and who is running them."""

    shell: KernelShell | None
    frontend: FrontendClient
    # (run_id, session_id, prompt, model, blocking) of the active run, for provenance and for
    # choosing where notebook_run executes; empty outside a run.
    run_info: Callable[[], dict[str, Any]] = field(default=lambda: {})

    def history(self) -> nbcells.KernelHistory | None:
        manager = getattr(self.shell, "history_manager", None)
        if manager is None:
            return None
        outputs = getattr(self.shell, "user_ns", {}).get("Out", {})
        return nbcells.KernelHistory(
            inputs=manager.input_hist_raw, outputs=outputs if isinstance(outputs, dict) else {}
        )

    def saved_path(self) -> Path | None:
        """The notebook file this kernel belongs to, when the front end told the kernel."""
        ns = getattr(self.shell, "user_ns", {})
        candidates = [ns.get("__vsc_ipynb_file__"), ns.get("__session__")]
        candidates.append(os.environ.get("JPY_SESSION_NAME"))
        info = self.frontend.info
        if info is not None:
            candidates.insert(0, info.path)
        for candidate in candidates:
            if isinstance(candidate, str) and candidate.endswith(".ipynb"):
                path = Path(candidate)
                if not path.is_absolute():
                    path = Path.cwd() / path
                if path.is_file():
                    return path
        return None

    async def call(
        self, action: NotebookAction, params: dict[str, Any], timeout: float = 30.0
    ) -> Any:
        return await asyncio.to_thread(self.frontend.call, action, params, timeout)

    def live_now(self, outputs_for: list[str] | None = None) -> nbcells.NotebookSnapshot:
        """The live notebook from the front end (blocks this thread for the round trip)."""
        raw = self.frontend.call("snapshot", {"outputs_for": outputs_for})
        try:
            return nbcells.snapshot_from_json(raw, "live")
        except (ValueError, ValidationError) as exc:
            raise ToolError(f"the front end sent a malformed notebook snapshot: {exc}") from None

    def snapshot_now(self, outputs_for: list[str] | None = None) -> nbcells.NotebookSnapshot:
        """The live notebook, or the saved file when no front end answers."""
        try:
            return self.live_now(outputs_for)
        except FrontendUnavailableError as exc:
            path = self.saved_path()
            if path is None:
                raise ToolError(
                    f"Cannot read the notebook: {exc}, and the kernel does not know which "
                    ".ipynb file it belongs to (no __session__ / JPY_SESSION_NAME). "
                    "kernel_history still shows what the kernel ran."
                ) from None
            try:
                return nbcells.read_saved(path)
            except nbcells.NotebookFileError as file_error:
                raise ToolError(str(file_error)) from None
        except FrontendError as exc:
            raise ToolError(f"Cannot read the notebook: {exc}") from None

    async def live(self, outputs_for: list[str] | None = None) -> nbcells.NotebookSnapshot:
        return await asyncio.to_thread(self.live_now, outputs_for)

    async def snapshot(self, outputs_for: list[str] | None = None) -> nbcells.NotebookSnapshot:
        return await asyncio.to_thread(self.snapshot_now, outputs_for)

    def provenance(self, ctx: ToolContext, action: str) -> dict[str, Any]:
        """``metadata.codelia`` of an agent-made cell: saved in the ``.ipynb`` and sent over the
        comm, so the prompt is redacted (before clipping: a cut secret would not match)."""
        info = self.run_info()
        prompt = redact_secrets(str(info.get("prompt") or ""))
        return {
            "session_id": info.get("session_id"),
            "run_id": info.get("run_id"),
            "tool_call_id": ctx.tool_call_id,
            "model": info.get("model"),
            "action": action,
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "prompt": prompt[:PROMPT_IN_PROVENANCE_CHARS],
        }


# ---------------------------------------------------------------------- inputs


class NotebookReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start: int | None = Field(default=None, ge=0, description="First cell index to read.")
    end: int | None = Field(default=None, ge=0, description="Stop before this cell index.")
    cell_ids: list[str] | None = Field(default=None, description="Read these cells by id.")
    search: str | None = Field(default=None, description="Only cells whose source contains it.")
    include_outputs: bool = Field(default=True, description="Include the cells' outputs.")
    images: bool = Field(default=False, description="Attach image outputs (plots) as images.")
    source_line_offset: int = Field(
        default=0, ge=0, description="Skip this many source lines per cell (paging long cells)."
    )


class NotebookEditInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["insert", "replace", "delete", "move"]
    cell_id: str | None = Field(
        default=None,
        description="The cell to replace/delete/move, or the anchor for insert (with position).",
    )
    index: int | None = Field(
        default=None, ge=0, description="insert: put the new cell here; move: the new index."
    )
    position: Literal["before", "after"] = Field(
        default="after", description="insert next to cell_id: before or after it."
    )
    cell_type: Literal["code", "markdown"] = Field(default="code", description="insert only.")
    source: str | None = Field(
        default=None, description="insert: the new cell's source; replace: the whole new source."
    )
    old_string: str | None = Field(
        default=None, description="replace: exact text in the cell to change (with new_string)."
    )
    new_string: str | None = Field(default=None, description="replace: the text to put instead.")


class NotebookRunInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cell_ids: list[str] = Field(min_length=1, max_length=MAX_RUN_CELLS)
    wait_seconds: float = Field(
        default=DEFAULT_RUN_WAIT_SECONDS,
        ge=0,
        le=MAX_RUN_WAIT_SECONDS,
        description="Return 'still running' with the output so far after this long; call "
        "again with the same cell_ids to keep waiting.",
    )
    interrupt: bool = Field(default=False, description="Interrupt these cells if they run.")


READ_DESCRIPTION = (
    "Read the notebook the user has open. With no arguments: a short outline (headings, cell "
    "count, active cell, stale / never-run / error cells). With start/end, cell_ids or search: "
    "those cells with index, id, type, execution count, source and outputs (errors with the "
    "traceback tail; images=true attaches plots). Marks cells whose source changed after they "
    "ran (STALE)."
)
EDIT_DESCRIPTION = (
    "Change the user's open notebook: insert a code/markdown cell (at index, or before/after "
    "cell_id), replace a cell's source (whole `source`, or exact old_string → new_string), "
    "delete or move a cell. Returns the cell diff. The edit shows at once, joins the notebook's "
    "undo history and is marked as an agent edit. Cells the user is typing in are not "
    "overwritten."
)
RUN_DESCRIPTION = (
    "Run notebook cells by id exactly as the user would (outputs appear in the notebook, "
    "execution counts advance) and return their outputs, images included. Past wait_seconds it "
    "returns 'still running' with the output so far; call again with the same cell_ids to wait "
    "more, or interrupt=true to stop them."
)


def notebook_tools(context: NotebookContext) -> list[FunctionTool]:
    async def notebook_read(args: NotebookReadInput, ctx: ToolContext) -> Any:
        history = context.history()
        selecting = args.start is not None or args.end is not None or args.cell_ids or args.search
        snapshot = await context.snapshot()
        if not selecting:
            return nbcells.outline(snapshot, history)
        try:
            indices = nbcells.select(
                snapshot,
                start=args.start,
                end=args.end,
                cell_ids=args.cell_ids,
                search=args.search,
            )
        except LookupError as exc:
            raise ToolError(str(exc)) from None
        if args.include_outputs and snapshot.source == "live" and indices:
            snapshot = await context.snapshot([snapshot.cells[i].id for i in indices])
        rendered = nbcells.render_cells(
            snapshot,
            indices,
            history,
            include_outputs=args.include_outputs,
            images=args.images,
            source_line_offset=args.source_line_offset,
        )
        return await asyncio.to_thread(_with_images, rendered.text, rendered.images)

    async def notebook_edit(args: NotebookEditInput, ctx: ToolContext) -> ToolReturn:
        try:
            snapshot = await context.live()
        except FrontendUnavailableError as exc:
            raise ToolError(
                f"notebook_edit needs the live notebook and {exc}. Nothing was changed. Show the "
                "user the code to paste instead, or write a file with the file tools."
            ) from None
        except FrontendError as exc:
            raise ToolError(f"notebook_edit: {exc}. Nothing was changed.") from None
        params = _edit_params(args, snapshot)
        params["provenance"] = context.provenance(ctx, args.action)
        try:
            result = await context.call("edit", params)
        except FrontendError as exc:
            raise ToolError(f"notebook_edit: {exc}") from None
        report = _edit_report(params, result)
        edit_id = report.get("edit_id")
        return ToolReturn(report, diff_data(report, edit_id=edit_id))

    async def notebook_run(args: NotebookRunInput, ctx: ToolContext) -> Any:
        blocking = bool(context.run_info().get("blocking"))
        params = {
            "cell_ids": args.cell_ids,
            "wait_seconds": args.wait_seconds,
            "interrupt": args.interrupt,
            # A blocking %%codelia cell holds the main shell; the cells run on a subshell. IPython
            # numbers a cell when it starts, so the subshell's cells get the next counts and In
            # stays aligned with them.
            "channel": "subshell" if blocking else "main",
        }
        try:
            result = await context.call("run", params, timeout=args.wait_seconds + 30)
        except FrontendUnavailableError as exc:
            raise ToolError(
                f"notebook_run needs the live notebook and {exc}. Nothing was run; use the "
                "python tool to run code in the kernel instead."
            ) from None
        except FrontendError as exc:
            raise ToolError(f"notebook_run: {exc}") from None
        return await asyncio.to_thread(_run_report, result)

    return [
        define_tool(
            name="notebook_read",
            description=READ_DESCRIPTION,
            input=NotebookReadInput,
            execute=notebook_read,
            risk=ToolRisk(kind="read_only"),
        ),
        define_tool(
            name="notebook_edit",
            description=EDIT_DESCRIPTION,
            input=NotebookEditInput,
            execute=notebook_edit,
            risk=ToolRisk(kind="edit_notebook"),
        ),
        define_tool(
            name="notebook_run",
            description=RUN_DESCRIPTION,
            input=NotebookRunInput,
            execute=notebook_run,
            risk=ToolRisk(kind="run_code"),
        ),
        kernel_history_tool(context),
    ]


async def outline_for_turn(context: NotebookContext) -> str | None:
    """The live notebook's outline for the next request; None when no tab can answer.

    Never falls back to the saved file: the per-turn context must not cost a disk read of a
    large notebook, and ``notebook_read`` is there when the model wants the saved state.
    """
    if not context.frontend.tab_seen:
        return None
    try:
        snapshot = await context.live()
    except (FrontendError, ToolError):
        return None
    return nbcells.outline(snapshot, context.history())


def revert_edit(frontend: FrontendClient, edit_id: str) -> str | None:
    """Ask the front end to undo one agent edit; None when done, else why not."""
    try:
        frontend.call("revert", {"edit_id": edit_id})
    except FrontendError as exc:
        return f"Not reverted: {exc}"
    return None


def provenance_table(snapshot: nbcells.NotebookSnapshot) -> list[dict[str, Any]]:
    """The agent-made cells of the notebook with their ``metadata.codelia`` (for the magic)."""
    rows: list[dict[str, Any]] = []
    for index, cell in enumerate(snapshot.cells):
        provenance = cell.metadata.get("codelia")
        if isinstance(provenance, dict):
            # The review part is the labextension's (the source before the edit): only whether
            # the person accepted the edit belongs in the table.
            shown = {key: value for key, value in provenance.items() if key != "review"}
            review = provenance.get("review")
            if isinstance(review, dict) and review.get("accepted_at"):
                shown["accepted_at"] = review["accepted_at"]
            # Notebooks saved before prompts were redacted may still hold a secret.
            rows.append(redact_secrets({"index": index, "id": cell.id, **shown}))
    return rows


def _with_images(text: str, images: list[tuple[bytes, nbcells.ImageMime]]) -> Any:
    """The text with the images attached, each fitted to the provider's limits and at most
    as many as one result may carry (:func:`model_images` says what it changed or left out).
    CPU-bound for big images: called off the event loop."""
    if not images:
        return text
    parts, notes = model_images([data for data, _mime in images], what="image")
    if notes:
        text += "\n\n[images] " + "\n[images] ".join(notes)
    return [TextPart(text=text), *parts] if parts else text


# ---------------------------------------------------------------------- edit


def _cell_or_error(snapshot: nbcells.NotebookSnapshot, cell_id: str | None, action: str) -> int:
    if not cell_id:
        raise ToolError(f"notebook_edit {action} needs cell_id (see notebook_read for ids).")
    try:
        return snapshot.index_of(cell_id)
    except KeyError:
        raise ToolError(
            f"notebook_edit {action}: no cell with id {cell_id!r}; call notebook_read() for "
            "the current ids."
        ) from None


def _guard_editing(snapshot: nbcells.NotebookSnapshot, cell_id: str, index: int) -> None:
    if snapshot.editing_cell_id == cell_id:
        raise ToolError(
            f"The user is typing in cell #{index} (id {cell_id}) right now; it was not changed. "
            "Tell them the change you suggest, or edit it after they leave the cell."
        )


def _edit_params(args: NotebookEditInput, snapshot: nbcells.NotebookSnapshot) -> dict[str, Any]:
    count = len(snapshot.cells)
    if args.action == "insert":
        if args.source is None:
            raise ToolError("notebook_edit insert needs source (the new cell's text).")
        if args.cell_id is not None:
            anchor = _cell_or_error(snapshot, args.cell_id, "insert")
            index = anchor if args.position == "before" else anchor + 1
        elif args.index is not None:
            if args.index > count:
                raise ToolError(f"index={args.index} is past the end (the notebook has {count}).")
            index = args.index
        else:
            index = count
        return {"op": "insert", "index": index, "cell_type": args.cell_type, "source": args.source}
    index = _cell_or_error(snapshot, args.cell_id, args.action)
    cell = snapshot.cells[index]
    if args.action == "move":
        if args.index is None or args.index >= count:
            raise ToolError(f"notebook_edit move needs index between 0 and {count - 1}.")
        return {"op": "move", "cell_id": cell.id, "from_index": index, "index": args.index}
    _guard_editing(snapshot, cell.id, index)
    if args.action == "delete":
        return {"op": "delete", "cell_id": cell.id, "index": index, "expected_source": cell.source}
    new_source = _replaced_source(args, cell)
    return {
        "op": "replace",
        "cell_id": cell.id,
        "index": index,
        "expected_source": cell.source,
        "source": new_source,
    }


def _replaced_source(args: NotebookEditInput, cell: nbcells.CellView) -> str:
    if args.old_string is not None:
        if args.source is not None:
            raise ToolError("notebook_edit replace: give source OR old_string/new_string.")
        if args.new_string is None:
            raise ToolError("notebook_edit replace with old_string also needs new_string.")
        matches = find_exact(cell.source, args.old_string)
        if not matches:
            hint = explain_no_match(cell.source, args.old_string, "exact")
            raise ToolError(f"old_string was not found in cell {cell.id}. {hint}")
        if len(matches) > 1:
            raise ToolError(
                f"old_string occurs {len(matches)} times in cell {cell.id}; include more "
                "surrounding text so it is unique."
            )
        match = matches[0]
        return cell.source[: match.start] + args.new_string + cell.source[match.end :]
    if args.source is None:
        raise ToolError("notebook_edit replace needs source, or old_string and new_string.")
    return args.source


def _edit_report(params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The edit's summary and cell diff, in the JSON shape of ``edit`` (panels colour the diff)."""
    index = result.get("index", params.get("index"))
    cell_id = result.get("cell_id", params.get("cell_id"))
    where = f"cell #{index} (id {cell_id})"
    op = params["op"]
    before, after = params.get("expected_source", ""), params.get("source", "")
    if op == "insert":
        summary, before = f"Inserted {params['cell_type']} {where}.", ""
    elif op == "delete":
        summary, after = f"Deleted {where}.", ""
    elif op == "move":
        summary = f"Moved cell {cell_id} from #{params['from_index']} to #{params['index']}."
        before = after = ""
    else:
        summary = f"Replaced the source of {where}."
    report: dict[str, Any] = {"summary": summary, "cell_id": cell_id, "index": index}
    if result.get("edit_id"):
        report["edit_id"] = result["edit_id"]
        report["revert"] = "the user can revert this edit from the cell's codelia badge"
    report.update(
        diff_payload(unified_diff(f"cell #{index}", before, after), tool_name="notebook_edit")
    )
    return report


# ---------------------------------------------------------------------- run


def _run_report(result: dict[str, Any]) -> Any:
    blocks: list[str] = []
    images: list[tuple[bytes, nbcells.ImageMime]] = []
    skipped: list[str] = []
    raw_cells = result.get("cells")
    raw_cells = raw_cells if isinstance(raw_cells, list) else []
    for raw, cell in zip(raw_cells, nbcells.cells_from_json(raw_cells, skipped), strict=True):
        status = raw.get("status", "done") if isinstance(raw, dict) else "done"
        index = raw.get("index") if isinstance(raw, dict) else None
        head = f"cell {cell.id} (#{index})"
        if status == "running":
            head += " is STILL RUNNING; output so far (call notebook_run again to keep waiting):"
        elif status == "interrupted":
            head += " was interrupted:"
        elif status == "error":
            head += f" ran as [{cell.execution_count}] and raised:"
        else:
            head += f" ran as [{cell.execution_count}]:"
        outputs = [nbcells.output_text(o, images) for o in cell.outputs or []]
        blocks.append("\n".join([head, *(outputs or ["(no output)"])]))
    if skipped:
        blocks.append("Not readable, left out: " + "; ".join(skipped[: nbcells.SKIPPED_SHOWN]))
    return _with_images("\n\n".join(blocks) or "(no cells)", images)
