"""The ``codelia`` comm bridge driven like the side panel: comm_open on the shell channel."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_codelia.session import STORE_ID_FILE, SessionStore
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use


class FrontEnd:
    """Opens a codelia comm and speaks the protocol of docs/comm-protocol.md."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.comm_id = uuid.uuid4().hex
        self.received: list[dict[str, Any]] = []
        msg = kernel.kc.session.msg(
            "comm_open",
            {
                "comm_id": self.comm_id,
                "target_name": "codelia",
                "data": {"client": "jupyterlab-sidepanel"},
            },
        )
        kernel.kc.shell_channel.send(msg)

    def poll(self, timeout: float = 0.05) -> None:
        start = len(self.kernel.iopub)
        self.kernel.drain(timeout)
        for msg in self.kernel.iopub[start:]:
            content = msg["content"]
            if msg["msg_type"] == "comm_msg" and content.get("comm_id") == self.comm_id:
                self.received.append(content["data"])

    def wait(self, predicate: Any, timeout: float = 60, start: int = 0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = start
        while time.monotonic() < deadline:
            for data in self.received[seen:]:
                if predicate(data):
                    return data
            seen = len(self.received)
            self.poll()
        raise AssertionError(f"no matching message; got {[d.get('type') for d in self.received]}")

    def request(self, data: Any, timeout: float = 60) -> dict[str, Any]:
        request_id = uuid.uuid4().hex
        if isinstance(data, dict):
            data = {**data, "request_id": request_id}
        msg = self.kernel.kc.session.msg("comm_msg", {"comm_id": self.comm_id, "data": data})
        start = len(self.received)
        self.kernel.kc.shell_channel.send(msg)
        if not isinstance(data, dict):
            return self.wait(lambda d: d.get("type") == "response", timeout, start)
        return self.wait(
            lambda d: d.get("type") == "response" and d.get("request_id") == request_id, timeout
        )


def test_bridge_hello_errors_and_a_full_panel_run(start_kernel: Any) -> None:
    script = [
        reply(text("Checking."), tool_use("python", {"code": "print('side panel ran me')"})),
        reply(text("Done from the side panel.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        front = FrontEnd(kernel)
        hello = front.wait(lambda d: d.get("type") == "hello")
        assert hello["protocol"] == 1
        assert hello["api_key_configured"] is True
        assert hello["active_run"] is None
        assert hello["approval_mode"] == "minimal"
        assert "test-key" not in json.dumps(hello)

        # Malformed requests get ok: false with a message, never a traceback.
        bad = front.request({"type": "nope"})
        assert bad["ok"] is False
        assert bad["error"].startswith("unknown request type 'nope'; known types:")
        missing = front.request({"type": "run.cancel"})
        assert missing["error"] == "run.cancel: missing field 'run_id'"
        assert front.request({"type": "run.cancel", "run_id": "x"})["error"] == "run not found"
        answer = front.request(
            {"type": "permission.respond", "permission_request_id": "p", "decision": "allow"}
        )
        assert answer["error"] == "permission request not found"
        wrong = front.request(
            {"type": "permission.respond", "permission_request_id": "p", "decision": "maybe"}
        )
        assert wrong["error"] == (
            "permission.respond: decision must be one of allow, allow_remember, deny"
        )
        no_id = front.request("just a string")
        assert no_id["ok"] is False
        assert no_id["error"] == "a request must be a JSON object, got str"

        # A background run started from the panel, with its approval answered over the comm.
        started = front.request({"type": "run.start", "prompt": "run something"})
        assert started["ok"] is True
        run_id = started["result"]["run_id"]
        asking = front.wait(
            lambda d: d.get("type") == "agent.event" and d["event"]["type"] == "permission.request"
        )
        assert asking["run_id"] == run_id
        request = asking["event"]
        assert request["tool"] == "python"
        front.wait(lambda d: d.get("type") == "run.status" and d.get("status") == "awaiting_ui")
        allowed = front.request(
            {
                "type": "permission.respond",
                "permission_request_id": request["request_id"],
                "decision": "allow",
            }
        )
        assert allowed["ok"] is True
        front.wait(lambda d: d.get("type") == "run.status" and d.get("status") == "completed")
        events = [d for d in front.received if d.get("type") == "agent.event"]
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(set(seqs)), "live events are numbered once, in order"
        kinds = [e["event"]["type"] for e in events]
        assert "tool_call" in kinds
        assert "permission.request" in kinds
        assert kinds[-1] == "final"
        assert events[-1]["event"]["content"] == "Done from the side panel."
        result = next(e["event"] for e in events if e["event"]["type"] == "tool_result")
        assert "side panel ran me" in result["result"]
        assert "permission.resolved" in kinds
        types = [d["type"] for d in front.received]
        assert types.index("run.started") < types.index("agent.event")
        # Each update is sent once: approvals and todo lists travel only as agent events.
        assert set(types) <= {"hello", "response", "run.started", "agent.event", "run.status"}
        assert kinds.count("permission.request") == 1

        # Sessions, transcript and the cache, read the way the panel does.
        sessions = front.request({"type": "sessions.list"})["result"]["sessions"]
        assert sessions[0]["session_id"] == started["result"]["session_id"]
        transcript = front.request(
            {"type": "session.transcript", "session_id": sessions[0]["session_id"]}
        )["result"]
        assert transcript["events"][0]["type"] == "run.started"
        assert transcript["events"][0]["prompt"] == "run something"
        # One numbering: every logged event has the number it had on the live stream.
        live_by_seq = {e["seq"]: e["event"]["type"] for e in events}
        replayed = [e for e in transcript["events"] if e["type"] == "agent.event"]
        assert replayed
        for envelope in replayed:
            assert live_by_seq[envelope["seq"]] == envelope["event"]["type"]
            assert envelope["event"]["seq"] == envelope["seq"]
        assert {e["seq"] for e in replayed} >= {
            e["seq"] for e in events if e["event"]["type"] != "text_delta"
        }
        unknown = front.request({"type": "session.transcript", "session_id": "nope"})
        assert unknown["error"] == "session not found: nope"
        entries = front.request({"type": "cache.list"})["result"]["entries"]
        python_entry = next(e for e in entries if e["tool_name"] == "python")
        assert python_entry["whose"] == "(this session)"  # the kernel's own entries, labelled
        ref_id = python_entry["ref_id"]
        read = front.request({"type": "cache.read", "ref_id": ref_id})["result"]["text"]
        assert "side panel ran me" in read
        grep = front.request({"type": "cache.grep", "ref_id": ref_id, "pattern": "panel"})
        assert "side panel ran me" in grep["result"]["text"]
        line = front.request(
            {"type": "cache.line", "ref_id": ref_id, "line_number": 2, "char_offset": 5}
        )
        assert line["ok"] is True
        parts = front.request({"type": "cache.parts", "ref_id": ref_id})["result"]["parts"]
        assert parts[0]["type"] == "text"
        missing_ref = front.request({"type": "cache.read", "ref_id": "nope"})
        assert missing_ref["ok"] is False
        assert "nope" in missing_ref["error"]
        state = front.request({"type": "state.get"})["result"]
        assert state["session_id"] == started["result"]["session_id"]
        todos = front.request({"type": "todos.get"})["result"]
        assert todos == {"session_id": started["result"]["session_id"], "todos": []}


def _subshell(kernel: Any) -> str:
    msg = kernel.kc.session.msg("create_subshell_request", {})
    kernel.kc.control_channel.send(msg)
    reply_msg = kernel.kc.get_control_msg(timeout=10)
    return str(reply_msg["content"]["subshell_id"])


def _control_on_subshell(kernel: Any, subshell_id: str, request: dict[str, Any], out: Any) -> Any:
    """Call bridge.control() in a silent execute_request on a subshell; returns its response.

    The response is written to a file rather than read from an execute_result: IPython's
    display machinery is shared with the busy main cell, so results from a second thread are not
    reliably parented to the subshell's request, while the call itself is what is under test.
    """
    control = '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control'
    return _json_on_subshell(
        kernel, subshell_id, f"{control}({json.dumps(request)!r})", out, request["type"]
    )


def run_approved_elsewhere(
    kernel: Any, answer_elsewhere: Callable[[Any, list[str]], None]
) -> tuple[Any, list[str]]:
    """Run a ``%%codelia`` cell whose tool call asks for approval and answer it out of band.

    The stdin prompt is left unanswered (its prompts are collected); while the cell runs,
    ``answer_elsewhere(kernel, prompts)`` answers (the side panel, the cell panel). Checks the
    run ended cleanly, with no error in the cell, and that the cell's card says Allowed.
    """
    prompts: list[str] = []

    def leave_unanswered(request: dict[str, Any]) -> None:
        prompts.append(request["content"]["prompt"])  # the person answers elsewhere

    run = kernel.execute(
        "%%codelia\nset it",
        allow_stdin=True,
        on_input=leave_unanswered,
        during=lambda k: answer_elsewhere(k, prompts),
    )
    assert run.status == "ok", run.reply["content"]
    assert not [m for m in run.messages if m["msg_type"] == "error"]  # left cleanly
    kernel.drain()
    assert "Allowed" in kernel.html_text()  # the cell's card shows the outcome
    return run, prompts


def _json_on_subshell(kernel: Any, subshell_id: str, expression: str, out: Any, what: str) -> Any:
    """Evaluate ``expression`` (a JSON string) on a subshell, through a file (see above)."""
    code = f"open({str(out)!r}, 'w').write({expression})"
    content = {"code": code, "silent": True, "store_history": False, "allow_stdin": False}
    msg = kernel.kc.session.msg("execute_request", content)
    msg["header"]["subshell_id"] = subshell_id
    kernel.kc.shell_channel.send(msg)
    deadline = time.monotonic() + 90  # generous: shared CI machines can be slow
    while time.monotonic() < deadline:
        kernel.drain(0.02)
        if out.exists() and out.read_text():
            return json.loads(out.read_text())
    raise AssertionError(f"the subshell did not answer {what}")


def test_control_on_a_subshell_cancels_a_busy_blocking_cell(
    start_kernel: Any, tmp_path: Path
) -> None:
    slow = reply(text("chunk " * 6000), delay_s=0.02)  # minutes long: cancelled well before
    with ScriptedAnthropicServer([slow]) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        subshell = _subshell(kernel)
        control = '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control'
        responses: list[dict[str, Any]] = []

        def cancel_when_streaming(k: Any) -> None:
            if responses or "chunk chunk" not in k.html_text():
                return
            state = _control_on_subshell(
                k, subshell, {"type": "state.get", "request_id": "s1"}, tmp_path / "state.json"
            )
            run_id = state["result"]["active_run"]["run_id"]
            cancel = {"type": "run.cancel", "request_id": "c1", "run_id": run_id}
            responses.append(_control_on_subshell(k, subshell, cancel, tmp_path / "cancel.json"))

        run = kernel.execute("%%codelia\nwrite a lot", during=cancel_when_streaming)
        assert responses == [{"type": "response", "request_id": "c1", "ok": True, "result": {}}]
        assert run.status == "ok"
        assert kernel.execute("print(_.status)").stream_text().strip() == "cancelled"
        # control() refuses what must go over the comm, and bad JSON, with clear messages.
        start_json = json.dumps({"type": "run.start", "request_id": "r", "prompt": "x"})
        refused = kernel.execute(f"print({control}({start_json!r}))")
        assert json.loads(refused.stream_text())["error"] == (
            "run.start cannot be sent through control(); send it over the codelia comm"
        )
        broken = kernel.execute(f"print({control}('{{nope'))")
        assert json.loads(broken.stream_text())["error"].startswith("invalid JSON:")


def test_side_panel_answer_resolves_a_blocking_cells_pending_prompt(
    start_kernel: Any, tmp_path: Path
) -> None:
    script = [reply(tool_use("python", {"code": "panel_answer = 5"})), reply(text("set it"))]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        subshell = _subshell(kernel)
        answered: list[dict[str, Any]] = []

        def answer_in_the_side_panel(k: Any, prompts: list[str]) -> None:
            if not prompts or answered:
                return
            pending = _json_on_subshell(
                k,
                subshell,
                "__import__('json').dumps([r.request_id for r in "
                "__import__('jupyter_codelia.notebook', fromlist=['x']).notebook_agent("
                "get_ipython()).approvals.open_requests()])",
                tmp_path / "pending.json",
                "the pending requests",
            )
            respond = {
                "type": "permission.respond",
                "request_id": "a1",
                "permission_request_id": pending[0],
                "decision": "allow",
            }
            answered.append(_control_on_subshell(k, subshell, respond, tmp_path / "answer.json"))

        _run, prompts = run_approved_elsewhere(kernel, answer_in_the_side_panel)
        assert len(prompts) == 1
        assert answered == [{"type": "response", "request_id": "a1", "ok": True, "result": {}}]
        assert kernel.execute("print(_.status)").stream_text().strip() == "completed"
        check = kernel.execute("print(panel_answer)")
        assert check.stream_text().strip() == "5"


def test_hello_names_the_store_and_codelia_home_moves_it(
    start_kernel: Any, codelia_home: Path, tmp_path: Path
) -> None:
    with ScriptedAnthropicServer([reply(text("Stored on the shared volume."))]) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        front = FrontEnd(kernel)
        hello = front.wait(lambda d: d.get("type") == "hello")
        store_id = (codelia_home / STORE_ID_FILE).read_text().strip()
        assert hello["store"] == {"home": str(codelia_home), "store_id": store_id}
        assert "session.transcript" in hello["control_requests"]
        assert "cache.read" in hello["control_requests"]
        assert "run.start" not in hello["control_requests"]

        shared = tmp_path / "shared-volume"
        moved = kernel.execute(f"%config Codelia.home = {str(shared)!r}")
        # Open panels hear of the move (they chose where to read history by hello.store).
        notices = [
            m["content"]["data"]
            for m in moved.messages
            if m["msg_type"] == "comm_msg" and m["content"].get("comm_id") == front.comm_id
        ]
        state = front.request({"type": "state.get"})["result"]
        assert notices == [{"type": "store.changed", "store": state["store"]}]
        assert state["store"]["home"] == str(shared)
        assert state["store"]["store_id"] == (shared / STORE_ID_FILE).read_text().strip()
        assert state["store"]["store_id"] != store_id

        started = front.request({"type": "run.start", "prompt": "where do you write?"})
        front.wait(lambda d: d.get("type") == "run.status" and d.get("status") == "completed")
        session_id = started["result"]["session_id"]
        assert (shared / "sessions" / "state" / f"{session_id}.json").is_file()
        assert not (codelia_home / "sessions" / "state" / f"{session_id}.json").exists()
        assert SessionStore(codelia_home).list_sessions() == []


def test_control_reads_sessions_and_the_cache_while_a_cell_is_busy(
    start_kernel: Any, tmp_path: Path
) -> None:
    script = [
        reply(tool_use("python", {"code": "print('cached for the browser')"})),
        reply(text("Ran it.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia\n%config Codelia.approval_mode = 'full-access'")
        kernel.execute("%%codelia\nrun the probe")
        subshell = _subshell(kernel)
        flag = tmp_path / "release.flag"
        answers: dict[str, Any] = {}

        def read_while_busy(k: Any) -> None:
            if answers:
                return
            sessions = _control_on_subshell(
                k, subshell, {"type": "sessions.list", "request_id": "l"}, tmp_path / "l.json"
            )
            session_id = sessions["result"]["sessions"][0]["session_id"]
            transcript = {"type": "session.transcript", "request_id": "t", "session_id": session_id}
            answers["transcript"] = _control_on_subshell(k, subshell, transcript, tmp_path / "t")
            listing = {"type": "cache.list", "request_id": "c"}
            answers["cache"] = _control_on_subshell(k, subshell, listing, tmp_path / "c.json")
            ref_id = answers["cache"]["result"]["entries"][0]["ref_id"]
            read = {"type": "cache.read", "request_id": "r", "ref_id": ref_id}
            answers["read"] = _control_on_subshell(k, subshell, read, tmp_path / "r.json")
            flag.write_text("go")

        busy = f"import os, time\nwhile not os.path.exists({str(flag)!r}):\n    time.sleep(0.05)"
        kernel.execute(busy, during=read_while_busy)

        events = answers["transcript"]["result"]["events"]
        assert events[0] == {
            "type": "run.started",
            "run_id": events[0]["run_id"],
            "session_id": answers["transcript"]["result"]["session_id"],
            "prompt": "run the probe",
            "source": "magic",
            "demo": False,
        }
        assert events[-1]["type"] == "run.status"
        assert "cached for the browser" in answers["read"]["result"]["text"]


def test_control_answers_a_user_expression_as_application_json(start_kernel: Any) -> None:
    kernel = start_kernel()
    kernel.execute("%load_ext jupyter_codelia")
    control = '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control'
    expressions = {
        "state": f"{control}({json.dumps(json.dumps({'type': 'state.get', 'request_id': 's'}))})",
        "broken": f"{control}('{{nope')",
    }
    msg_id = kernel.kc.execute("", silent=True, store_history=False, user_expressions=expressions)
    while True:
        answer = kernel.kc.get_shell_msg(timeout=30)
        if answer["parent_header"].get("msg_id") == msg_id:
            break
    values = answer["content"]["user_expressions"]

    state = values["state"]["data"]
    assert state["application/json"]["ok"] is True
    assert state["application/json"]["result"]["api_key_configured"] is True
    # Front ends that read text/plain (a Python repr of the JSON text) keep working.
    assert json.loads(eval(state["text/plain"])) == state["application/json"]
    broken = values["broken"]["data"]["application/json"]
    assert broken["ok"] is False
    assert broken["error"].startswith("invalid JSON:")


def test_a_panel_attaching_mid_reply_gets_a_comm_the_prompt_and_the_text_so_far(
    start_kernel: Any, tmp_path: Path
) -> None:
    """A reloaded page while a blocking cell streams: the kernel takes no comm_open until the
    cell ends, so the panel asks through control() for a comm the kernel opens itself; the
    transcript replay then holds the prompt and what was streamed before the page reloaded."""
    words = " ".join(f"word{i}" for i in range(1500))  # long: the test ends it with a cancel
    with ScriptedAnthropicServer([reply(text(words), delay_s=0.02)]) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        subshell = _subshell(kernel)
        seen: dict[str, Any] = {}

        def attach_while_streaming(k: Any) -> None:
            if "done" in seen or "word40 " not in k.html_text():
                return
            attach = {"type": "panel.attach", "request_id": "a", "client_id": "tab-1"}
            seen["attach"] = _control_on_subshell(k, subshell, attach, tmp_path / "attach.json")
            opened = [
                m["content"]
                for m in k.iopub
                if m["msg_type"] == "comm_open" and m["content"]["target_name"] == "codelia.panel"
            ]
            seen["opened"] = opened
            hello = opened[0]["data"]
            session = {
                "type": "session.transcript",
                "request_id": "t",
                "session_id": hello["session_id"],
            }
            seen["transcript"] = _control_on_subshell(k, subshell, session, tmp_path / "t.json")
            # Live events now flow on that comm although the cell is still busy.
            comm_id = opened[0]["comm_id"]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "live" not in seen:
                k.drain(0.05)
                live = [
                    m["content"]["data"]
                    for m in k.iopub
                    if m["msg_type"] == "comm_msg" and m["content"].get("comm_id") == comm_id
                ]
                if any(d.get("type") == "agent.event" for d in live):
                    seen["live"] = live
            cancel = {
                "type": "run.cancel",
                "request_id": "c",
                "run_id": hello["active_run"]["run_id"],
            }
            _control_on_subshell(k, subshell, cancel, tmp_path / "cancel.json")
            seen["done"] = True

        kernel.execute("%%codelia\nMy precious prompt", during=attach_while_streaming)

    assert seen["attach"] == {"type": "response", "request_id": "a", "ok": True, "result": {}}
    assert len(seen["opened"]) == 1
    hello = seen["opened"][0]["data"]
    assert hello["type"] == "hello"
    assert hello["client_id"] == "tab-1"
    assert hello["active_run"]["prompt"] == "My precious prompt"
    assert hello["active_run"]["source"] == "magic"
    assert (hello["provider"], hello["api_key_env"]) == ("anthropic", "ANTHROPIC_API_KEY")

    events = seen["transcript"]["result"]["events"]
    assert events[0]["type"] == "run.started"
    assert events[0]["prompt"] == "My precious prompt"
    streamed = "".join(
        e["event"]["delta"] for e in events if e.get("event", {}).get("type") == "text_delta"
    )
    assert streamed.startswith("word0 word1 word2 ")
    assert "word40" in streamed
    seqs = [e["seq"] for e in events if e["type"] == "agent.event"]
    assert seqs == sorted(set(seqs))
    live = [d for d in seen["live"] if d.get("type") == "agent.event"]
    assert live, "no live event reached the attached comm while the cell was busy"


def test_panel_attach_is_refused_where_the_extension_is_not_loaded(start_kernel: Any) -> None:
    kernel = start_kernel()
    control = '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control'
    attach = json.dumps({"type": "panel.attach", "request_id": "a", "client_id": "tab"})
    msg_id = kernel.kc.execute(
        "", silent=True, store_history=False, user_expressions={"a": f"{control}({attach!r})"}
    )
    while True:
        answer = kernel.kc.get_shell_msg(timeout=30)
        if answer["parent_header"].get("msg_id") == msg_id:
            break
    refused = answer["content"]["user_expressions"]["a"]["data"]["application/json"]
    assert refused == {
        "type": "response",
        "request_id": "a",
        "ok": False,
        "error": "panel.attach: jupyter_codelia is not loaded in this kernel "
        "(%load_ext jupyter_codelia)",
    }
    kernel.drain()
    assert not [m for m in kernel.iopub if m["msg_type"] == "comm_open"]
