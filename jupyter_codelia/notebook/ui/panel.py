"""The in-cell widget panel: one agent turn drawn from its event stream with standard ipywidgets.

``RunPanel.handle(event)`` consumes agent events and updates widgets: a header
(model, session, status, tokens, cost, context left), streaming markdown, a card per tool call
with a collapsible result, images, coloured diffs, the live todo list, approval cards and a Stop
button. Streaming text is coalesced: at most one widget update per ``flush_interval`` seconds
(``flush_pending`` is called by the driver's clock), and long answers are sealed into paragraph
chunks so every update stays small.

When the run ends (:meth:`finish`), a panel shown with :meth:`show` turns into static rich
output (see ``_static``) and closes all its widgets, so the saved notebook keeps the run and
the kernel keeps nothing of it. Where no front end renders widgets (``kit=QUIET``, see
``_kit``) the same panel is built on widgets that send nothing, and only its static output is
displayed: at the start, and replaced by the final one at the end.

The panel never touches the agent: Stop and approval clicks go to the callbacks it was given.
A blocking run holds the kernel's main shell, so a widget click would only arrive once the run
is over: there the Stop and approval buttons are plain HTML naming the run and the approval
(``data-codelia-*``), which the labextension catches and sends as a ``cell.control`` request
on a kernel subshell (``labextension/src/cellcontrols.ts``). They show only where that extension
is loaded (its stylesheet reveals them); elsewhere the panel says to answer at the input prompt
and to stop with the kernel interrupt.
"""

from __future__ import annotations

import base64
import functools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import ipywidgets as widgets
from typing_extensions import assert_never

from ..._approval import Decision
from ..._text import clip_chars
from ...agent import events as ev
from . import _static, renderers
from ._finals import FINALS
from ._kit import LIVE, WidgetKit

FLUSH_INTERVAL = 0.05
"""Seconds between streamed-text widget updates (about 20 per second at most)."""

SEAL_CHARS = 4000
"""A streaming text block longer than this is sealed at the next paragraph break."""

MAX_RESULT_CHARS = 20_000
"""Display cap of a tool result in its card (the model's copy lives in the output cache)."""

# (request id, decision, reason, the filled-in form's values when the request asked for one)
DecisionCallback = Callable[[str, Decision, "str | None", "dict[str, Any] | None"], None]
Mode = Literal["blocking", "background"]


ROWS_PER_BLOCK = 40
"""Body widgets are appended into blocks of this many (see :class:`_Rows`)."""


class _Rows:
    """The panel's body: its widgets in order, held in blocks of at most ``ROWS_PER_BLOCK``.

    Setting a ``children`` trait validates and sends the whole list, so one flat box would make
    every append cost as much as the run is long. Appending goes into the last block instead,
    and the outer box changes only once per block (see bench/cell_panel.py).
    """

    def __init__(self, kit: WidgetKit) -> None:
        self._kit = kit
        self.box = kit.VBox([])
        self._blocks: list[widgets.VBox] = []

    @property
    def children(self) -> tuple[widgets.Widget, ...]:
        return tuple(child for block in self._blocks for child in block.children)

    def append(self, widget: widgets.Widget) -> None:
        if not self._blocks or len(self._blocks[-1].children) >= ROWS_PER_BLOCK:
            block = self._kit.VBox([])
            self._blocks.append(block)
            self.box.children = (*self.box.children, block)
        last = self._blocks[-1]
        last.children = (*last.children, widget)

    def clear(self) -> None:
        """Drop every row (the widgets are closed by the caller)."""
        self.box.children = ()
        self._blocks.clear()

    def remove(self, gone: set[int]) -> None:
        """Take out the widgets whose ``id()`` is in ``gone``."""
        for block in self._blocks:
            if any(id(child) in gone for child in block.children):
                block.children = tuple(c for c in block.children if id(c) not in gone)


@dataclass
class _ToolCard:
    tool: str
    box: widgets.VBox
    header: widgets.HTML
    summary: str
    status: str = "running"
    duration_ms: int | None = None
    approval_wait_ms: int | None = None
    jobs: list[str] = field(default_factory=list)
    """Background jobs this call started (the call returned; the job goes on)."""
    progress: str = ""
    """The latest progress or log line the running call reported (an MCP server's)."""


@dataclass
class _ApprovalCard:
    box: widgets.VBox
    buttons: list[widgets.Button]
    outcome: widgets.HTML
    message: widgets.HTML
    summary: str
    """The one line the card keeps once answered: the tool card above shows what ran."""
    controls: widgets.HTML | None = None
    """A blocking run's HTML buttons (answered over the control path, see the module doc)."""

    def fold(self) -> None:
        """Answered (or past answering): keep the question's one line and the outcome."""
        self.message.value = self.summary
        self.box.children = (self.message, self.outcome)


