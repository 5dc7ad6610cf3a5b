"""The widget panel and renderers, driven by lists of agent events (no kernel needed)."""

from __future__ import annotations

import io
import json
from typing import Any

import ipywidgets as widgets
import pytest
from PIL import Image

from jupyter_codelia.agent import events as ev
from jupyter_codelia.llm.messages import ImagePart
from jupyter_codelia.notebook.ui import renderers
from jupyter_codelia.notebook.ui.panel import SEAL_CHARS, RunPanel
from jupyter_codelia.tools import NamespaceChange, ToolResultData


class FakeClock:
    """A settable clock: the panel's coalescing is tested without sleeping."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _walk(widget: widgets.Widget) -> list[widgets.Widget]:
    found = [widget]
    for child in getattr(widget, "children", ()):
        found += _walk(child)
    return found


def _html(panel: RunPanel) -> str:
    return "\n".join(w.value for w in _walk(panel.widget) if isinstance(w, widgets.HTML))


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(buffer, format="PNG")
    return buffer.getvalue()


DIFF = "--- a.py\n+++ a.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n"


def _events() -> list[Any]:
    image = ImagePart.from_bytes(_png(), "image/png").dump()
    return [
        ev.TodosUpdatedEvent(
            todos=[
                ev.TodoItemView(id="1", content="Load data", status="completed"),
                ev.TodoItemView(
                    id="2", content="Plot", status="in_progress", activeForm="Plotting data"
                ),
                ev.TodoItemView(id="3", content="Explain", status="pending"),
            ]
        ),
        ev.TextDeltaEvent(delta="Let me "),
        ev.TextDeltaEvent(delta="**plot** it."),
        ev.TextEvent(content="Let me **plot** it."),
        ev.StepStartEvent(step_id="call_1", title="python", step_number=1),
        ev.ToolCallEvent(tool="python", args={"code": "plt.plot([1,2])"}, tool_call_id="call_1"),
        ev.ToolResultEvent(
            tool="python",
            result="[images] 1 image(s) attached below[image]",
            tool_call_id="call_1",
            parts=[{"type": "text", "text": "[images] 1"}, image],
        ),
        ev.StepCompleteEvent(step_id="call_1", status="completed", duration_ms=1234),
        ev.ToolCallEvent(tool="edit", args={"file_path": "a.py"}, tool_call_id="call_2"),
        ev.ToolResultEvent(
            tool="edit",
            result=json.dumps({"summary": "Edited a.py", "diff": DIFF, "file_path": "a.py"}),
            tool_call_id="call_2",
            data=ToolResultData(summary="Edited a.py", diff=DIFF, file_path="a.py"),
        ),
        ev.StepCompleteEvent(step_id="call_2", status="completed", duration_ms=5),
        ev.UsageEvent(
            model="claude-sonnet-5-5",
            input_tokens=1200,
            output_tokens=300,
            total_input_tokens=2400,
            total_output_tokens=600,
            cost_usd=0.0061,
            total_cost_usd=0.0123,
            context_left_percent=97,
        ),
        ev.TextDeltaEvent(delta="Done: x is now 2."),
        ev.FinalEvent(content="Done: x is now 2."),
    ]


def test_panel_draws_text_cards_image_diff_todos_and_header() -> None:
    panel = RunPanel(model="claude-sonnet-5-5", session_id="0123456789abcdef", prompt="plot it")
    for event in _events():
        panel.handle(event)
    panel.finish("completed")
    html = _html(panel)
    assert "<p>Let me <strong>plot</strong> it.</p>" in html
    assert "<p>Done: x is now 2.</p>" in html
    # Tool cards with name, summary, status and duration.
    cards = [w for w in _walk(panel.widget) if "codelia-tool-card" in w._dom_classes]
    assert len(cards) == 2
    assert "<b>python</b> <code>plt.plot([1,2])</code>" in html
    assert "done · 1.2 s" in html
    # The image part became an Image widget holding the PNG bytes.
    images = [w for w in _walk(panel.widget) if isinstance(w, widgets.Image)]
    assert len(images) == 1
    assert images[0].value == _png()
    assert images[0].format == "png"
    # The edit diff is coloured by pygments (inline styles, one span per line kind).
    assert "codelia-diff" in html
    assert "+x = 2" in html
    assert "-x = 1" in html
    assert "style=" in html.split("codelia-diff", 1)[1]
    # Todos and header.
    assert "☑ Load data" in panel.todos.value
    assert "◐ Plotting data" in panel.todos.value
    assert "☐ Explain" in panel.todos.value
    assert "claude-sonnet-5-5" in panel.header.value
    assert "01234567" in panel.header.value
    assert "this run 1.2k in / 300 out" in panel.header.value
    assert "$0.0061" in panel.header.value
    assert "session 2.4k in / 600 out" in panel.header.value
    assert "97% context left" in panel.header.value
    assert "completed" in panel.header.value
    assert panel.stop_button.disabled
    assert panel.stop_button.layout.display == "none"


def test_tool_results_are_collapsible_and_errors_open() -> None:
    panel = RunPanel(model="m", session_id=None)
    panel.handle(ev.ToolCallEvent(tool="read", args={"file_path": "x"}, tool_call_id="c1"))
    panel.handle(
        ev.ToolResultEvent(tool="read", result="Error: nope", tool_call_id="c1", is_error=True)
    )
    panel.handle(ev.ToolCallEvent(tool="read", args={"file_path": "y"}, tool_call_id="c2"))
    panel.handle(ev.ToolResultEvent(tool="read", result="ok", tool_call_id="c2", output_ref="c2"))
    accordions = [w for w in _walk(panel.widget) if isinstance(w, widgets.Accordion)]
    results = [a for a in accordions if a.get_title(0) in ("Result", "Error")]
    assert [a.get_title(0) for a in results] == ["Error", "Result"]
    assert results[0].selected_index == 0
    assert results[1].selected_index is None
    assert "[output ref: c2]" in _html(panel)
    assert "✖" in _html(panel)


def test_streaming_is_coalesced_by_time_not_tokens() -> None:
    clock = FakeClock()
    panel = RunPanel(model="m", session_id=None, clock=clock)
    updates: list[str] = []
    panel.handle(ev.TextDeltaEvent(delta="a"))
    live = panel.body.children[-1]
    live.observe(lambda change: updates.append(change["new"]), names="value")
    for _ in range(1000):
        panel.handle(ev.TextDeltaEvent(delta="b"))
    assert updates == []  # no time passed: everything is buffered
    assert panel.has_pending
    clock.now += 0.05
    panel.flush_pending()
    assert len(updates) == 1
    assert "a" + "b" * 1000 in updates[0]
    panel.flush_pending()
    assert len(updates) == 1  # nothing new to send


def test_long_answers_are_sealed_into_paragraph_chunks() -> None:
    clock = FakeClock()
    panel = RunPanel(model="m", session_id=None, clock=clock)
    paragraph = "word " * 100 + "\n\n"
    text = ""
    while len(text) < SEAL_CHARS * 3:
        text += paragraph
        panel.handle(ev.TextDeltaEvent(delta=paragraph))
        clock.now += 1
        panel.flush_pending()
    chunks = [w for w in panel.body.children if isinstance(w, widgets.HTML)]
    assert len(chunks) >= 3
    assert all(len(w.value) < SEAL_CHARS * 2 for w in chunks)
    panel.handle(ev.FinalEvent(content=text))
    rendered = "".join(w.value for w in panel.body.children if isinstance(w, widgets.HTML))
    assert rendered.count("<p>") == text.count("\n\n")


def test_code_fences_are_not_split() -> None:
    from jupyter_codelia.notebook.ui.panel import _paragraph_cut

    text = "intro\n\n```python\na = 1\n\nb = 2\n```\nafter"
    cut = _paragraph_cut(text)
    assert cut == len("intro\n\n")


def test_final_that_differs_from_stream_replaces_it() -> None:
    panel = RunPanel(model="m", session_id=None)
    panel.handle(ev.TextDeltaEvent(delta="partial"))
    panel.handle(ev.FinalEvent(content="The whole answer"))
    html = _html(panel)
    assert "partial" not in html
    assert "The whole answer" in html


def test_approval_card_buttons_call_back_with_reason() -> None:
    decisions: list[tuple[str, str, str | None]] = []
    panel = RunPanel(
        model="m",
        session_id=None,
        mode="background",
        on_decision=lambda rid, decision, reason, _content: decisions.append(
            (rid, decision, reason)
        ),
    )
    panel.handle(ev.ToolCallEvent(tool="write", args={"file_path": "a.py"}, tool_call_id="c1"))
    panel.handle(ev.PermissionPreviewEvent(tool="write", tool_call_id="c1", diff=DIFF))
    panel.handle(
        ev.PermissionRequestEvent(
            request_id="p1",
            tool="write",
            tool_call_id="c1",
            title="Run tool?",
            message="write a.py (5 bytes)",
        )
    )
    assert "awaiting approval" in panel.header.value
    card = next(w for w in _walk(panel.widget) if "codelia-approval" in w._dom_classes)
    assert "write a.py (5 bytes)" in _html(panel)
    assert "+x = 2" in card.children[0].value
    reason = next(w for w in _walk(card) if isinstance(w, widgets.Text))
    reason.value = "not that file"
    deny = next(w for w in _walk(card) if isinstance(w, widgets.Button) and w.description == "Deny")
    deny.click()
    assert decisions == [("p1", "deny", "not that file")]
    assert deny.disabled
    panel.handle(
        ev.PermissionResolvedEvent(request_id="p1", decision="deny", reason="not that file")
    )
    assert "Denied: not that file" in _html(panel)
    assert "running" in panel.header.value
    # Answered, the card keeps one line: the diff stays on the tool card alone.
    assert [_text(w) for w in card.children] == [
        "Run tool? write a.py (5 bytes)",
        "Denied: not that file",
    ]
    assert "+x = 2" not in card.children[0].value


def _text(widget: widgets.Widget) -> str:
    import re

    return re.sub(r"<[^>]+>", "", str(getattr(widget, "value", ""))).strip()


def test_an_unanswered_approval_folds_when_the_run_ends() -> None:
    panel = RunPanel(model="m", session_id=None, mode="blocking")
    shell = _approval(panel, "shell", {"command": "rm -rf build\nls"})
    assert "codelia-prompt" in shell
    panel.finish("cancelled")
    card = next(w for w in _walk(panel.widget) if "codelia-approval" in w._dom_classes)
    assert [_text(w) for w in card.children] == [
        "Run tool? shell",
        "Not answered: the run ended (cancelled).",
    ]


def test_blocking_mode_buttons_are_html_naming_the_run_and_the_approval() -> None:
    # The cell holds the kernel's shell: widget clicks would wait for the run to end, so the
    # buttons are HTML the labextension answers over a subshell (cellcontrols.ts).
    panel = RunPanel(model="m", session_id=None, mode="blocking")
    panel.bind_run("run-1")
    panel.handle(
        ev.PermissionRequestEvent(request_id="p1", tool="python", title="Run tool?", message="x")
    )
    assert not [w for w in _walk(panel.widget) if isinstance(w, widgets.Button) and
                w.layout.display != "none"]  # fmt: skip
    html = _html(panel)
    assert 'data-codelia-run="run-1" data-codelia-approval="p1"' in html
    for action in ("allow", "allow_remember", "deny"):
        assert f'data-codelia-action="{action}"' in html
    assert "data-codelia-reason" in html
    # Where the extension is not loaded the buttons stay hidden and the prompt is named.
    assert 'class="codelia-cell-controls" style="display:none"' in html
    assert "Answer in the input box below" in html
    assert 'data-codelia-action="stop"' in panel.hint.value
    assert "kernel interrupt" in panel.hint.value
    panel.handle(ev.PermissionResolvedEvent(request_id="p1", decision="allow"))
    assert "data-codelia-approval" not in _html(panel)  # answered: nothing left to click
    panel.finish("completed")
    assert "data-codelia" not in json.dumps(panel.static_bundle())


def test_stop_button_calls_back() -> None:
    stops: list[bool] = []
    panel = RunPanel(
        model="m", session_id=None, mode="background", on_stop=lambda: stops.append(True)
    )
    panel.stop_button.click()
    assert stops == [True]
    assert panel.stop_button.description == "Stopping…"


def test_errors_are_shown_plainly() -> None:
    panel = RunPanel(model="m", session_id=None)
    panel.show_error("Anthropic API error 401: invalid x-api-key <script>")
    assert "Anthropic API error 401" in panel.error.value
    assert "&lt;script&gt;" in panel.error.value
    assert panel.error.layout.display is None


def test_markdown_escapes_raw_html() -> None:
    html = renderers.markdown_to_html(
        "<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    )
    assert "<script>" not in html
    assert "<table>" in html


def test_the_card_draws_the_results_data_never_its_text() -> None:
    """The diff, Revert and Undo come from the result's typed data, whatever its tool or text."""
    panel = RunPanel(
        model="m",
        session_id=None,
        on_undo=lambda call_id: [f"undid {call_id}"],
        on_revert=lambda edit_id: None,
    )
    text_only = json.dumps({"diff": DIFF, "edit_id": "e1"}) + "\n[namespace]\nadded: x"
    panel.handle(ev.ToolResultEvent(tool="edit", result=text_only, tool_call_id="c1"))
    assert "codelia-diff" not in _html(panel)
    assert not [w for w in _walk(panel.widget) if "codelia-undo" in w._dom_classes]
    data = ToolResultData(
        diff=DIFF,
        edit_id="e1",
        namespace_changes=[NamespaceChange(name="x", change="added")],
        job_id="job-7",
    )
    panel.handle(ev.ToolResultEvent(tool="anything", result="ok", tool_call_id="c2", data=data))
    html = _html(panel)
    assert "codelia-diff" in html and "job-7" in html
    assert [w for w in _walk(panel.widget) if "codelia-undo" in w._dom_classes]
    buttons = [w for w in _walk(panel.widget) if isinstance(w, widgets.Button)]
    assert "Revert" in [b.description for b in buttons]


