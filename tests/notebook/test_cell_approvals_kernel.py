"""Approvals and Stop of a blocking ``%%codelia`` cell in a real ipykernel, the person's way.

The cell holds the main shell; the side panel and the cell panel's own buttons reach the kernel
through ``bridge.control()`` on a subshell (what the labextension sends, see cellcontrols.ts).
The buttons' HTML names the run and the approval: the tests read the ids from it, as the front
end does.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from jupyter_codelia.notebook.run.runner import NOBODY_ANSWERS
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

from .test_notebook_bridge import _control_on_subshell, _subshell, run_approved_elsewhere

CONTROLS = re.compile(r'data-codelia-run="([^"]+)" data-codelia-approval="([^"]+)"')
STOP = re.compile(r'data-codelia-run="([^"]+)"><button[^>]*data-codelia-action="stop"')


def _gated(first: Any, *rest: Any) -> tuple[Any, threading.Event, threading.Event]:
    """A script whose first model call waits for ``go``; ``asked`` is set when it arrives."""
    asked, go = threading.Event(), threading.Event()
    turns = [first, *rest]
    calls: list[int] = []

    def script(_request: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            asked.set()
            go.wait(60)
        return turns[min(len(calls), len(turns)) - 1]

    return script, asked, go


def _results(server: ScriptedAnthropicServer) -> list[str]:
    return [result["text"] for result in server.requests[-1].tool_results()]


def test_an_approval_is_asked_although_a_subshell_request_without_stdin_came_mid_run(
    start_kernel: Any, tmp_path: Path
) -> None:
    # The side panel's own requests (allow_stdin: false) arrive while the cell runs; ipykernel
    # keeps that flag kernel-wide. The cell's approval must still be asked, not denied.
    script, asked, go = _gated(
        reply(tool_use("python", {"code": "approved_value = 42"})), reply(text("set"))
    )
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        subshell = _subshell(kernel)
        prompts: list[str] = []

        def side_panel_reads_state_then_model_answers(k: Any) -> None:
            if asked.is_set() and not go.is_set():
                state = {"type": "state.get", "request_id": "s1"}
                _control_on_subshell(k, subshell, state, tmp_path / "state.json")
                go.set()

        def answer(request: dict[str, Any]) -> str:
            prompts.append(request["content"]["prompt"])
            return "y"

        run = kernel.execute(
            "%%codelia\nset a value",
            allow_stdin=True,
            on_input=answer,
            during=side_panel_reads_state_then_model_answers,
        )
        assert run.status == "ok", run.reply["content"]
        assert go.is_set() and len(prompts) == 1
        assert not _results(server)[0].startswith("Permission denied"), _results(server)
        assert kernel.execute("print(approved_value)").stream_text().strip() == "42"


def test_the_cell_panels_allow_button_answers_and_the_prompt_is_left_cleanly(
    start_kernel: Any, tmp_path: Path
) -> None:
    script = [reply(tool_use("python", {"code": "button_value = 5"})), reply(text("done"))]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        subshell = _subshell(kernel)
        answered: list[dict[str, Any]] = []

        def click_allow(k: Any, prompts: list[str]) -> None:
            found = CONTROLS.search(k.html_text())
            if not prompts or found is None or answered:
                return
            run_id, approval_id = found.groups()
            click = {
                "type": "cell.control",
                "request_id": "c1",
                "run_id": run_id,
                "action": "allow",
                "permission_request_id": approval_id,
            }
            answered.append(_control_on_subshell(k, subshell, click, tmp_path / "allow.json"))
            # A second click (another page, the side panel) is refused: one answer only.
            again = {**click, "request_id": "c2"}
            answered.append(_control_on_subshell(k, subshell, again, tmp_path / "again.json"))

        # Left without an exception pushed into the cell: no error, no traceback on stderr.
        run, _prompts = run_approved_elsewhere(kernel, click_allow)
        assert answered[0] == {"type": "response", "request_id": "c1", "ok": True, "result": {}}
        assert answered[1]["ok"] is False
        assert "no longer open" in answered[1]["error"]
        stderr = [m["content"]["text"] for m in run.messages
                  if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]  # fmt: skip
        assert not [t for t in stderr if "Traceback" in t], stderr
        assert kernel.execute("print(button_value, _.status)").stream_text().strip() == (
            "5 completed"
        )
        # The prompt abandoned above is answered late: that answer is not taken for the next.
        kernel.kc.input("n")
        later = kernel.execute("print('still fine')")
        assert later.stream_text().strip() == "still fine"


def test_the_cell_panels_stop_button_stops_a_blocking_run(
    start_kernel: Any, tmp_path: Path
) -> None:
    slow = reply(text("chunk " * 6000), delay_s=0.02)  # minutes long: stopped well before
    with ScriptedAnthropicServer([slow]) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        subshell = _subshell(kernel)
        responses: list[dict[str, Any]] = []

        def click_stop(k: Any) -> None:
            html = k.html_text()
            found = STOP.search(html)
            if responses or found is None or "chunk chunk" not in html:
                return
            stale = {"type": "cell.control", "request_id": "x", "run_id": "old", "action": "stop"}
            responses.append(_control_on_subshell(k, subshell, stale, tmp_path / "stale.json"))
            stop = {**stale, "request_id": "s1", "run_id": found.group(1)}
            responses.append(_control_on_subshell(k, subshell, stop, tmp_path / "stop.json"))

        run = kernel.execute("%%codelia\nwrite a lot", during=click_stop)
        assert run.status == "ok"
        assert responses[0]["error"] == "cell.control: this run has already ended"
        assert responses[1] == {"type": "response", "request_id": "s1", "ok": True, "result": {}}
        assert kernel.execute("print(_.status)").stream_text().strip() == "cancelled"
        kernel.drain()
        assert 'data-codelia-action="stop"' not in kernel.html_text().splitlines()[-1]


def test_without_stdin_the_buttons_answer_where_the_extension_is_connected(
    start_kernel: Any, tmp_path: Path
) -> None:
    script = [reply(tool_use("python", {"code": "x = 1"})), reply(text("understood"))]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        # A notebook tab with the labextension announces itself (notebookcomm.ts).
        kernel.execute(
            "__import__('jupyter_codelia.notebook.frontend', fromlist=['x']).tab_opened()"
        )
        subshell = _subshell(kernel)
        answered: list[dict[str, Any]] = []

        def deny(k: Any) -> None:
            found = CONTROLS.search(k.html_text())
            if found is None or answered:
                return
            click = {
                "type": "cell.control",
                "request_id": "d1",
                "run_id": found.group(1),
                "action": "deny",
                "permission_request_id": found.group(2),
                "reason": "not today",
            }
            answered.append(_control_on_subshell(k, subshell, click, tmp_path / "deny.json"))

        run = kernel.execute("%%codelia\nset x", allow_stdin=False, during=deny)
        assert run.status == "ok"
        assert _results(server) == ["Permission denied: not today"]
        assert kernel.execute("print('x' in globals())").stream_text().strip() == "False"


def test_headless_without_any_front_end_denies_with_the_reason(start_kernel: Any) -> None:
    script = [reply(tool_use("python", {"code": "x = 1"})), reply(text("understood"))]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia\nset x", allow_stdin=False)
        assert run.status == "ok"
        assert _results(server) == [f"Permission denied: {NOBODY_ANSWERS}"]


def test_bad_cell_control_requests_get_clear_errors(start_kernel: Any, tmp_path: Path) -> None:
    with ScriptedAnthropicServer([]) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        subshell = _subshell(kernel)
        bad = {"type": "cell.control", "request_id": "b", "run_id": "r", "action": "maybe"}
        answer = _control_on_subshell(kernel, subshell, bad, tmp_path / "bad.json")
        assert answer["ok"] is False and answer["error"] == (
            "cell.control: action must be one of allow, allow_remember, deny, stop"
        )
        missing = {**bad, "action": "allow"}
        answer = _control_on_subshell(kernel, subshell, missing, tmp_path / "missing.json")
        assert answer["error"] == "cell.control: missing field 'permission_request_id'"
