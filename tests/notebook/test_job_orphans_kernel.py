"""Background jobs never outlive their kernel: real kernels shut down, restarted and killed.

Each test starts shell jobs of every awkward kind through ``%%codelia`` (a plain one, one that
ignores SIGTERM, one that moves a child into a new session with ``setsid``, one whose child
double-forks out of the tree, one with forked children) and a python job that starts processes
of its own, ends the kernel one way or another (or stops each job), and checks with psutil that
no process of any job is left, then that the next kernel says what was stopped.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from typing import Any

import psutil
import pytest

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use


def _tag() -> str:
    """A unique sleep duration: every process of a job carries it on its command line."""
    return f"{800000 + uuid.uuid4().int % 99999}.{uuid.uuid4().int % 1000:03d}"


def _jobs(tag: str) -> dict[str, str]:
    return {
        "plain": f"sleep {tag}1",
        "ignores SIGTERM": f"trap '' TERM; sleep {tag}2; echo never",
        "setsid child": f"setsid sleep {tag}3 & sleep {tag}3",
        "double fork": f"(setsid sleep {tag}4 &); sleep {tag}4",
        "forked children": f"sleep {tag}5 & sleep {tag}5 & wait",
    }


def survivors(tag: str) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "pid"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            if tag in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(f"{proc.info['pid']}: {cmdline}")
        except psutil.Error:
            continue
    return found


def wait_for_none(tag: str, timeout: float = 40) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := survivors(tag)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def start_jobs(start_kernel: Any, tag: str, server: ScriptedAnthropicServer) -> Any:
    kernel = start_kernel(server.url)
    assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
    run = kernel.execute("%%codelia --approval-mode full-access\nstart the jobs")
    assert run.status == "ok", run.reply["content"]
    # Every kind has its processes running (two for the setsid one, three for the forks, four
    # for the python job), and so do their guards.
    deadline = time.monotonic() + 30
    while len(survivors(tag)) < 18 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(survivors(tag)) >= 18, survivors(tag)
    # The python job's processes are seen (twice a second) before the kernel goes.
    time.sleep(1.5)
    return kernel


def python_job(tag: str) -> str:
    """A python job that starts processes of its own, one of them with children."""
    return (
        "import subprocess, time\n"
        f"server = subprocess.Popen(['sleep', '{tag}6'])\n"
        f"workers = subprocess.Popen('sleep {tag}7 & sleep {tag}7 & wait', shell=True)\n"
        "for _ in range(6000):\n"
        "    time.sleep(0.1)\n"
    )


def script(tag: str) -> list[Any]:
    calls = [
        tool_use("shell", {"command": command, "background": True})
        for command in _jobs(tag).values()
    ]
    calls.append(tool_use("python", {"code": python_job(tag), "background": True}))
    return [reply(*calls), reply(text("All started."))]


def _restart(kernel: Any, *, now: bool) -> None:
    kernel.km.restart_kernel(now=now)
    kernel.kc.wait_for_ready(timeout=60)


@pytest.mark.parametrize("ending", ["shutdown", "restart", "restart now", "kill -9"])
def test_no_job_process_survives_the_kernel(start_kernel: Any, ending: str) -> None:
    tag = _tag()
    with ScriptedAnthropicServer(script(tag)) as server:
        kernel = start_jobs(start_kernel, tag, server)
        listed = kernel.execute("%codelia jobs").stream_text()
        assert listed.count("[shell] running") == 5, listed
        assert "job-6 [python] running" in listed, listed
        if ending == "shutdown":
            kernel.km.shutdown_kernel(now=False)
        elif ending == "restart":
            _restart(kernel, now=False)
        elif ending == "restart now":
            _restart(kernel, now=True)  # SIGKILL to the kernel's process group
        else:
            os.kill(kernel.km.provisioner.process.pid, signal.SIGKILL)
        assert wait_for_none(tag) == []
        if ending == "shutdown":
            return
        if ending == "kill -9":
            _restart(kernel, now=True)
        assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
        after = kernel.execute("%codelia jobs").stream_text()
    assert "Jobs of the kernel before the last restart (none of them runs any more):" in after
    for number, command in enumerate(_jobs(tag).values(), start=1):
        assert f"job-{number} [shell]" in after, after
        assert command.split(";")[0][:40] in after, after
    assert after.count("stopped when the kernel ended") == 5, after
    assert "job-6 [python] started" in after
    assert "ended with the kernel (python jobs run on the kernel's threads)" in after


def test_job_stop_ends_the_whole_tree_and_the_next_turn_hears_of_a_restart(
    start_kernel: Any,
) -> None:
    tag = _tag()
    stops = [tool_use("job_stop", {"job_id": f"job-{number}"}) for number in range(1, 7)]
    steps = [*script(tag), reply(*stops), reply(text("Stopped them all."))]
    more = [
        tool_use("shell", {"command": f"sleep {tag}9", "background": True}),
        tool_use("python", {"code": python_job(tag + "9"), "background": True}),
    ]
    steps.append(reply(*more))
    steps += [reply(text("Started one more.")), reply(text("It was stopped by the restart."))]
    with ScriptedAnthropicServer(steps) as server:
        kernel = start_jobs(start_kernel, tag, server)
        # The scripted model stops every job in its second turn; each stop ends every process.
        run = kernel.execute("%%codelia --approval-mode full-access\nstop them all")
        assert run.status == "ok", run.reply["content"]
        assert wait_for_none(tag, timeout=20) == []
        listed = kernel.execute("%codelia jobs").stream_text()
        assert listed.count("[shell] stopped") == 5, listed
        assert "job-6 [python] stopped" in listed, listed
        assert "terminated by SIGTERM" in listed or "SIGKILL" in listed
        # The one that ignores SIGTERM needed SIGKILL after the grace period.
        stopped = [str(r) for r in server.requests[-1].messages[-1]["content"]]
        assert any("then SIGKILL for" in s for s in stopped), stopped
        started = kernel.execute("%%codelia --approval-mode full-access\nstart one more")
        assert started.status == "ok"
        # The shell job's guard and command, and the python job's four processes.
        running = wait_until_running(tag + "9", count=6)
        assert len(running) >= 6, running
        time.sleep(1.5)  # the python job's processes are seen twice a second
        _restart(kernel, now=True)
        assert wait_for_none(tag) == []
        kernel.execute("%load_ext jupyter_codelia")
        turn = kernel.execute("%%codelia\nwhat happened to my job?")
        assert turn.status == "ok", turn.reply["content"]
        told = server.requests[-1].messages[-1]["content"]
    told_text = str(told)
    assert "[background jobs]" in told_text
    assert "from before the kernel restarted: job-7 [shell]" in told_text
    assert "from before the kernel restarted: job-8 [python]" in told_text
    assert "stopped when the kernel ended" in told_text


def wait_until_running(tag: str, count: int, timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while len(found := survivors(tag)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return found