def test_args_summary_and_formatting() -> None:
    assert renderers.args_summary({"file_path": "/x/y.py", "offset": 3}) == "/x/y.py"
    assert renderers.args_summary({"code": "\nimport os\nprint(1)"}) == ("import os (+1 line)")
    assert renderers.args_summary({"items": [1]}) == "items: 1 item"


@pytest.mark.parametrize(
    ("tool", "args", "summary"),
    [
        (
            "todo_new",
            {"todos": [{"id": "1", "content": "Plot sales", "status": "pending"}, {"id": "2"}]},
            "2 items: Plot sales",
        ),
        (
            "todo_patch",
            {"updates": [{"id": "1", "status": "completed"}, {"id": "2", "remove": True}]},
            "1 → completed, 2 → removed",
        ),
        (
            "notebook_edit",
            {"action": "insert", "cell_id": "total-cell", "source": "mean = 1"},
            "insert a code cell after total-cell",
        ),
        ("notebook_edit", {"action": "delete", "index": 3}, "delete #3"),
        ("notebook_run", {"cell_ids": ["a1", "b2"]}, "cells a1, b2"),
        ("kernel_history", {"last": 5}, "last 5"),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: src/a.py\n@@"}, "src/a.py"),
        ("tool_output_cache", {"ref_id": "t-6", "offset": 10, "limit": 5}, "t-6 lines 11–15"),
        ("tool_output_cache_line", {"ref_id": "r", "line_number": 9}, "r line 9"),
        ("tool_output_cache_grep", {"ref_id": "r", "pattern": "FAILED"}, "FAILED in r"),
        ("grep", {"pattern": "TODO", "path": "src"}, "TODO in src"),
        ("mcp__x", {"a": 1, "b": "x  y", "c": {}, "e": [1]}, "a: 1, b: x y, c: {…}, e: 1 item"),
    ],
)  # fmt: skip
def test_card_headers_summarise_calls_in_words_never_as_json(
    tool: str, args: dict[str, Any], summary: str
) -> None:
    assert renderers.args_summary(args) == summary
    assert "{" not in summary.replace("{…}", "")


