"""The kernel tools: ``python``, ``list_variables`` and ``inspect_variable``.

They are why the agent lives inside the kernel: the model runs code against the person's live
namespace and sees what it produced, plots included (PNG figures come back as image parts).

>>> tools = kernel_tools(namespace={"x": 1})        # or kernel_tools(shell=get_ipython())
"""

from __future__ import annotations

import fnmatch
import io
import sys
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..._text import clip_chars, js_round
from ...llm.messages import TextPart
from ...standard_tools.images import model_images
from ...standard_tools.jobs import JobRegistry, png_of_display
from ...tools import (
    FunctionTool,
    NamespaceChange,
    ToolContext,
    ToolError,
    ToolResultData,
    ToolReturn,
    ToolRisk,
    define_tool,
)
from . import _describe
from ._execute import MAX_STREAM_CHARS, Capture, run_code
from .undo import NamespaceUndo, change_report, untracked_report

if TYPE_CHECKING:
    from .._shell import KernelShell

DEFAULT_TIMEOUT_SECONDS = 120.0
MIN_CODE_SECONDS = 0.01
"""The code always gets at least this long, whatever recording took of the timeout."""
MAX_TIMEOUT_SECONDS = 3600.0
MAX_LISTED_VARIABLES = 200


class PythonInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(description="Python source to run in the notebook's namespace.")
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description="Seconds to wait for the code (default from configuration); past it the "
        "code becomes a background job when configured so, else it is stopped.",
    )
    background: bool = Field(
        default=False,
        description="Run the code as a background job on its own thread in the same namespace "
        "and return its job id at once (long training, slow queries); watch it with "
        "job_output / job_wait / job_stop.",
    )


class ListVariablesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str | None = Field(
        default=None, description="Glob on variable names, e.g. 'df*'. All variables if omitted."
    )
    include_private: bool = Field(default=False, description="Also list names starting with _.")


class InspectVariableInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(
        description="Variable name, optionally with attributes: 'df' or 'model.coef_'."
    )
    rows: int = Field(default=5, ge=1, le=100, description="Rows of head() for tables.")
    max_chars: int = Field(default=2000, ge=100, le=50_000, description="Cap on repr text.")


PYTHON_DESCRIPTION = (
    "Run Python code in the user's live Jupyter kernel namespace (variables persist and are "
    "shared with the user's cells). Returns stdout, stderr, the value of the last expression, "
    "the traceback of an exception and rich outputs: matplotlib figures created by the code and "
    "images passed to display() come back as images you can see. Prefer small steps."
)
LIST_DESCRIPTION = (
    "List the variables in the user's notebook namespace with type, size/shape and memory."
)
INSPECT_DESCRIPTION = (
    "Describe one live object: type, memory, and for DataFrames the shape, dtypes, null "
    "counts and head; for arrays shape, dtype and statistics; for other objects a clipped repr."
)


