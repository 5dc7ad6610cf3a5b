"""%%codelia in a real kernel against the scripted Anthropic server: panel, approvals, stop."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jupyter_codelia.notebook.run.runner import NOBODY_ANSWERS
from jupyter_codelia.testing import (
    ScriptedAnthropicServer,
    ScriptedServer,
    recorded,
    reply,
    text,
    tool_use,
)

from .conftest import scripted

PLOT = (
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(3, 2))\n"
    "ax.plot([1, 2, 3], [3, 1, 2])\n"
    "answer = 6 * 7\n"
    "print('plotted')\n"
)


def _tool_results(server: ScriptedServer) -> list[str]:
    """The tool result texts the model received, in order."""
    return [result["text"] for result in server.requests[-1].tool_results()]


def test_codelia_cell_shows_text_tool_card_image_and_diff(
    start_kernel: Any, workspace: Path
) -> None:
    script = [
        reply(text("Let me **plot** it."), tool_use("python", {"code": PLOT})),
        reply(
            tool_use("edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
        ),
        reply(text("All **done**: x is 2.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
        run = kernel.execute("%%codelia --approval-mode full-access\nplot it and set x to 2")
        assert run.status == "ok", run.reply["content"]
        kernel.drain()
        html = kernel.html_text()
        # Streaming markdown rendered to HTML.
        assert "<p>Let me <strong>plot</strong> it.</p>" in html
        assert "<p>All <strong>done</strong>: x is 2.</p>" in html
        # Tool cards with name and status.
        assert "<b>python</b>" in html
        assert "<b>edit</b>" in html
        assert "done ·" in html
        # The matplotlib figure came back as an image part and is shown as an Image widget.
        images = kernel.widgets_of("ImageModel")
        assert len(images) == 1
        (image_id,) = images
        assert kernel.widget_buffers[image_id][0][:8] == b"\x89PNG\r\n\x1a\n"
        # The edit's diff is coloured.
        assert "codelia-diff" in html
        assert "+x = 2" in html
        assert (workspace / "a.py").read_text() == "x = 2\ny = 3\n"
        # The model saw the plot as an image and the code's output.
        second = server.requests[1]
        blocks = [
            b
            for m in second.messages
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        inner = blocks[0]["content"]
        assert any(part.get("type") == "image" for part in inner)
        assert "plotted" in json.dumps(inner)
        # The cell's value is the result object; the panel is all the cell shows (no raw
        # RunResult(...) Out line), and the value shown elsewhere is one readable line.
        assert run.result_text() == ""
        check = kernel.execute(
            "from jupyter_codelia.notebook import notebook_agent\n"
            "r = _\nprint(r.status, r.final_text, answer, r.session_id == "
            "notebook_agent(get_ipython()).agent.session_id)"
        )
        assert check.stream_text().strip() == "completed All **done**: x is 2. 42 True"
        (shown,) = [
            m["content"]["data"]["text/plain"]
            for m in kernel.execute("r").messages
            if m["msg_type"] == "display_data"
        ]
        assert shown.startswith("codelia run completed · ") and "the answer is .final_text" in shown


def test_blocking_approval_answered_on_stdin(start_kernel: Any, provider: str) -> None:
    script = [
        reply(tool_use("python", {"code": "approved_value = 123"})),
        reply(tool_use("python", {"code": "denied_value = 1"})),
        reply(text("ok")),
    ]
    with scripted(provider, script) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        prompts: list[str] = []
        answers = iter(["y", "not now please"])

        def answer(request: dict[str, Any]) -> str:
            prompts.append(request["content"]["prompt"])
            return next(answers)

        run = kernel.execute(
            "%%codelia\nset two values", allow_stdin=True, on_input=answer, timeout=120
        )
        assert run.status == "ok", run.reply["content"]
        assert len(prompts) == 2
        assert "Allow? [y]es / [a]lways / [n]o" in prompts[0]
        assert "python" in prompts[0]
        check = kernel.execute("print(approved_value, 'denied_value' in globals())")
        assert check.stream_text().strip() == "123 False"
        results = _tool_results(server)
        assert results[1] == "Permission denied: not now please"
        kernel.drain()
        html = kernel.html_text()
        assert "Allowed" in html
        assert "Denied: not now please" in html


def test_headless_blocking_run_denies_approvals(start_kernel: Any, provider: str) -> None:
    script = [reply(tool_use("python", {"code": "x = 1"})), reply(text("understood"))]
    with scripted(provider, script) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia\nset x", allow_stdin=False)
        assert run.status == "ok"
        (result,) = _tool_results(server)
        assert result == f"Permission denied: {NOBODY_ANSWERS}"
        assert kernel.execute("print(_.status)").stream_text().strip() == "completed"


def test_kernel_interrupt_cancels_a_blocking_run_cleanly(
    start_kernel: Any, codelia_home: Path, provider: str
) -> None:
    slow = reply(text("word " * 400), delay_s=0.02)
    with scripted(provider, [slow, reply(text("second turn fine"))]) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        interrupted: list[bool] = []

        def interrupt_once_streaming(k: Any) -> None:
            if not interrupted and "word word" in k.html_text():
                k.km.interrupt_kernel()
                interrupted.append(True)

        run = kernel.execute("%%codelia\nwrite a lot", during=interrupt_once_streaming)
        assert interrupted
        assert run.status == "error"
        content = run.reply["content"]
        assert content["ename"] == "RunInterrupted"
        # One clear line: what was stopped and what was saved, no frames through our code.
        (line,) = content["traceback"]
        assert line.startswith("RunInterrupted: codelia run stopped by the kernel interrupt: ")
        assert "history repaired and session" in line and "saved" in line
        kernel.drain()
        headers = [s.get("value", "") for s in kernel.widgets_of("HTMLModel").values()]
        assert any("cancelled" in h and "codelia-header" in h for h in headers)
        # The session was saved and the agent keeps working afterwards.
        assert list((codelia_home).rglob("*.jsonl"))
        again = kernel.execute("%%codelia\ncontinue")
        assert again.status == "ok"
        assert "second turn fine" in kernel.execute("print(_.final_text)").stream_text()
        history = kernel.execute(
            "from jupyter_codelia.notebook import notebook_agent\n"
            "h = notebook_agent(get_ipython()).agent.history\n"
            "print([m.role for m in h if m.role != 'system'])"
        )
        # The interrupted turn left no dangling tool call or empty assistant message behind.
        assert history.stream_text().strip().endswith("'user', 'assistant']")


def test_background_run_approval_by_button_and_handle(start_kernel: Any, provider: str) -> None:
    script = [
        reply(tool_use("python", {"code": "clicked_value = 7"})),
        reply(text("finished in the background")),
    ]
    with scripted(provider, script) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        started = kernel.execute("%%codelia --background\nset a value")
        assert started.status == "ok"
        # A saved handle says nothing that goes stale ("running" forever).
        shown = started.result_text()
        assert shown.startswith("codelia background run ") and "running" not in shown
        kernel.execute("handle = _")
        kernel.wait_for(lambda k: k.button("Allow") is not None)
        allow = kernel.button("Allow")
        assert allow is not None
        kernel.click(allow)
        done = kernel.execute("result = await handle\nprint(result.status, clicked_value)")
        assert done.stream_text().strip() == "completed 7"
        kernel.drain()
        assert "finished in the background" in kernel.html_text()
        assert server.remaining == 0


def test_stop_button_cancels_a_background_run(start_kernel: Any, provider: str) -> None:
    slow = reply(text("token " * 2000), delay_s=0.02)
    with scripted(provider, [slow]) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute("%%codelia --background\nwrite forever")
        kernel.execute("handle = _")
        kernel.wait_for(lambda k: "token token" in k.html_text())
        stop = kernel.button("Stop")
        assert stop is not None
        kernel.click(stop)
        done = kernel.execute("result = await handle\nprint(result.status)")
        assert done.stream_text().strip() == "cancelled"
        again = kernel.execute("print(handle.result().status, handle.done())")
        assert again.stream_text().strip() == "cancelled True"
        assert kernel.execute("print(repr(handle))").stream_text().strip().endswith(" cancelled>")
        kernel.drain()
        headers = [h for h in kernel.html_text().splitlines() if "codelia-header" in h]
        assert "cancelled" in headers[-1]


def test_missing_api_key_gives_instructions_not_a_traceback(start_kernel: Any) -> None:
    kernel = start_kernel(None, api_key=None)
    kernel.execute("%load_ext jupyter_codelia")
    run = kernel.execute("%codelia hello there")
    assert run.status == "error"
    content = run.reply["content"]
    assert content["ename"] == "UsageError"
    assert "ANTHROPIC_API_KEY" in content["evalue"]
    assert "%codelia --demo" in content["evalue"]
    assert "Traceback" not in "".join(content["traceback"])
    # The offline demo needs no key and is labelled as not being Claude.
    demo = kernel.execute("%codelia --demo --approval-mode full-access")
    assert demo.status == "ok", demo.reply["content"]
    assert kernel.execute("print(_.status)").stream_text().strip() == "completed"
    kernel.drain()
    assert "OFFLINE DEMO" in json.dumps([m["content"] for m in demo.messages])
    assert kernel.widgets_of("ImageModel")
    assert "codelia-diff" in kernel.html_text()
    sales = kernel.execute("print(sorted(demo_sales))").stream_text().strip()
    assert sales == "['Apr', 'Feb', 'Jan', 'Mar']"
    # The extension unloads cleanly: the magic and the comm target are gone.
    assert kernel.execute("%unload_ext jupyter_codelia").status == "ok"
    targets = kernel.execute(
        "from comm import get_comm_manager\nprint('codelia' in get_comm_manager().targets)"
    )
    assert targets.stream_text().strip() == "False"
    gone = kernel.execute("%codelia hi")
    assert "Line magic function `%codelia` not found" in gone.stream_text() + json.dumps(
        gone.reply["content"]
    )


def test_bad_options_and_config_errors_are_clear(start_kernel: Any) -> None:
    kernel = start_kernel("http://127.0.0.1:9")
    kernel.execute("%load_ext jupyter_codelia")
    run = kernel.execute("%codelia --modle x hi")
    assert run.reply["content"]["evalue"].startswith("Unknown option --modle. Known options:")
    run = kernel.execute("%codelia --approval-mode yolo hi")
    assert run.reply["content"]["evalue"] == (
        "--approval-mode must be one of minimal, trusted, full-access, got 'yolo'."
    )
    run = kernel.execute("%codelia --resume")
    assert "--resume needs a value" in run.reply["content"]["evalue"]
    run = kernel.execute("%codelia")
    assert "Give a prompt" in run.reply["content"]["evalue"]
    usage = kernel.execute("%codelia help").stream_text()
    assert "--background" in usage
    assert "%codelia sessions" in usage
    # traitlets refuses a bad %config value (IPython logs the reason); the default stays.
    kernel.execute("%config Codelia.approval_mode = 'yolo'")
    ok = kernel.execute("%config Codelia.model = 'claude-haiku-5-5'\n%codelia config")
    out = ok.stream_text()
    assert "claude-haiku-5-5" in out
    assert re.search(r"^approval_mode +'minimal' +default$", out, re.M)
    assert "%config Codelia.model" in out
    assert "api key" in out
    assert "test-key" not in out


def test_an_unknown_model_is_caught_before_the_run(start_kernel: Any) -> None:
    with ScriptedAnthropicServer([reply("never sent")]) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia --model nonsense\nsummarise the data")
        evalue = run.reply["content"]["evalue"]
        assert evalue.startswith("--model: unknown model 'nonsense'. Known models: ")
        assert "claude-sonnet-5-5" in evalue
        assert "Traceback" not in run.stream_text()
        kernel.execute("%config Codelia.model = 'nonsense-too'")
        configured = kernel.execute("%%codelia\nsummarise the data")
        assert "unknown model 'nonsense-too'. Known models: " in configured.stream_text() + (
            json.dumps(configured.reply["content"])
        )
        assert server.requests == []


def test_a_reply_with_server_tool_and_unknown_blocks_prints_no_warning(
    start_kernel: Any, recordings: Path
) -> None:
    script = [recorded(recordings / "code_execution_and_future_block.http")]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia\nsum 0..9")
        kernel.drain()
        assert run.status == "ok"
        shown = run.stream_text() + json.dumps(kernel.widgets_of("HTMLModel"))
        assert "The sum is 45." in shown
        for noise in ("Warning", "PydanticSerialization", "[other:", "ledger_entry"):
            assert noise not in shown, noise


def test_subcommands_list_sessions_todos_and_cache(start_kernel: Any) -> None:
    todos = [{"id": "1", "content": "Check data", "status": "in_progress"}]
    script = [
        reply(tool_use("todo_new", {"todos": todos})),
        reply(tool_use("read", {"file_path": "a.py"})),
        reply(text("read it")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        assert kernel.execute("%%codelia\nplan and read").status == "ok"
        kernel.drain()
        todo_widgets = [
            w["value"]
            for w in kernel.widgets_of("HTMLModel").values()
            if "codelia-todos" in w.get("value", "")
        ]
        assert todo_widgets
        assert "◐ Check data" in todo_widgets[0]
        sessions = kernel.execute("%codelia sessions")
        data = json.dumps([m["content"] for m in sessions.messages])
        assert "plan and read" in data
        todos_run = kernel.execute("%codelia todos")
        assert "◐ Check data" in json.dumps(
            [m["content"] for m in todos_run.messages], ensure_ascii=False
        )
        browser = kernel.execute("browser = get_ipython().run_line_magic('codelia', 'cache')")
        assert browser.status == "ok"
        listing = kernel.execute(
            "print([o[0].split()[2] for o in browser.entry_list.options])\n"
            "browser.entry_list.value = [o[1] for o in browser.entry_list.options "
            "if 'read' in o[0]][0]\n"
            "print('x = 1' in browser.output.value)\n"
            "browser.pattern.value = 'y'; browser.grep()\n"
            "print('y = 3' in browser.output.value)\n"
            "browser.line_number.value = 2; browser.char_offset.value = 2; browser.line_window()\n"
            "print(browser.output.value.count('= 3') > 0)\n"
            # Entries record the kernel and session that wrote them; the list says whose.
            "print(all(o[0].endswith('(this session)') for o in browser.entry_list.options))\n"
            "print(bool(browser.store.list_entries()[0].kernel_id))\n"
        )
        lines = listing.stream_text().splitlines()
        assert "read" in lines[0]
        assert lines[1:] == ["True", "True", "True", "True", "True"]
        missing = kernel.execute("%codelia cache nope")
        assert "No cached output 'nope'" in missing.reply["content"]["evalue"]


def test_python_tool_in_a_real_kernel_captures_displays_and_rich_results(
    start_kernel: Any,
) -> None:
    kernel = start_kernel(None)
    code = (
        "import pandas as pd\n"
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3])\n"
        "plt.show()\n"
        "print('shown')\n"
        "frame = pd.DataFrame({'alpha': [1, 2], 'beta': [3.5, None]})\n"
        "frame"
    )
    arguments = json.dumps({"code": code})
    run = kernel.execute(
        "from jupyter_codelia.notebook.kernel_tools.namespace import kernel_tools\n"
        "from jupyter_codelia.tools import ToolContext\n"
        "tools = {t.name: t for t in kernel_tools(shell=get_ipython())}\n"
        f"r = await tools['python'].execute_raw({arguments!r}, ToolContext())\n"
        "print(r.type, [p.type for p in r.parts])\n"
        "print(r.parts[0].text)\n"
        "v = await tools['inspect_variable'].execute_raw('{\"name\": \"frame\"}', ToolContext())\n"
        "print(v.text)\n"
    )
    assert run.status == "ok", run.reply["content"]
    out = run.stream_text()
    assert out.splitlines()[0] == "parts ['text', 'image_url']"
    assert "[stdout]\nshown" in out
    assert "[result]\n   alpha  beta" in out
    assert "type: pandas.DataFrame" in out
    assert "beta: float64" in out
    # The figure went to the model, not into the cell's output.
    assert not [m for m in run.messages if m["msg_type"] == "display_data"]


def test_new_and_resumed_sessions(start_kernel: Any, provider: str) -> None:
    script = [reply(text("first answer")), reply(text("fresh")), reply(text("resumed"))]
    with scripted(provider, script) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute("%%codelia\nremember the word pineapple")
        first = kernel.execute("print(_.session_id)").stream_text().strip()
        kernel.execute("%%codelia --new\nhello")
        second = kernel.execute("print(_.session_id)").stream_text().strip()
        assert second != first
        assert len(server.requests[1].conversation) == 1  # a new session starts empty
        kernel.execute(f"%%codelia --resume {first}\nwhat was the word?")
        resumed = kernel.execute("print(_.session_id)").stream_text().strip()
        assert resumed == first
        sent = json.dumps(server.requests[2].messages)
        assert "pineapple" in sent
        missing = kernel.execute("%codelia --resume no-such-session hi")
        assert missing.reply["content"]["ename"] == "UsageError"
        assert missing.reply["content"]["evalue"] == (
            "session not found: no-such-session. List saved sessions with %codelia sessions."
        )
        stop = kernel.execute("%codelia stop")
        assert stop.stream_text().strip() == "No codelia run is active."


def test_a_failed_model_call_is_shown_plainly_and_fails_the_cell(
    start_kernel: Any, provider: str
) -> None:
    from jupyter_codelia.testing import fault

    bad_key = fault.status(401, "authentication_error", "invalid x-api-key")
    with scripted(provider, [bad_key]) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia\nhello")
        content = run.reply["content"]
        assert content["ename"] == "UsageError"
        assert content["evalue"].startswith("codelia run failed: ")
        assert "invalid x-api-key" in content["evalue"]
        kernel.drain()
        errors = [
            s["value"]
            for s in kernel.widgets_of("HTMLModel").values()
            if "<b>Error:</b>" in s.get("value", "")
        ]
        assert len(errors) == 1
        assert "invalid x-api-key" in errors[0]
        last = kernel.execute(
            "from jupyter_codelia.notebook import notebook_agent\n"
            "print(notebook_agent(get_ipython()).last_result.status)"
        )
        assert last.stream_text().strip() == "error"


def test_interrupt_at_the_approval_prompt_cancels_the_run(start_kernel: Any, provider: str) -> None:
    script = [reply(tool_use("python", {"code": "never_set = 1"})), reply(text("next turn"))]
    with scripted(provider, script) as server:
        kernel = start_kernel(server.url, provider=provider)
        kernel.execute("%load_ext jupyter_codelia")

        def interrupt(_request: dict[str, Any]) -> None:
            kernel.km.interrupt_kernel()
            return None

        run = kernel.execute("%%codelia\nset it", allow_stdin=True, on_input=interrupt)
        assert run.reply["content"]["ename"] == "RunInterrupted"
        assert len(run.reply["content"]["traceback"]) == 1
        kernel.drain()
        # The approval card and the python card show the ending, not "running".
        html = kernel.html_text()
        assert "Not answered: the run ended (cancelled)." in html
        assert "<b>python</b>" in html and " · cancelled</span>" in html
        assert "⏳" not in html  # no card is left "running"
        check = kernel.execute("print('never_set' in globals())")
        assert check.stream_text().strip() == "False"
        assert kernel.execute("%%codelia\ngo on").status == "ok"
        assert "next turn" in kernel.execute("print(_.final_text)").stream_text()
        # No dangling call reached the model: every call has its result.
        last = server.requests[-1]
        assert {c["id"] for c in last.tool_calls()} == {r["id"] for r in last.tool_results()}