def test_formatting() -> None:
    assert renderers.format_cost(None) == "cost unknown"
    assert renderers.format_tokens(1_500_000) == "1.50M"
    assert renderers.format_time("2026-03-01T14:05:33.123Z") == "2026-03-01 14:05 UTC"
    assert renderers.format_time("not a time") == "not a time"


def test_tables_stay_left_aligned_unwrapped_and_readable_as_text() -> None:
    """Lab right-aligns table cells: titles, ids and times lost their shape."""
    columns = (
        renderers.Column("session", code=True, keep=True),
        renderers.Column("title"),
    )
    long_title = "Load data/revenue.csv and explain the dip"
    bundle = renderers.table_bundle(
        columns, [("0f9e-uuid", long_title), ("1", "x")], after="Resume with <code>X</code>."
    )
    html = bundle["text/html"]
    assert html.count("text-align:left") == 6  # 2 headers + 4 cells
    assert 'white-space:nowrap"><code>0f9e-uuid</code>' in html
    assert bundle["text/plain"].splitlines() == [
        "session    title",
        f"0f9e-uuid  {long_title}",
        "1          x",
        "Resume with X.",
    ]


def test_one_endless_paragraph_is_still_chunked() -> None:
    clock = FakeClock()
    panel = RunPanel(model="m", session_id=None, clock=clock)
    sizes: list[int] = []
    for _ in range(8000):
        panel.handle(ev.TextDeltaEvent(delta="word "))
        clock.now += 0.05
        panel.flush_pending()
        sizes.append(max(len(w.value) for w in panel.body.children))
    assert max(sizes) < SEAL_CHARS * 6
    chunks = [w for w in panel.body.children if isinstance(w, widgets.HTML)]
    assert len(chunks) >= 2


