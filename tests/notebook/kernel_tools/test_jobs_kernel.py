"""Background jobs in a real kernel, driven by the scripted Anthropic server through %%codelia."""

from __future__ import annotations

import re
import time
from typing import Any

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

# Prints for 20 s (with a tqdm-style bar on stderr) unless stopped.
TWENTY_SECONDS = (
    "import sys, time\n"
    "for i in range(100):\n"
    "    print(f'tick {i}', flush=True)\n"
    "    sys.stderr.write(f'\\r{i}%|###       | {i}/100 [00:01<00:19, 5.0it/s]')\n"
    "    time.sleep(0.2)\n"
    "job_finished = True\n"
)
SHORT = "import time\ntime.sleep(1.5)\nprint('short job says bye')\nshort_value = 7\n"


def _tool_results(server: ScriptedAnthropicServer, index: int = -1) -> list[str]:
    found: list[str] = []
    for message in server.requests[index].messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    found.append(" ".join(str(b.get("text", "")) for b in inner))
                else:
                    found.append(str(inner))
    return found


def _last_user_text(server: ScriptedAnthropicServer, index: int) -> str:
    message = server.requests[index].messages[-1]
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def test_background_job_is_listed_read_waited_on_and_stopped(start_kernel: Any) -> None:
    script = [
        reply(
            text("Starting the long job."),
            tool_use("python", {"code": TWENTY_SECONDS, "background": True}),
            tool_use("python", {"code": SHORT, "background": True}),
        ),
        reply(tool_use("python", {"code": "import time; time.sleep(1.0)"})),
        reply(tool_use("job_list", {})),
        reply(tool_use("job_output", {"job_id": "job-1"})),
        reply(tool_use("job_wait", {"job_id": "job-1", "timeout_seconds": 1})),
        reply(tool_use("job_stop", {"job_id": "job-1"})),
        reply(tool_use("job_output", {"job_id": "job-404"})),
        reply(text("Stopped it.")),
        # The next turn.
        reply(text("The short job finished.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
        run = kernel.execute("%%codelia --approval-mode full-access\ntrain in the background")
        assert run.status == "ok", run.reply["content"]
        results = _tool_results(server)
        started, started_short, _sleep, listed, read, waited, stopped, missing = results
        assert "Started background job job-1" in started
        assert "Started background job job-2" in started_short
        assert "job-1 [python] running" in listed
        assert "last line:" in listed
        # Read while running: the new output so far, and the tqdm progress in the status.
        assert "job-1 [python] running" in read
        assert "tick 0" in read
        assert "/100)" in read
        # The bounded wait returned while the job still ran, with only the new output.
        assert "[wait] still running after 1 s of waiting" in waited
        assert "tick 0\n" not in waited
        assert "job-1 [python] stopped" in stopped
        assert "Execution stopped" in stopped
        assert "No background job 'job-404'" in missing
        assert "job_list lists them" in missing
        # The job's prints went to the job, not to the cell that was running.
        assert "tick" not in run.stream_text()
        check = kernel.execute("print('job_finished' in globals())")
        assert check.stream_text().strip() == "False"
        # The card shows the job, its state and its last lines.
        kernel.wait_for(lambda k: "stopped" in k.html_text() and "job-1" in k.html_text())
        html = kernel.html_text()
        assert "codelia" in html and "[python]" in html
        assert any(
            state.get("value", 0) > 0 for state in kernel.widgets_of("FloatProgressModel").values()
        )
        # The short job ends after the turn; the next turn's request says so.
        kernel.wait_for(
            lambda k: k.execute("print(globals().get('short_value'))").stream_text().strip() == "7",
            timeout=30,
        )
        second = kernel.execute("%%codelia\nhow are the jobs?")
        assert second.status == "ok", second.reply["content"]
        notice = _last_user_text(server, -1)
        assert "how are the jobs?" in notice
        assert "[background jobs]" in notice
        assert "finished since your last turn: job-2 [python] completed" in notice
        assert "characters of output not read yet" in notice
        # job-1's stop was already reported by job_stop: it is not news.
        assert "job-1" not in notice


def test_foreground_call_past_its_timeout_becomes_a_job(start_kernel: Any) -> None:
    slow = (
        "import time\n"
        "for i in range(30):\n"
        "    print('slow', i, flush=True)\n"
        "    time.sleep(0.1)\n"
        "slow_result = 'finished'\n"
        "slow_result"
    )
    script = [
        reply(tool_use("python", {"code": slow, "timeout_seconds": 1})),
        reply(tool_use("job_wait", {"job_id": "job-1", "timeout_seconds": 60})),
        reply(text("It finished in the background.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia --approval-mode full-access\nrun the slow thing")
        assert run.status == "ok", run.reply["content"]
        timed_out, waited = _tool_results(server)
        assert "slow 0" in timed_out
        assert "[timeout] still running after 1 s: it continues as background job job-1" in (
            timed_out
        )
        assert "job-1 [python] completed" in waited
        assert "slow 29" in waited
        assert "[result]\n'finished'" in waited
        # What the foreground call already returned is not read twice.
        assert "slow 0\n" not in waited
        check = kernel.execute("print(slow_result)")
        assert check.stream_text().strip() == "finished"


def test_timeout_stops_the_call_when_jobs_are_off(start_kernel: Any) -> None:
    script = [
        reply(tool_use("python", {"code": "while True:\n    pass", "timeout_seconds": 1})),
        reply(text("stopped")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute("%config Codelia.python_timeout_to_job = False")
        run = kernel.execute("%%codelia --approval-mode full-access\nspin")
        assert run.status == "ok", run.reply["content"]
        (result,) = _tool_results(server)
        assert "[timeout] stopped after 1 s" in result
        assert "background job" not in result


def _changed_by_a_run(kernel: Any, setup: str) -> Any:
    """The kernel after ``setup`` (with numpy, pandas and a 3-row ``df``) and one agent run."""
    kernel.execute("%load_ext jupyter_codelia")
    prepared = kernel.execute(
        "import numpy as np, pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})\n" + setup
    )
    assert prepared.status == "ok", prepared.reply["content"]
    run = kernel.execute("%%codelia --approval-mode full-access\nchange things")
    assert run.status == "ok", run.reply["content"]
    return kernel


def test_undo_in_a_real_kernel_by_magic_and_by_the_card_button(start_kernel: Any) -> None:
    change = "keep = 'new'\ndel tmp\ndf['a'] = df['a'] * 10\nbig[0] = 5\nadded = 1\n"
    script = [
        reply(tool_use("python", {"code": change})),
        reply(text("Changed them.")),
        reply(tool_use("python", {"code": "keep = 'button'"})),
        reply(text("Changed keep again.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = _changed_by_a_run(
            start_kernel(server.url),
            "keep = 'old'\n"
            "tmp = [1, 2]\n"
            "big = np.zeros(15_000_000)  # 114 MB: over the 100 MB copy budget",
        )
        (result,) = _tool_results(server)
        assert "added: added (int)" in result
        assert "rebound: keep (str len 3, was str len 3)" in result
        assert "deleted: tmp (was list len 2)" in result
        assert "changed in place: big (ndarray 15000000, not restorable: no copy kept: " in result
        assert "df (DataFrame 3x1, copy kept)" in result
        undone = kernel.execute("%codelia undo")
        assert undone.status == "ok"
        out = undone.stream_text()
        assert "removed: added (added by the call)" in out
        assert "restored: keep = str len 3" in out
        assert "restored: tmp = list len 2 (it was deleted)" in out
        assert "restored: df (now the copy kept before the call" in out
        assert "NOT restorable: big was changed in place and no copy kept: 114.4 MB is over" in out
        check = kernel.execute("print(keep, tmp, df['a'].tolist(), big[0], 'added' in globals())")
        assert check.stream_text().strip() == "old [1, 2] [1, 2, 3] 5.0 False"
        again = kernel.execute("%codelia undo")
        assert again.status == "error"
        assert "Nothing to undo for the last run" in again.reply["content"]["evalue"]
        # A finished run is static output: each python card names the command that undoes
        # its call (its live Undo button closed with the run).
        second = kernel.execute("%%codelia --approval-mode full-access\nchange keep")
        assert second.status == "ok"
        kernel.drain()
        assert kernel.execute("print(keep)").stream_text().strip() == "button"
        static = "".join(
            str(m["content"].get("data", {}).get("text/html", ""))
            for m in kernel.iopub
            if m["msg_type"] in ("display_data", "update_display_data")
        )
        named = re.findall(r"%codelia undo ([\w-]+)", static)
        assert len(set(named)) == 2, named  # one per python card of the two runs
        first_call, second_call = sorted(set(named), key=named.index)
        done_before = kernel.execute(f"%codelia undo {first_call}")
        assert "Nothing to undo for call or run" in done_before.reply["content"].get("evalue", "")
        restored = kernel.execute(f"%codelia undo {second_call}")
        assert "restored: keep = str len 3" in restored.stream_text()
        assert kernel.execute("print(keep)").stream_text().strip() == "old"


SLOW_ARRAY = (
    "import threading\n"
    "class Slow(np.ndarray):\n"
    "    @property\n"
    "    def __array_interface__(self):  # what a fingerprint reads: blocks for 30 s\n"
    "        threading.Event().wait(30)\n"
    "        return super().__array_interface__\n"
    "slow = np.zeros(3).view(Slow)\n"
)


def test_undo_of_a_run_in_a_real_kernel_is_exact_and_a_slow_object_does_not_stall_it(
    start_kernel: Any,
) -> None:
    script = [
        reply(tool_use("python", {"code": "df.loc[0, 'a'] = 10\nitems.append(2)"})),
        reply(tool_use("python", {"code": "df.loc[1, 'a'] = 20\narr[0] = 5"})),
        reply(tool_use("python", {"code": "slow.shape", "timeout_seconds": 1})),
        reply(text("Done.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = _changed_by_a_run(
            start_kernel(server.url), "items = [1]\nalso = items\narr = np.zeros(3)\n" + SLOW_ARRAY
        )
        first, second, slow = _tool_results(server)
        assert "changed in place: df (DataFrame 3x1, copy kept), items (list len 2, copy kept)" in (
            first
        )
        assert "changed in place: arr (ndarray 3, copy kept), df (DataFrame 3x1, copy kept)" in (
            second
        )
        # The fingerprint gave up on slow within its budget: the call ran and says so.
        assert "[result]\n(3,)" in slow
        assert (
            "[not tracked for undo]\nslow (Slow 3): too large/slow: fingerprinting it took over "
            "the 50 ms budget"
        ) in slow
        kernel.execute("arr.flags.writeable = False")
        undone = kernel.execute("%codelia undo")
        assert undone.status == "ok", undone.reply["content"]
        out = undone.stream_text()
        assert "not restored" not in out
        assert "restored: df (now the copy kept before the call; other references" in out
        assert "restored: items (contents put back in place)" in out
        assert (
            "restored: arr (now the copy kept before the call, since putting it back in place "
            "failed (ValueError: assignment destination is read-only)"
        ) in out
        check = kernel.execute("print(df['a'].tolist(), items, also, arr.tolist())")
        assert check.stream_text().strip() == "[1, 2, 3] [1] [1] [0.0, 0.0, 0.0]"
        again = kernel.execute("%codelia undo")
        assert "Nothing to undo for the last run" in again.reply["content"]["evalue"]


def test_shell_jobs_end_when_the_kernel_shuts_down(start_kernel: Any) -> None:
    import uuid

    import psutil

    tag = f"{900000 + uuid.uuid4().int % 99999}.{uuid.uuid4().int % 1000:03d}"
    script = [
        reply(tool_use("shell", {"command": f"sleep {tag}", "background": True})),
        reply(text("started")),
    ]

    def sleepers() -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            try:
                if tag in " ".join(proc.info["cmdline"] or []) and (
                    proc.info["status"] != psutil.STATUS_ZOMBIE
                ):
                    found.append(proc)
            except psutil.Error:
                continue
        return found

    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia --approval-mode full-access\nsleep in the background")
        assert run.status == "ok", run.reply["content"]
        assert "Started background job job-1" in _tool_results(server)[0]
        assert sleepers()
        jobs = kernel.execute("%codelia jobs").stream_text()
        assert "job-1 [shell] running after" in jobs and f"sleep {tag}" in jobs
        kernel.km.shutdown_kernel(now=False)  # a graceful shutdown runs the kernel's atexit
        deadline = time.monotonic() + 30
        while sleepers() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not sleepers()


def test_side_panel_protocol_sees_job_updates_lists_and_stops_jobs(start_kernel: Any) -> None:
    from ..test_notebook_bridge import FrontEnd

    code = (
        "import sys, time\n"
        "print('step 1'); print('step 2', flush=True)\n"
        "sys.stderr.write('\\r 40%|####      | 4/10 [00:01<00:02]')\n"
        "for _ in range(600):\n"
        "    time.sleep(0.1)  # short sleeps: a stop lands at the next Python step\n"
    )
    script = [
        reply(tool_use("python", {"code": code, "background": True})),
        reply(text("Started.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute("%config Codelia.approval_mode = 'full-access'")
        front = FrontEnd(kernel)
        front.wait(lambda d: d.get("type") == "hello")
        assert front.request({"type": "run.start", "prompt": "start a job"})["ok"] is True
        update = front.wait(
            lambda d: d.get("type") == "job.updated" and d["job"]["progress"] is not None
        )
        job = update["job"]
        assert job["job_id"] == "job-1" and job["kind"] == "python" and job["state"] == "running"
        assert job["last_lines"][:2] == ["step 1", "step 2"]
        assert job["progress"] == {"percent": 40, "done": "4", "total": "10"}
        listed = front.request({"type": "jobs.list"})
        assert [j["job_id"] for j in listed["result"]["jobs"]] == ["job-1"]
        missing = front.request({"type": "job.stop", "job_id": "job-9"})
        assert missing["ok"] is False
        assert missing["error"].startswith("No background job 'job-9'. Known jobs: job-1.")
        assert front.request({"type": "job.stop"})["error"] == "job.stop: missing field 'job_id'"
        stopped = front.request({"type": "job.stop", "job_id": "job-1"})
        assert stopped["ok"] is True
        end = front.wait(
            lambda d: d.get("type") == "job.updated" and d["job"]["state"] != "running"
        )
        assert end["job"]["state"] == "stopped"


def test_job_images_reach_the_model_and_bad_subcommands_explain_themselves(
    start_kernel: Any,
) -> None:
    drawing = (
        "import matplotlib.pyplot as plt  # the kernel's inline backend renders PNGs\n"
        "from IPython.display import display\n"
        "fig, ax = plt.subplots(figsize=(2, 2))\n"
        "ax.plot([1, 2, 3])\n"
        "display(fig)\n"
        "plt.close(fig)\n"
        "print('drawn')\n"
    )
    script = [
        reply(tool_use("python", {"code": drawing, "background": True})),
        reply(tool_use("job_wait", {"job_id": "job-1", "timeout_seconds": 60})),
        reply(text("Drew it.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%%codelia --approval-mode full-access\ndraw in the background")
        assert run.status == "ok", run.reply["content"]
        last = server.requests[-1]
        results = [
            block
            for message in last.messages
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        waited = results[-1]["content"]
        assert any(part.get("type") == "image" for part in waited)
        assert "job-1 [python] completed" in waited[0]["text"]
        assert "drawn" in waited[0]["text"] and "[images] 1 image(s)" in waited[0]["text"]
        # The figure went to the job, not to the cell's output.
        assert not [m for m in run.messages if m["msg_type"] == "display_data"
                    and "image/png" in m["content"]["data"]]  # fmt: skip
        for line, message in [
            ("%codelia undo nonsense", "Nothing to undo for call or run 'nonsense'"),
            ("%codelia jobs stop", "Usage: %codelia jobs stop JOB_ID (see %codelia jobs)."),
            ("%codelia jobs stop job-77", "No background job 'job-77'. Known jobs: job-1."),
            ("%codelia jobs frobnicate", "Usage: %codelia jobs, or %codelia jobs stop JOB_ID."),
        ]:
            failed = kernel.execute(line)
            assert failed.status == "error", line
            assert failed.reply["content"]["evalue"].startswith(message), failed.reply["content"]
