"""Background shell jobs and the job_* tools: real process groups, real threads."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.standard_tools.jobs import JobNotFoundError, JobOutput, JobRegistry
from jupyter_codelia.standard_tools.shell import shell_tool
from jupyter_codelia.tools import ToolContext, ToolError

from .test_shell import live_processes, marker, wait_until

FAKE_TOKEN = "tok-FAKE-jobs-0123456789abcdef"


async def call(tools: dict[str, Any], name: str, **args: Any) -> Any:
    result = await tools[name].execute_raw(json.dumps(args), ToolContext(tool_call_id="c1"))
    if result.type == "json":
        return result.value
    if result.type == "text":
        return result.text
    return result.parts[0].text


def job_tools_for(tmp_path: Path) -> tuple[JobRegistry, dict[str, Any]]:
    registry = JobRegistry()
    tools = standard_tools(tmp_path, cache_dir=tmp_path / "cache", include_web=False, jobs=registry)
    return registry, {t.name: t for t in tools}


@pytest.mark.asyncio
async def test_shell_background_job_outlives_the_call_and_stops_its_whole_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBS_API_TOKEN", FAKE_TOKEN)
    registry, tools = job_tools_for(tmp_path)
    tag = marker()
    command = (
        'echo "token $JOBS_API_TOKEN"; for i in 1 2 3; do echo line $i; done; '
        f"sleep {tag} & sleep {tag}"
    )
    started = await call(tools, "shell", command=command, background=True)
    assert started["state"] == "background"
    job_id = started["job_id"]
    job = registry.get(job_id)
    await wait_until(lambda: "line 3" in job.output.text, "the job's output")
    await wait_until(lambda: len(live_processes(tag)) >= 2, "both sleeps running")
    listed = await call(tools, "job_list", running_only=True)
    assert f"{job_id} [shell] running" in listed
    read = await call(tools, "job_output", job_id=job_id)
    assert "line 1\nline 2\nline 3" in read
    assert FAKE_TOKEN not in read  # secrets from the environment are masked
    again = await call(tools, "job_output", job_id=job_id)
    assert "[output since last read] (none)" in again
    waited = await call(tools, "job_wait", job_id=job_id, timeout_seconds=0.3)
    assert "[wait] still running after 0 s of waiting" in waited
    stopped = await call(tools, "job_stop", job_id=job_id)
    assert f"{job_id} [shell] stopped" in stopped
    assert "terminated by SIGTERM" in stopped
    await wait_until(lambda: not live_processes(tag), "no process of the group left")
    everything = await call(tools, "job_output", job_id=job_id, since="start", tail_lines=2)
    assert "line 2\nline 3" in everything and "line 1" not in everything


@pytest.mark.asyncio
async def test_job_wait_returns_when_the_job_ends_with_its_exit_code(tmp_path: Path) -> None:
    registry, tools = job_tools_for(tmp_path)
    started = await call(tools, "shell", command="echo done; exit 3", background=True)
    waited = await call(tools, "job_wait", job_id=started["job_id"], timeout_seconds=60)
    assert f"{started['job_id']} [shell] failed" in waited
    assert "(exit code 3)" in waited
    assert "done" in waited
    # Its end was shown by job_wait, so the next turn's notice has nothing to say.
    assert registry.turn_notice() is None


@pytest.mark.asyncio
async def test_unknown_job_and_shell_without_registry_fail_clearly(tmp_path: Path) -> None:
    _registry, tools = job_tools_for(tmp_path)
    for name in ("job_output", "job_wait", "job_stop"):
        with pytest.raises(
            JobNotFoundError, match=r"No background job 'job-999999'\. No jobs were started"
        ):
            await tools[name].execute_raw(json.dumps({"job_id": "job-999999"}), ToolContext())
    plain = shell_tool(tmp_path)
    with pytest.raises(ToolError, match="Background shell jobs are not available here"):
        await plain.execute_raw(
            json.dumps({"command": "sleep 1", "background": True}), ToolContext()
        )


@pytest.mark.asyncio
async def test_turn_notice_lists_running_and_newly_finished_jobs(tmp_path: Path) -> None:
    registry, tools = job_tools_for(tmp_path)
    assert registry.turn_notice() is None
    quick = await call(tools, "shell", command="echo quick", background=True)
    slow = await call(tools, "shell", command="sleep 30", background=True)
    quick_job = registry.get(quick["job_id"])
    await wait_until(quick_job.done.is_set, "the quick job to end")
    notice = registry.turn_notice()
    assert notice is not None
    assert f"finished since your last turn: {quick['job_id']} [shell] completed" in notice
    assert "characters of output not read yet" in notice
    assert f"still running: {slow['job_id']} [shell] running" in notice
    second = registry.turn_notice()
    assert second is not None and quick["job_id"] not in second
    registry.stop_all()
    await wait_until(registry.get(slow["job_id"]).done.is_set, "the slow job to stop")


def test_job_output_is_bounded_and_reads_progress_and_carriage_returns() -> None:
    from jupyter_codelia.standard_tools import jobs

    output = JobOutput()
    output.write("x" * (jobs.MAX_JOB_OUTPUT_CHARS - 10))
    output.write("\nfirst\n 10%|#         | 10/100 [00:01<00:09]\r 55%|#####     | 55/100 [00:05")
    assert len(output.text) == jobs.MAX_JOB_OUTPUT_CHARS
    assert output.dropped_chars > 0
    text, lost = output.since(0)
    assert lost == output.dropped_chars and text.endswith("55/100 [00:05")
    progress = output.progress()
    assert progress is not None and (progress.percent, progress.done, progress.total) == (
        55,
        "55",
        "100",
    )
    assert output.last_lines(2) == ["first", " 55%|#####     | 55/100 [00:05"]


@pytest.mark.asyncio
async def test_long_job_output_is_paged_through_the_output_cache(tmp_path: Path) -> None:
    from jupyter_codelia.agent import Agent
    from jupyter_codelia.llm.anthropic import AnthropicChat
    from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

    registry, _tools = job_tools_for(tmp_path)
    tools = standard_tools(tmp_path, cache_dir=tmp_path / "cache", include_web=False, jobs=registry)
    started = await call(
        {t.name: t for t in tools},
        "shell",
        command='for i in $(seq 1 20000); do echo "row $i of the long job output"; done',
        background=True,
    )
    job = registry.get(started["job_id"])
    await wait_until(job.done.is_set, "the job to end")
    script = [
        reply(tool_use("job_output", {"job_id": job.job_id})),
        reply(text("read it")),
    ]
    with ScriptedAnthropicServer(script) as server:
        chat = AnthropicChat(model="claude-sonnet-5-5", base_url=server.url, api_key="sk-test")
        agent = Agent(chat, tools)
        await agent.run("read the job")
        result = next(
            block
            for message in server.requests[-1].messages
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        )
    seen = json.dumps(result)
    assert "row 1 of the long job output" in seen
    assert "row 20000 of" not in seen  # cut in context ...
    ref = re.search(r"\[tool output truncated; ref=([A-Za-z0-9_-]+)\]", seen)
    assert ref is not None
    cached = await call({t.name: t for t in tools}, "tool_output_cache", ref_id=ref.group(1),
                        offset=19990, limit=20)  # fmt: skip
    assert "row 20000 of the long job output" in cached  # ... and paged from the cache