@dataclass
class _TextSegment:
    """The widgets of one assistant text block, sealed chunks first, then the live one."""

    sealed: list[widgets.HTML] = field(default_factory=list)
    sealed_text: list[str] = field(default_factory=list)
    live: widgets.HTML | None = None
    live_text: str = ""


class RunPanel:
    """Widgets for one turn; call :meth:`handle` for each event, then :meth:`finish`."""

    def __init__(
        self,
        *,
        model: str,
        session_id: str | None,
        mode: Mode = "blocking",
        prompt: str | None = None,
        on_stop: Callable[[], None] | None = None,
        on_decision: DecisionCallback | None = None,
        on_undo: Callable[[str], list[str]] | None = None,
        on_revert: Callable[[str], str | None] | None = None,
        flush_interval: float = FLUSH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        demo: bool = False,
        kit: WidgetKit = LIVE,
    ) -> None:
        self._kit = kit
        self.model = model
        self.session_id = session_id
        self.mode = mode
        self.status = "running"
        self._budget_reached = False
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd: float | None = 0.0
        self.session_input_tokens: int | None = None
        self.session_output_tokens: int | None = None
        self.demo = demo
        self.context_left_percent: int | None = None
        self.flush_interval = flush_interval
        self._clock = clock
        self._on_stop = on_stop
        self._on_decision = on_decision
        self._on_undo = on_undo
        self._on_revert = on_revert
        self._last_flush = float("-inf")
        self._dirty = False
        self._segment: _TextSegment | None = None
        self._cards: dict[str, _ToolCard] = {}
        self._approvals: dict[str, _ApprovalCard] = {}
        self._previews: dict[str, str] = {}
        self._transcript: list[str] = []
        self._todos_markdown = ""
        """The run as markdown, for the static output's ``text/markdown`` fallback."""
        self._final_text = ""
        self._display_id: str | None = None
        self._frame: widgets.Output | None = None
        self.run_id: str | None = None

        self.header = self._kit.HTML(value=self._header_html())
        self.budget = self._kit.HTML(value="", layout=self._kit.Layout(display="none"))
        self.budget.add_class("codelia-budget")
        self.todos = self._kit.HTML(value="", layout=self._kit.Layout(display="none"))
        self.body = _Rows(self._kit)
        self.error = self._kit.HTML(value="", layout=self._kit.Layout(display="none"))
        self.stop_button = self._kit.Button(
            description="Stop",
            icon="stop",
            button_style="danger",
            tooltip=self._stop_tooltip(),
            layout=self._kit.Layout(width="auto"),
        )
        self.stop_button.on_click(self._stop_clicked)
        if mode == "blocking":
            # Replaced by the HTML Stop once the run has an id (bind_run).
            self.stop_button.layout.display = "none"
        self.hint = self._kit.HTML(value=self._blocking_stop_html() if mode == "blocking" else "")
        footer = self._kit.HBox([self.stop_button, self.hint])
        children: list[widgets.Widget] = [self.header, self.budget]
        if prompt:
            children.append(
                self._kit.HTML(
                    value=f'<div style="color:var(--jp-ui-font-color2,#555);font-size:12px">▶ '
                    f"{renderers.escape(clip_chars(prompt, 300))}</div>"
                )
            )
        children += [self.todos, self.body.box, self.error, footer]
        self.widget = self._kit.VBox(
            children,
            layout=self._kit.Layout(
                border=f"1px solid {renderers.BORDER}", padding="4px 8px", width="100%"
            ),
        )
        self.widget.add_class("codelia-panel")

    # ------------------------------------------------------------------ display

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def show(self, display_id: str | None = None) -> None:
        """Display the panel so that :meth:`finish` can replace it with static output; with
        ``display_id`` (an output of this cell, e.g. the first run's "loading" line) in its place.

        A blocking run replaces its output by display id while the cell is still executing. A
        background run ends after its cell finished, when JupyterLab no longer routes output
        updates to that cell, so its live panel sits in an ``Output`` widget whose content is
        swapped (and the notebook tabs are told to keep the static form, see ``_static``).
        """
        self._display_id = display_id or uuid.uuid4().hex
        root: widgets.Widget = self.widget
        if self.mode == "background" and self._kit.live:
            self._frame = self._kit.Output()
            self._frame.append_display_data(self.widget)
            root = self._frame
        _static.show(
            root,
            self._kit,
            self.static_bundle(),
            display_id=self._display_id,
            replace=display_id is not None,
        )

    def _header_html(self) -> str:
        return renderers.header_html(
            model=self.model,
            session_id=self.session_id,
            status=self.status,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            context_left_percent=self.context_left_percent,
            session_input_tokens=self.session_input_tokens,
            session_output_tokens=self.session_output_tokens,
            demo=self.demo,
        )

    def _refresh_header(self) -> None:
        value = self._header_html()
        if self.header.value != value:
            self.header.value = value

    def bind_run(self, run_id: str) -> None:
        """The run this panel draws got its id: a blocking run's HTML buttons name it."""
        self.run_id = run_id
        if self.mode == "blocking" and self.status == "running":
            self.hint.value = self._blocking_stop_html()

    def _blocking_stop_html(self) -> str:
        """A blocking run's Stop (see the module doc), or how to stop it without the extension."""
        without = _without_extension(
            "Blocking run: stop it with the kernel interrupt (■), or run with --background."
        )
        if self.run_id is None:
            return without
        return (
            _with_extension(
                f'<button type="button" class="{_BUTTON_CLASS} mod-danger" title="'
                f'{renderers.escape(self._stop_tooltip())}" data-codelia-action="stop">'
                "■ Stop</button>",
                run_id=self.run_id,
            )
            + without
        )

    def _stop_tooltip(self) -> str:
        return "Stop the run (history is repaired and the session saved)."

    def _append(self, widget: widgets.Widget) -> None:
        self.body.append(widget)

    # ------------------------------------------------------------------ run-level state

    def set_status(self, status: str) -> None:
        self.status = status
        self._refresh_header()

    def show_error(self, message: str) -> None:
        self.flush_pending(force=True)
        self._transcript.append(f"**Error:** {message}")
        self.error.value = (
            '<div style="color:var(--jp-error-color1,#d93025);white-space:pre-wrap"><b>Error:</b> '
            f"{renderers.escape(message)}</div>"
        )
        self.error.layout.display = None

    def finish(self, status: str) -> None:
        """The run ended: flush text, freeze the buttons, show the final status."""
        self.flush_pending(force=True)
        self.stop_button.disabled = True
        self.stop_button.layout.display = "none"  # nothing left to stop
        self.hint.value = ""
        for card in self._approvals.values():
            for button in card.buttons:
                button.disabled = True
            if card.controls is not None:
                card.controls.value = ""
            if not card.outcome.value:
                card.outcome.value = (
                    f'<b style="color:{renderers.MUTED}">'
                    f"Not answered: the run ended ({status}).</b>"
                )
            card.fold()
        for tool_card in self._cards.values():
            if tool_card.status == "running":
                # Events after a Stop are not delivered, so no result will ever arrive.
                tool_card.status = "cancelled" if status == "cancelled" else "error"
                tool_card.header.value = _card_header(tool_card)
        if status == "completed" and self._budget_reached:
            status = BUDGET_STOPPED  # it ended with a summary, not because the work was done
        self.set_status(status)
        if self._display_id is not None:
            self._become_static()

    def static_bundle(self) -> dict[str, Any]:
        """The panel as a display bundle (HTML, first image, markdown, text) at this moment."""
        header = (
            f"**codelia** · {self.model} · {self.status} · "
            f"{renderers.format_tokens(self.input_tokens)} in / "
            f"{renderers.format_tokens(self.output_tokens)} out"
        )
        todos = [] if self.todos.layout.display == "none" else [self._todos_markdown]
        markdown = "\n\n".join([header, *todos, *self._transcript])
        plain = f"codelia run {self.status}: {clip_chars(self._final_text, 300)}".rstrip(": ")
        return _static.mime_bundle(_static.to_static(self.widget), markdown=markdown, plain=plain)

    def _become_static(self) -> None:
        """Swap the live widgets for static output, close them all and drop their content."""
        assert self._display_id is not None
        bundle = self.static_bundle()
        if self.mode == "blocking":
            _static.display_static(self._display_id, bundle)
        else:  # the cell finished long ago (a client following one cell at a time gets it)
            _static.display_static_later(self._display_id, bundle)
        if self._frame is not None:
            self._frame.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)
        if self._kit.live:
            frame, self._frame = self._frame, None
            root = frame if frame is not None else self.widget
            # A background run's frame stays open (within the finals' budget) for front ends
            # without jupyter-codelia: it shows the static form now.
            close = None if frame is None else functools.partial(_static.close_tree, frame)
            FINALS.finished(root.model_id, bundle, close)
        _static.close_tree(self.widget)
        self.body.clear()
        self.widget.children = ()
        self._cards.clear()
        self._approvals.clear()
        self._previews.clear()
        self._transcript.clear()
        self._segment = None

    # ------------------------------------------------------------------ events

    def handle(self, event: ev.AgentEvent) -> None:
        """Draw one agent event (a model from ``agent.events``); every kind is named here, so a
        new kind fails the type check until it is drawn or deliberately skipped."""
        match event:
            case ev.TextDeltaEvent():
                self._stream(event.delta)
            case ev.TextEvent() | ev.FinalEvent():
                self._text(event)
            case ev.TextDiscardedEvent():
                self._discard_segment()
            case ev.ReasoningEvent():
                self._reasoning(event.content)
            case ev.ToolCallEvent():
                self._tool_call(event)
            case ev.PermissionPreviewEvent():
                if event.tool_call_id and event.diff:
                    self._previews[event.tool_call_id] = event.diff
            case ev.PermissionRequestEvent():
                self._permission_request(event)
            case ev.PermissionResolvedEvent():
                self._permission_resolved(event)
            case ev.ToolProgressEvent():
                card = self._cards.get(event.tool_call_id or "")
                if card is not None:
                    card.progress = renderers.progress_line(event)
                    card.header.value = _card_header(card)
            case ev.ToolResultEvent():
                self._tool_result(event)
            case ev.StepCompleteEvent():
                self._step_complete(event)
            case ev.UsageEvent():
                self._usage(event)
            case ev.TodosUpdatedEvent():
                self.show_todos([t.model_dump(by_alias=True) for t in event.todos])
            case ev.LlmRetryEvent():
                self._notice(
                    f"Model call failed ({event.failure_kind}); retry {event.next_attempt}/"
                    f"{event.max_attempts} in {renderers.format_duration(event.delay_ms)}."
                )
            case ev.BudgetEvent():
                self.budget.value = _budget_html(event)
                self.budget.layout.display = None
                if event.reached:
                    self._budget_reached = True
                    self._notice(f"Budget reached: {event.reached}. Ending with a summary.")
            case ev.CompactionCompleteEvent():
                if event.compacted:
                    self._notice("Conversation compacted to fit the context window.")
            case ev.SessionForkedEvent():
                self._notice(
                    f"Another kernel saved session {event.forked_from} while this one had it "
                    f"open: this conversation continues as session {event.session_id}, so "
                    "neither kernel's turns are lost."
                )
            case (
                ev.ReasoningDeltaEvent()
                | ev.StepStartEvent()
                | ev.PermissionReadyEvent()
                | ev.CompactionStartEvent()
            ):
                pass  # the card, the approval and the finished reasoning draw these
            case _:
                assert_never(event)

    def _text(self, event: ev.TextEvent | ev.FinalEvent) -> None:
        self._complete_text(event.content)
        if isinstance(event, ev.FinalEvent):
            self._final_text = event.content
        if event.citations:
            self._append(
                self._kit.HTML(
                    value=renderers.citations_to_html([c.model_dump() for c in event.citations])
                )
            )

    def _reasoning(self, content: str) -> None:
        self._end_segment()
        self._append(
            self._kit.HTML(
                value=f'<div style="color:{renderers.MUTED};font-style:italic;font-size:12px">'
                f"{renderers.escape(clip_chars(content, 2000))}</div>"
            )
        )

    def _usage(self, event: ev.UsageEvent) -> None:
        # Each event is one model call: this run's figures add them up once each.
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        self.cost_usd = (
            None
            if self.cost_usd is None or event.cost_usd is None
            else self.cost_usd + event.cost_usd
        )
        self.session_input_tokens = event.total_input_tokens
        self.session_output_tokens = event.total_output_tokens
        if event.context_left_percent is not None:
            self.context_left_percent = event.context_left_percent
        self._refresh_header()

    def show_todos(self, todos: list[dict[str, Any]]) -> None:
        self.todos.value = renderers.todos_to_html(todos)
        self.todos.layout.display = None
        self._todos_markdown = renderers.todos_to_markdown(todos)

    def _notice(self, text: str) -> None:
        self._end_segment()
        self._transcript.append(f"_{text}_")
        self._append(
            self._kit.HTML(
                value=f'<div style="color:{renderers.MUTED};font-size:12px">'
                f"{renderers.escape(text)}</div>"
            )
        )

    # ------------------------------------------------------------------ streaming text

    def _stream(self, delta: str) -> None:
        segment = self._segment
        if segment is None:
            segment = self._segment = _TextSegment()
        if segment.live is None:
            segment.live = self._kit.HTML(value="")
            self._append(segment.live)
        segment.live_text += delta
        self._dirty = True
        if self._clock() - self._last_flush >= self.flush_interval:
            self.flush_pending()

    @property
    def has_pending(self) -> bool:
        return self._dirty

    def flush_pending(self, *, force: bool = False) -> None:
        """Push buffered text to the widgets (at most once per interval unless ``force``)."""
        if not self._dirty:
            return
        now = self._clock()
        if not force and now - self._last_flush < self.flush_interval:
            return
        self._last_flush = now
        self._dirty = False
        segment = self._segment
        if segment is None or segment.live is None:
            return
        self._seal_if_long(segment)
        segment.live.value = renderers.markdown_to_html(segment.live_text)

    def _seal_if_long(self, segment: _TextSegment) -> None:
        """Move whole paragraphs of a long live block into a sealed widget (never in a fence)."""
        if len(segment.live_text) < SEAL_CHARS or segment.live is None:
            return
        cut = _paragraph_cut(segment.live_text)
        if cut is None:
            return
        done, rest = segment.live_text[:cut], segment.live_text[cut:]
        segment.live.value = renderers.markdown_to_html(done)
        segment.sealed.append(segment.live)
        segment.sealed_text.append(done)
        segment.live = self._kit.HTML(value="")
        segment.live_text = rest
        self._append(segment.live)

    def _complete_text(self, content: str) -> None:
        if content.strip():
            self._transcript.append(content)
        segment = self._segment
        streamed = "" if segment is None else "".join(segment.sealed_text) + segment.live_text
        if segment is not None and streamed.strip() == content.strip():
            self._dirty = True
            self.flush_pending(force=True)
        elif content.strip():
            if segment is not None:
                self._remove_widgets(segment)
            self._append(self._kit.HTML(value=renderers.markdown_to_html(content)))
        self._segment = None
        self._dirty = False

    def _discard_segment(self) -> None:
        """Remove the text streamed so far: its model call failed and is being retried."""
        if self._segment is not None:
            self._remove_widgets(self._segment)
        self._segment = None
        self._dirty = False

    def _remove_widgets(self, segment: _TextSegment) -> None:
        removed = [*segment.sealed, *([segment.live] if segment.live is not None else [])]
        self.body.remove({id(w) for w in removed})
        for widget in removed:
            _static.close_tree(widget)  # out of the tree: close_tree at the end cannot reach it

    def _end_segment(self) -> None:
        if self._segment is not None:
            self._dirty = True
            self.flush_pending(force=True)
            self._segment = None

    # ------------------------------------------------------------------ tool cards

    def _tool_call(self, event: ev.ToolCallEvent) -> None:
        self._end_segment()
        summary = renderers.args_summary(event.args)
        header = self._kit.HTML()
        args_view = self._kit.Accordion(
            children=[self._kit.HTML(value=renderers.args_html(event.args))]
        )
        args_view.set_title(0, "Code" if _shows_code(event.args) else "Arguments")
        # Code is what a person reads a python / shell card for: shown whole, not folded away.
        args_view.selected_index = 0 if _shows_code(event.args) else None
        box = self._kit.VBox(
            [header, args_view],
            layout=self._kit.Layout(
                border="1px solid var(--jp-border-color2,#e0e0e0)",
                margin="4px 0",
                padding="2px 6px",
            ),
        )
        box.add_class("codelia-tool-card")
        title = event.display_name or event.tool  # an MCP tool names its server
        card = _ToolCard(tool=title, box=box, header=header, summary=summary)
        header.value = _card_header(card)
        self._transcript.append(f"- **{event.tool}**" + (f" `{summary}`" if summary else ""))
        self._cards[event.tool_call_id] = card
        self._append(box)

    def _tool_result(self, event: ev.ToolResultEvent) -> None:
        card = self._cards.get(event.tool_call_id)
        if card is None:
            self._tool_call(
                ev.ToolCallEvent(tool=event.tool, args={}, tool_call_id=event.tool_call_id)
            )
            card = self._cards[event.tool_call_id]
        card.status = "error" if event.is_error else "done"
        data = event.data
        if data.job_id is not None:
            card.jobs.append(data.job_id)
            self._transcript.append(f"  (→ background job {data.job_id})")
        header_value = _card_header(card)
        card.header.value = header_value
        extra: list[widgets.Widget] = []
        if data.diff is not None:
            extra.append(self._kit.HTML(value=renderers.diff_to_html(data.diff)))
            self._transcript.append(f"```diff\n{data.diff.rstrip()}\n```")
            revert = self._revert_row(data.edit_id)
            if revert is not None:
                extra.append(revert)
        for image in _images_of(self._kit, event.parts or []):
            extra.append(image)
        text = clip_chars(event.result, MAX_RESULT_CHARS)
        if event.output_ref:
            text += f"\n\n[output ref: {event.output_ref}]"
        result_view = self._kit.Accordion(children=[self._kit.HTML(value=renderers.pre(text))])
        result_view.set_title(0, "Error" if event.is_error else "Result")
        result_view.selected_index = 0 if event.is_error else None
        if self._on_undo is not None and data.namespace_changes:
            extra.append(self._undo_button(event.tool_call_id))
        card.box.children = (*card.box.children, *extra, result_view)

    def _undo_button(self, tool_call_id: str) -> widgets.Widget:
        """Undo what one python call did to the namespace; shows exactly what was restored."""
        button = self._kit.Button(
            description="Undo", icon="undo", tooltip="Restore the variables this call changed"
        )
        outcome = self._kit.HTML(value="")
        on_undo = self._on_undo

        def clicked(_button: Any) -> None:
            button.disabled = True
            try:
                lines = on_undo(tool_call_id) if on_undo is not None else []
            except LookupError as exc:
                lines = [str(exc)]
            outcome.value = renderers.pre("\n".join(lines), max_height="10em")

        button.on_click(clicked)
        # The button lives only while the run does (a finished run becomes static output), so
        # the card also names the command that undoes this call afterwards.
        later = self._kit.HTML(
            value=f'<span style="font-size:11px;color:{renderers.MUTED}">Undo later with '
            f"<code>%codelia undo {renderers.escape(tool_call_id)}</code></span>"
        )
        box = self._kit.VBox([button, outcome, later])
        box.add_class("codelia-undo")
        return box

    def _revert_row(self, edit_id: str | None) -> widgets.HBox | None:
        """Revert for a card whose result names the notebook edit it made (cell tools)."""
        if edit_id is None or self._on_revert is None:
            return None
        on_revert = self._on_revert
        button = self._kit.Button(description="Revert", icon="undo")
        outcome = self._kit.HTML(value="")

        def clicked(_button: Any) -> None:
            button.disabled = True
            outcome.value = "Reverting…"

            def work() -> None:
                # Off the kernel's thread: the front end's answer may come on the comm.
                problem = on_revert(edit_id)
                outcome.value = renderers.escape(problem or "Reverted.")
                button.disabled = problem is None

            threading.Thread(target=work, name="codelia-revert", daemon=True).start()

        button.on_click(clicked)
        return self._kit.HBox([button, outcome])

    def _step_complete(self, event: ev.StepCompleteEvent) -> None:
        card = self._cards.get(event.step_id)
        if card is None:
            return
        card.duration_ms = event.duration_ms
        card.approval_wait_ms = event.approval_wait_ms
        if event.status == "error":
            card.status = "error"
        card.header.value = _card_header(card)

    # ------------------------------------------------------------------ approvals

    def _permission_request(self, event: ev.PermissionRequestEvent) -> None:
        self._end_segment()
        request_id = event.request_id
        preview = self._previews.get(event.tool_call_id or "")
        parts = [
            f"<b>{renderers.escape(event.title)}</b>",
            renderers.pre(event.message, max_height="10em"),
        ]
        if event.kind == "tool":
            # What will run, readable: the code, the command, the path and its diff, the URL.
            parts.append(renderers.args_html(event.args, diff_shown=bool(preview)))
        if event.url:
            link = renderers.escape(event.url)
            parts.append(
                f'<div>Open: <a href="{link}" target="_blank" rel="noopener">{link}</a></div>'
            )
        if preview:
            parts.append(renderers.diff_to_html(preview))
        message = self._kit.HTML(value="".join(parts))
        question = event.kind != "tool"
        outcome = self._kit.HTML(value="")
        if self.mode == "blocking":
            # The kernel's shell is busy with this cell: widget clicks would arrive too late.
            has_form = bool((event.fields or {}).get("properties"))
            controls = self._kit.HTML(
                value=_approval_controls_html(self.run_id, request_id, question, has_form)
            )
            card = _ApprovalCard(
                box=self._kit.VBox([message, controls, outcome]),
                buttons=[],
                outcome=outcome,
                message=message,
                summary=_approval_summary(event),
                controls=controls,
            )
        else:
            card = self._approval_widgets(event, message, outcome, question)
        card.box.layout = self._kit.Layout(
            border="2px solid var(--jp-warn-color1,#e37400)", padding="4px", margin="4px 0"
        )
        card.box.add_class("codelia-approval")
        self._approvals[request_id] = card
        self._append(card.box)
        self.set_status("awaiting approval")

    def _approval_widgets(
        self,
        event: ev.PermissionRequestEvent,
        message: widgets.HTML,
        outcome: widgets.HTML,
        question: bool,
    ) -> _ApprovalCard:
        """A background run's approval card: widget buttons, answered through the comm."""
        request_id = event.request_id
        reason = self._kit.Text(placeholder="Reason (optional, sent to the model on Deny)")
        allow = self._kit.Button(
            description="Accept" if question else "Allow", button_style="success"
        )
        always = self._kit.Button(description="Always allow", button_style="info")
        deny = self._kit.Button(
            description="Decline" if question else "Deny", button_style="danger"
        )
        buttons = [allow, deny] if question else [allow, always, deny]
        # A form (an MCP server's elicitation): one text box per field, sent with Accept.
        inputs = {
            name: self._kit.Text(
                description=name,
                placeholder=str(spec.get("description") or spec.get("type") or ""),
                value="" if spec.get("default") is None else str(spec.get("default")),
            )
            for name, spec in ((event.fields or {}).get("properties") or {}).items()
        }

        def answer(decision: Decision) -> Callable[[Any], None]:
            def clicked(_button: Any) -> None:
                for b in buttons:
                    b.disabled = True
                text = reason.value.strip() or None
                content = {k: w.value for k, w in inputs.items() if w.value != ""} or None
                if self._on_decision is not None:
                    self._on_decision(request_id, decision, text, content)

            return clicked

        allow.on_click(answer("allow"))
        always.on_click(answer("allow_remember"))
        deny.on_click(answer("deny"))
        box = self._kit.VBox([message, *inputs.values(), reason, self._kit.HBox(buttons), outcome])
        return _ApprovalCard(
            box=box,
            buttons=buttons,
            outcome=outcome,
            message=message,
            summary=_approval_summary(event),
        )

    def _permission_resolved(self, event: ev.PermissionResolvedEvent) -> None:
        card = self._approvals.get(event.request_id)
        if card is None:
            return
        for button in card.buttons:
            button.disabled = True
        if card.controls is not None:
            card.controls.value = ""  # answered: nothing left to click
        labels = {"allow": "Allowed", "allow_remember": "Always allowed", "deny": "Denied"}
        text = labels[event.decision]
        if event.reason:
            text += f": {event.reason}"
        colour = (
            "var(--jp-error-color1,#d93025)"
            if event.decision == "deny"
            else "var(--jp-success-color1,#188038)"
        )
        card.outcome.value = f'<b style="color:{colour}">{renderers.escape(text)}</b>'
        card.fold()
        self._transcript.append(f"- approval: {text}")
        if self.status == "awaiting approval":
            self.set_status("running")

    def _stop_clicked(self, _button: Any) -> None:
        if self._on_stop is not None:
            self.stop_button.disabled = True
            self.stop_button.description = "Stopping…"
            self._on_stop()