def _approval(panel: RunPanel, tool: str, args: dict[str, Any]) -> str:
    panel.handle(ev.ToolCallEvent(tool=tool, args=args, tool_call_id=f"c-{tool}"))
    panel.handle(
        ev.PermissionRequestEvent(
            request_id=f"p-{tool}",
            tool=tool,
            tool_call_id=f"c-{tool}",
            title="Run tool?",
            message=tool,
            args=args,
        )
    )
    card = next(
        w for w in reversed(list(_walk(panel.widget))) if "codelia-approval" in w._dom_classes
    )
    return str(card.children[0].value)


def test_approval_and_tool_cards_show_code_command_diff_and_url_readably() -> None:
    panel = RunPanel(model="m", session_id=None, mode="background")
    code = 'import pandas as pd\nprint("hi")\n'
    python = _approval(panel, "python", {"code": code})
    assert "codelia-code" in python
    assert '<span style="color: #008000; font-weight: bold">import</span>' in python  # coloured
    assert "\\n" not in python  # real lines, not a JSON string with escapes
    assert '<span style="color: #BA2121">"hi"</span>' in python
    shell = _approval(panel, "shell", {"command": "rm -rf build && ls", "timeout": 30})
    assert "codelia-prompt" in shell and ">$ </span>" in shell
    assert "build" in shell and "&amp;&amp;" in shell and "<b>timeout</b>: 30" in shell
    edit = _approval(
        panel, "edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    )
    assert "file <code>a.py</code>" in edit and "codelia-diff" in edit
    assert "-x = 1" in edit and "+x = 2" in edit
    fetch = _approval(panel, "webfetch", {"url": "https://example.org/a?b=1&c=2"})
    assert "url <code>https://example.org/a?b=1&amp;c=2</code>" in fetch
    # The tool card's arguments use the same rendering.
    args_views = [w for w in _walk(panel.widget) if isinstance(w, widgets.Accordion)]
    assert "codelia-code" in args_views[0].children[0].value
    assert "<script>" not in renderers.args_html({"code": "<script>x</script>"})


def test_text_of_a_failed_model_call_disappears_before_the_retry() -> None:
    clock = FakeClock()
    panel = RunPanel(model="m", session_id=None, clock=clock)
    panel.handle(ev.TextDeltaEvent(delta="Half of an answer " * 200))  # long: sealed chunks too
    panel.flush_pending(force=True)
    assert "Half of an answer" in _html(panel)
    panel.handle(ev.TextDiscardedEvent())
    panel.handle(
        ev.LlmRetryEvent(
            provider="anthropic",
            failure_kind="overloaded",
            next_attempt=2,
            max_attempts=3,
            delay_ms=10,
            delay_source="backoff",
        )
    )
    assert "Half of an answer" not in _html(panel)
    panel.handle(ev.TextDeltaEvent(delta="The whole answer."))
    panel.handle(ev.FinalEvent(content="The whole answer."))
    html = _html(panel)
    assert "Half of an answer" not in html
    assert html.count("The whole answer.") == 1


def test_citations_are_numbered_links_under_the_answer() -> None:
    panel = RunPanel(model="m", session_id=None)
    panel.handle(
        ev.FinalEvent(
            content="pandas 3.1.0 is out.",
            citations=[
                ev.Citation(
                    title="Release notes", url="https://pandas.example/3.1", cited_text="3.1"
                ),
                ev.Citation(title="A <b>PDF</b> page"),
                ev.Citation(title="Sneaky", url="javascript:alert(1)"),
            ],
        )
    )
    html = _html(panel)
    assert (
        '[1] <a href="https://pandas.example/3.1" target="_blank" rel="noopener noreferrer" '
        'title="3.1">Release notes</a>'
    ) in html
    assert "[2] <span>A &lt;b&gt;PDF&lt;/b&gt; page</span>" in html
    assert "[3] <span>Sneaky</span>" in html
    assert "javascript:" not in html
    assert html.index("pandas 3.1.0 is out.") < html.index("[1]")


def test_the_comm_never_receives_void_text_that_was_still_buffered() -> None:
    from jupyter_codelia.notebook.run._sink import LiveRun, RunSink
    from jupyter_codelia.tools import CancelSignal

    class Owner:
        def __init__(self) -> None:
            self.sent: list[dict[str, Any]] = []
            self.listeners = [self.sent.append]

        def broadcast(self, envelope: dict[str, Any]) -> None:
            self.sent.append(envelope)

    owner = Owner()
    run = LiveRun("r1", "s1", "q", "magic", CancelSignal(), "blocking")
    sink = RunSink(owner, run, None, interval=3600)
    sink.event(ev.TextDeltaEvent(delta="first "))  # sent at once: nothing sent before
    sink.event(ev.TextDeltaEvent(delta="void, still buffered"))
    sink.event(ev.TextDiscardedEvent())
    sink.event(ev.FinalEvent(content="The whole answer."))
    events = [e["event"] for e in owner.sent if e["type"] == "agent.event"]
    assert [e["type"] for e in events] == ["text_delta", "text_discarded", "final"]
    assert events[0]["delta"] == "first "


def test_a_forked_session_is_announced() -> None:
    panel = RunPanel(model="m", session_id="s-1")
    panel.handle(ev.SessionForkedEvent(session_id="s-2", forked_from="s-1"))
    assert (
        "Another kernel saved session s-1 while this one had it open: this conversation "
        "continues as session s-2, so neither kernel&#x27;s turns are lost." in _html(panel)
    )


def test_an_mcp_calls_progress_and_log_lines_show_on_its_running_card() -> None:
    panel = RunPanel(model="claude-sonnet-5-5", session_id="0123456789abcdef", prompt="go")
    panel.handle(ev.ToolCallEvent(tool="ev__slow", args={}, tool_call_id="c1"))
    panel.handle(ev.ToolProgressEvent(tool_call_id="c1", progress=2, total=5, message="step 2"))
    assert "running · 2/5 step 2" in _html(panel)
    panel.handle(ev.ToolProgressEvent(tool_call_id="c1", message="indexing", level="info"))
    assert "running · [info] indexing" in _html(panel)


def test_a_question_an_mcp_server_asks_shows_its_link_and_form() -> None:
    decisions: list[tuple[Any, ...]] = []
    panel = RunPanel(
        model="claude-sonnet-5-5",
        session_id="0123456789abcdef",
        prompt="go",
        mode="background",
        on_decision=lambda *answer: decisions.append(answer),
    )
    panel.handle(
        ev.PermissionRequestEvent(
            request_id="q1",
            tool="MCP server 'ev'",
            title="MCP server 'ev' asks",
            message="Who are you?",
            kind="elicitation",
            fields={"type": "object", "properties": {"name": {"type": "string"}}},
        )
    )
    html = _html(panel)
    assert "Who are you?" in html
    inputs = [w for w in _walk(panel.widget) if isinstance(w, widgets.Text) and w.description]
    assert [w.description for w in inputs] == ["name"]
    inputs[0].value = "Ada"
    accept = next(
        w
        for w in _walk(panel.widget)
        if isinstance(w, widgets.Button) and w.description == "Accept"
    )
    accept.click()
    assert decisions == [("q1", "allow", None, {"name": "Ada"})]
