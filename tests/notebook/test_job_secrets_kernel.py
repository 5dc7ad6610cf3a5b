"""No channel a background job reaches carries a secret: real kernel, raw iopub and comm messages.

With ``ANTHROPIC_API_KEY``, ``GITHUB_TOKEN`` and a ``SERVICE_TOKEN`` set, a python job and a
shell job whose code holds a token print the environment, print a token split across two
writes with a pause between them, print from a thread the job started, and fail with the token
in the exception. Every channel is checked on its own: the job's output and title, the job
cards (``jupyter.widget`` comm updates), the side panel's ``job.updated`` and responses,
``%codelia jobs``, the cell's stream output, ``run.started`` of a prompt typed in the side
panel, and the ``job_output`` tool result itself (called directly, before any agent redaction).
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

from .test_notebook_bridge import FrontEnd

ANTHROPIC = "sk-ant-api03-JOBSfake0123456789abcdefXYZ"
GITHUB = "ghp_JOBSfake0123456789abcdefghijklmnopqr"
SERVICE = "tok-FAKE-jobs-channels-0123456789"
SPLIT = 13  # where the split writes cut SERVICE: each half alone must not show either
FRAGMENTS = (ANTHROPIC, GITHUB, SERVICE, SERVICE[:SPLIT], SERVICE[SPLIT:], GITHUB[4:20])

PYTHON_JOB = (
    f"token = {GITHUB!r}  # the title shows this line\n"
    "import os, sys, threading, time\n"
    "print(dict(os.environ), flush=True)\n"
    "sys.stdout.write(os.environ['SERVICE_TOKEN'][:13]); sys.stdout.flush()\n"
    "time.sleep(1.5)\n"
    "print(os.environ['SERVICE_TOKEN'][13:], 'end of split', flush=True)\n"
    "worker = threading.Thread(target=lambda: print('from a thread', token, flush=True))\n"
    "worker.start(); worker.join()\n"
    "time.sleep(1.5)\n"
    "raise KeyError(token)\n"
)
SHELL_JOB = (
    f"echo title {GITHUB}; env; printf '%s' \"${{SERVICE_TOKEN:0:13}}\"; sleep 1.5; "
    "printf '%s shell split done\\n' \"${SERVICE_TOKEN:13}\"; sleep 1.5; exit 3"
)


def leaks(blob: str) -> list[str]:
    return [fragment for fragment in FRAGMENTS if fragment in blob]


def _comm_data(kernel: Any, kind: str) -> list[dict[str, Any]]:
    return [
        m["content"]["data"]
        for m in kernel.iopub
        if m["msg_type"] == "comm_msg" and m["content"]["data"].get("type") == kind
    ]


def test_every_channel_of_a_job_is_masked(start_kernel: Any) -> None:
    script = [
        reply(
            tool_use("python", {"code": PYTHON_JOB, "background": True}),
            tool_use("shell", {"command": SHELL_JOB, "background": True}),
        ),
        reply(text("Both started.")),
        # The side panel's run, whose prompt holds a token.
        reply(text("Nothing to do.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(
            server.url, api_key=ANTHROPIC, GITHUB_TOKEN=GITHUB, SERVICE_TOKEN=SERVICE
        )
        assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
        front = FrontEnd(kernel)
        front.wait(lambda d: d.get("type") == "hello")
        run = kernel.execute("%%codelia --approval-mode full-access\nstart both jobs")
        assert run.status == "ok", run.reply["content"]
        # Cards and job.updated follow the jobs while they print; the cell stays with them.
        front.wait(
            lambda d: (
                d.get("type") == "job.updated"
                and d["job"]["job_id"] == "job-1"
                and d["job"]["state"] == "failed"
            ),
            timeout=60,
        )
        front.wait(
            lambda d: (
                d.get("type") == "job.updated"
                and d["job"]["job_id"] == "job-2"
                and d["job"]["state"] == "failed"
            ),
            timeout=60,
        )
        listed = front.request({"type": "jobs.list"})
        stopped = front.request({"type": "job.stop", "job_id": "job-2"})
        jobs_magic = kernel.execute("%codelia jobs")
        panel_run = front.request({"type": "run.start", "prompt": f"rotate {GITHUB} please"})
        assert panel_run["ok"] is True, panel_run
        front.wait(lambda d: d.get("type") == "run.status" and d.get("status") == "completed")
        # The job_output tool itself, called in the kernel without the agent around it.
        direct = kernel.execute(
            "import json\n"
            "from jupyter_codelia.standard_tools.jobs import job_tools\n"
            "from jupyter_codelia.tools import ToolContext\n"
            "from jupyter_codelia.notebook import notebook_agent\n"
            "_nb = notebook_agent(get_ipython())\n"
            "_read = {t.name: t for t in job_tools(_nb.jobs)}['job_output']\n"
            "for _id in ('job-1', 'job-2'):\n"
            "    _args = json.dumps({'job_id': _id, 'since': 'start'})\n"
            "    _msg = await _read.execute_raw(_args, ToolContext())\n"
            "    print(_msg.model_dump_json())\n"
        )
        assert direct.status == "ok", direct.reply["content"]
        kernel.drain(0.5)
        kernel.close()

    channels: dict[str, Any] = {
        "job.updated": _comm_data(kernel, "job.updated"),
        "jobs.list response": listed,
        "job.stop response": stopped,
        "run.started": _comm_data(kernel, "run.started"),
        "job cards (jupyter.widget)": [
            m["content"]
            for m in kernel.iopub
            if m["msg_type"] in ("comm_open", "comm_msg")
            and m["content"].get("target_name", "jupyter.widget") == "jupyter.widget"
            and "type" not in m["content"].get("data", {})
        ],
        "%codelia jobs": jobs_magic.stream_text(),
        "cell stream output": [m["content"] for m in kernel.iopub if m["msg_type"] == "stream"],
        "job_output tool result": direct.stream_text(),
    }
    found = {name: leaks(json.dumps(data)) for name, data in channels.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}

    # Each channel really carried the jobs (else the sweep proves nothing).
    updates = json.dumps(channels["job.updated"])
    assert '"title": "token = \'[REDACTED]\'  # the title shows this line' in updates
    assert "KeyError: '[REDACTED]'" in updates  # the python job's summary
    assert "exit code 3" in updates
    cards = json.dumps(channels["job cards (jupyter.widget)"])
    assert "token = &#x27;[REDACTED]&#x27;" in cards and "echo title [REDACTED]" in cards
    assert "KeyError: &#x27;[REDACTED]&#x27;" in cards or "KeyError: '[REDACTED]'" in cards
    jobs_text = str(channels["%codelia jobs"])
    assert "job-1 [python] failed" in jobs_text and "job-2 [shell] failed" in jobs_text
    assert "[REDACTED]" in jobs_text
    started = channels["run.started"]
    assert [d["prompt"] for d in started if d["source"] == "panel"] == ["rotate [REDACTED] please"]
    tool_text = str(channels["job_output tool result"])
    assert "[REDACTED] end of split" in tool_text  # the split write was masked whole
    assert "[REDACTED] shell split done" in tool_text
    assert "from a thread [REDACTED]" in tool_text  # the thread's print went to the job
    assert "'ANTHROPIC_API_KEY': '[REDACTED]'" in tool_text
    assert "GITHUB_TOKEN=[REDACTED]" in tool_text
    # The thread's print reached the job, not the cell that was running (nor any other).
    shown_by_tests = {direct.msg_id, jobs_magic.msg_id}
    cells = [
        m["content"]["text"]
        for m in kernel.iopub
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") not in shown_by_tests
    ]
    assert "from a thread" not in "".join(cells)