def _approval_summary(event: ev.PermissionRequestEvent) -> str:
    """An answered approval's one line: its title and the first line of what it asked."""
    lines = event.message.strip().splitlines()
    first = clip_chars(lines[0], 160) if lines else ""
    more = "…" if len(lines) > 1 and lines[1].strip() else ""
    return f"<b>{renderers.escape(event.title)}</b> <code>{renderers.escape(first)}{more}</code>"


BUDGET_STOPPED = "stopped by its budget"
"""The header's status for a run its budget ended (with a summary) rather than its work."""

_BUTTON_CLASS = "jupyter-button widget-button"
"""The look of an ipywidgets button, for the HTML buttons of a blocking run."""


def _with_extension(inner: str, *, run_id: str, approval_id: str | None = None) -> str:
    """HTML the labextension reveals and serves (hidden where it is not loaded)."""
    approval = f' data-codelia-approval="{renderers.escape(approval_id)}"' if approval_id else ""
    return (
        f'<div class="codelia-cell-controls" style="display:none" '
        f'data-codelia-run="{renderers.escape(run_id)}"{approval}>{inner}'
        '<span class="codelia-cell-note" style="font-size:11px"></span></div>'
    )


def _without_extension(text: str) -> str:
    """A hint the labextension hides (its buttons do the job there)."""
    return (
        f'<span class="codelia-without-extension" style="color:{renderers.MUTED};'
        f'font-size:11px">{renderers.escape(text)}</span>'
    )