def kernel_tools(
    *,
    namespace: dict[str, Any] | None = None,
    shell: KernelShell | None = None,
    default_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    jobs: JobRegistry | None = None,
    timeout_to_job: bool = True,
    undo: NamespaceUndo | None = None,
) -> list[FunctionTool]:
    """The three kernel tools bound to ``shell.user_ns`` (or a plain ``namespace`` dict).

    With a ``jobs`` registry, ``python`` can start background jobs, and a call outliving its
    timeout becomes one when ``timeout_to_job`` (otherwise it is stopped). With ``undo``, every
    foreground call records what it changed in the namespace and its result lists it.
    """
    if namespace is not None:
        ns: dict[str, Any] = namespace
    elif shell is not None:
        ns = shell.user_ns
    else:
        raise ValueError("kernel_tools needs the namespace to work on: pass shell= or namespace=.")
    hidden: set[str] = (
        set(getattr(shell, "user_ns_hidden", {}) or {}) if shell is not None else set()
    )

    def format_value(value: Any) -> str:
        return _format_value(value, shell)[0]

    async def run_python(args: PythonInput, ctx: ToolContext) -> Any:
        timeout = args.timeout_seconds or default_timeout
        if args.background:
            if jobs is None:
                raise ToolError(
                    "Background python jobs are not available here (no job registry); run the "
                    "code in the foreground."
                )
            from .python_jobs import start_python_job

            job = start_python_job(jobs, args.code, ns, shell, format_value)
            started_text = (
                f"Started background job {job.job_id} on its own thread in the notebook "
                "namespace. Read its output with job_output, wait with job_wait, stop with "
                "job_stop."
            )
            return ToolReturn(started_text, ToolResultData(job_id=job.job_id))
        detach = jobs is not None and timeout_to_job
        before = _open_figures()
        started = time.monotonic()
        snapshot = None
        if undo is not None:
            snapshot = await undo.before(args.code, ctx.tool_call_id, timeout=timeout)
        # Recording counts against the call's timeout (its own budget keeps it small).
        code_started = time.monotonic()
        left = max(timeout - (code_started - started), MIN_CODE_SECONDS)
        capture = await run_code(args.code, ns, shell=shell, timeout=left, detach_on_timeout=detach)
        report: list[str] = []
        changes: list[NamespaceChange] = []
        if undo is not None and snapshot is not None:
            record = await undo.after(snapshot, ran_seconds=time.monotonic() - code_started)
            report = [s for s in (change_report(record), untracked_report(record)) if s]
            changes = [NamespaceChange(name=c.name, change=c.kind) for c in record.changes]
        job_id: str | None = None
        if detach and capture.timed_out:
            from .python_jobs import adopt_python_job

            assert jobs is not None
            adopted = adopt_python_job(jobs, args.code, capture, format_value)
            if adopted is None:
                capture.timed_out = False  # it ended on its own just at the deadline
            else:
                job_id = adopted.job_id
        images = _new_figure_pngs(before) if job_id is None else []
        result = _python_result(capture, images, shell, timeout, job_id, report)
        if not changes and job_id is None:
            return result
        return ToolReturn(result, ToolResultData(namespace_changes=changes or None, job_id=job_id))

    def list_variables(args: ListVariablesInput, ctx: ToolContext) -> str:
        rows: list[str] = []
        names = sorted(ns)
        shown = 0
        for name in names:
            value = ns[name]
            if args.pattern and not fnmatch.fnmatchcase(name, args.pattern):
                continue
            private_ok = args.include_private and name.startswith("_")
            if not private_ok and not _describe.is_user_variable(name, value, hidden):
                continue
            if shown >= MAX_LISTED_VARIABLES:
                rows.append("... more variables not shown (narrow with pattern=)")
                break
            size = _describe.human_bytes(_describe.memory_bytes(value))
            rows.append(f"{name}: {_describe.type_name(value)} ({size}) {_describe.summary(value)}")
            shown += 1
        if not rows:
            where = f" matching {args.pattern!r}" if args.pattern else ""
            return f"No user variables{where} in the notebook namespace."
        return "\n".join(rows)

    def inspect_variable(args: InspectVariableInput, ctx: ToolContext) -> str:
        value = _lookup(ns, args.name)
        head = f"{args.name}\n"
        return head + _describe.inspect_value(value, rows=args.rows, max_chars=args.max_chars)

    return [
        define_tool(
            name="python",
            description=PYTHON_DESCRIPTION,
            input=PythonInput,
            execute=run_python,
            risk=ToolRisk(kind="run_code"),
        ),
        define_tool(
            name="list_variables",
            description=LIST_DESCRIPTION,
            input=ListVariablesInput,
            execute=list_variables,
            risk=ToolRisk(kind="read_only"),
        ),
        define_tool(
            name="inspect_variable",
            description=INSPECT_DESCRIPTION,
            input=InspectVariableInput,
            execute=inspect_variable,
            risk=ToolRisk(kind="read_only"),
        ),
    ]