def _approval_controls_html(
    run_id: str | None, request_id: str, question: bool, has_form: bool
) -> str:
    """A blocking run's approval buttons (see the module doc) and the input prompt's key."""
    prompt = _without_extension(
        "Answer in the input box below (y = allow, a = always allow, n or a reason = deny)."
    )
    if run_id is None or has_form:
        return prompt  # a form is filled in at the input prompt (or in the side panel)
    choices = [("allow", "Accept" if question else "Allow", "mod-success")]
    if not question:
        choices.append(("allow_remember", "Always allow", "mod-info"))
    choices.append(("deny", "Decline" if question else "Deny", "mod-danger"))
    buttons = "".join(
        f'<button type="button" class="{_BUTTON_CLASS} {style}" '
        f'data-codelia-action="{action}">{label}</button>'
        for action, label, style in choices
    )
    reason = (
        '<input type="text" class="widget-input codelia-reason" data-codelia-reason '
        'placeholder="Reason (optional, sent to the model on Deny)" style="width:100%">'
    )
    return (
        _with_extension(f"{reason}<div>{buttons}</div>", run_id=run_id, approval_id=request_id)
        + prompt
    )


def _card_header(card: _ToolCard) -> str:
    icons = {"running": "⏳", "done": "✔", "error": "✖", "cancelled": "■"}
    colour = {
        "running": "var(--jp-brand-color1,#1a73e8)",
        "done": "var(--jp-success-color1,#188038)",
        "error": "var(--jp-error-color1,#d93025)",
        "cancelled": renderers.MUTED,
    }[card.status]
    duration = (
        f" · {renderers.format_duration(card.duration_ms)}" if card.duration_ms is not None else ""
    )
    if card.approval_wait_ms is not None:
        duration += f" (+ {renderers.format_duration(card.approval_wait_ms)} awaiting approval)"
    summary = f" <code>{renderers.escape(card.summary)}</code>" if card.summary else ""
    if card.jobs:
        summary += (
            f' <b style="color:var(--jp-brand-color1,#1a73e8)">→ background job '
            f"{renderers.escape(', '.join(card.jobs))}</b>"
        )
    if card.status == "running" and card.progress:
        duration += f" · {renderers.escape(card.progress)}"
    return (
        f'<div style="font-size:12px"><span style="color:{colour}">{icons[card.status]}</span> '
        f"<b>{renderers.escape(card.tool)}</b>{summary}"
        f'<span style="color:{renderers.MUTED}"> · {card.status}{duration}</span></div>'
    )