def _lookup(ns: dict[str, Any], dotted: str) -> Any:
    head, *attrs = dotted.strip().split(".")
    if not head.isidentifier() or not all(a.isidentifier() for a in attrs):
        raise ToolError(
            f"'{dotted}' is not a variable name; pass a name like 'df' or 'model.coef_' "
            "(use the python tool to evaluate expressions)."
        )
    if head not in ns:
        close = [n for n in ns if n.lower() == head.lower() and not n.startswith("_")]
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ToolError(
            f"No variable named '{head}' in the notebook namespace.{hint} "
            "Call list_variables to see what exists."
        )
    value = ns[head]
    for index, attr in enumerate(attrs):
        try:
            value = getattr(value, attr)
        except Exception as exc:
            path = ".".join([head, *attrs[:index]])
            raise ToolError(f"'{path}' has no attribute '{attr}' ({type(exc).__name__}).") from None
    return value


def _open_figures() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _new_figure_pngs(before: set[int]) -> list[bytes]:
    """PNG bytes of figures the code created; they are closed so they do not show twice."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    images: list[bytes] = []
    for number in pyplot.get_fignums():
        if number in before:
            continue
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png", bbox_inches="tight")
            images.append(buffer.getvalue())
        finally:
            pyplot.close(figure)
    return images


def _format_value(value: Any, shell: KernelShell | None) -> tuple[str, bytes | None]:
    """(text, png) of the last expression's value via IPython's formatters when available."""
    if shell is not None:
        try:
            data, _ = shell.display_formatter.format(value)
        except Exception:
            data = {}
        text = data.get("text/plain") or repr(value)
        return str(text), png_of_display(data)
    return repr(value), None


def _python_result(
    capture: Capture,
    images: list[bytes],
    shell: KernelShell | None,
    timeout: float,
    job_id: str | None = None,
    namespace_report: list[str] | None = None,
) -> Any:
    sections: list[str] = []
    if capture.stdout:
        sections.append("[stdout]\n" + "".join(capture.stdout).rstrip("\n"))
    if capture.stderr:
        sections.append("[stderr]\n" + "".join(capture.stderr).rstrip("\n"))
    if capture.truncated:
        sections.append(f"[note] output cut at {MAX_STREAM_CHARS} characters per stream")
    pngs: list[bytes] = []
    for display in capture.displays:
        png = png_of_display(display)
        if png is not None:
            pngs.append(png)
        elif "text/plain" in display:
            sections.append(
                "[display]\n" + clip_chars(str(display["text/plain"]), MAX_STREAM_CHARS)
            )
    if capture.has_result:
        text, png = _format_value(capture.result, shell)
        if png is not None and not images:
            pngs.append(png)
        sections.append("[result]\n" + clip_chars(text, MAX_STREAM_CHARS))
    if capture.error:
        sections.append("[error]\n" + capture.error)
    if job_id is not None:
        sections.append(
            f"[timeout] still running after {js_round(timeout)} s: it continues as background "
            f"job {job_id} (job_output reads what it prints next, job_wait waits for it, "
            "job_stop stops it)"
        )
    elif capture.timed_out:
        note = f"[timeout] stopped after {js_round(timeout)} s"
        if capture.still_running:
            note += " (it is blocked in native code and will stop at its next Python step)"
        sections.append(note)
    if namespace_report:
        sections += namespace_report
        if job_id is not None:
            sections[-1] += "\n(as of the timeout; what the job changes later is not tracked)"
    pngs += images
    attached, notes = model_images(pngs, what="figure")
    if attached:
        sections.append(f"[images] {len(attached)} image(s) attached below")
    sections.extend(f"[images] {note}" for note in notes)
    text = "\n\n".join(sections) if sections else "(no output)"
    if not attached:
        return text
    return [TextPart(text=text), *attached]