_BUDGET_LABELS: dict[str, tuple[str, Callable[[float], str]]] = {
    "max_cost_usd": ("cost_usd", lambda v: f"${v:.4f}".rstrip("0").rstrip(".")),
    "max_tokens": ("tokens", lambda v: f"{int(v):,} tokens"),
    "max_tool_calls": ("tool_calls", lambda v: f"{int(v)} tool calls"),
    "max_wall_seconds": ("wall_seconds", lambda v: f"{v:.0f} s"),
}


def _budget_html(event: ev.BudgetEvent) -> str:
    """The meter: spend against each set limit of the run and the session."""
    parts: list[str] = []
    for scope, spent, limits in (
        ("run", event.run_spent, event.run_limits),
        ("session", event.session_spent, event.session_limits),
    ):
        for limit_name, limit in limits.items():
            key, fmt = _BUDGET_LABELS[limit_name]
            value = spent.get(key)
            used = "?" if value is None else fmt(value)
            parts.append(f"{scope} {renderers.escape(used)} / {renderers.escape(fmt(limit))}")
    colour = "#d93025" if event.reached else "#555"
    return f'<div style="font-size:11px;color:{colour}">budget: ' + " · ".join(parts) + "</div>"


def _shows_code(args: dict[str, Any]) -> bool:
    return any(isinstance(args.get(key), str) for key in ("code", "command", "patch"))


def _image_layout(kit: WidgetKit) -> widgets.Layout:
    # Natural size, never wider than the card: a flex column would otherwise stretch a small
    # plot to the full width. No margin: the widgets' default 2 px on each side on top of a
    # full-width image would overflow the card and show a horizontal scrollbar.
    return kit.Layout(max_width="100%", align_self="flex-start", height="auto", margin="0")


def _images_of(kit: WidgetKit, parts: list[dict[str, Any]]) -> list[widgets.Image]:
    images = []
    for part in parts:
        if part.get("type") != "image_url":
            continue
        url = str((part.get("image_url") or {}).get("url", ""))
        if not url.startswith("data:") or ";base64," not in url:
            continue
        media, payload = url[5:].split(";base64,", 1)
        fmt = media.split("/", 1)[-1] or "png"
        images.append(
            kit.Image(value=base64.b64decode(payload), format=fmt, layout=_image_layout(kit))
        )
    return images


def _paragraph_cut(text: str) -> int | None:
    """Where to seal a long live block: after the last blank line outside a code fence.

    A block with no paragraph break is cut after its last line break (outside a fence) once it
    is twice the seal size, and at its last space once it is four times that, so no single
    update grows without bound even for one endless paragraph.
    """
    in_fence = False
    paragraph: int | None = None
    line_break: int | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
        elif position < len(text) and not in_fence:
            if not stripped:
                paragraph = position
            elif line.endswith("\n"):
                line_break = position
    if paragraph is not None:
        return paragraph
    if line_break is not None and len(text) >= 2 * SEAL_CHARS:
        return line_break
    if len(text) >= 4 * SEAL_CHARS and not in_fence and "\n" not in text:
        space = text.rfind(" ", 0, len(text) - 1)
        return space + 1 if space > 0 else None
    return None
