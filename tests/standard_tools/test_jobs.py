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
from jupyter_codelia.tools import ToolContext, ToolError, ToolReturn

from .test_shell import live_processes, marker, wait_until

FAKE_TOKEN = "tok-FAKE-jobs-0123456789abcdef"


async def call(tools: dict[str, Any], name: str, **args: Any) -> Any:
    result = await tools[name].execute_raw(json.dumps(args), ToolContext(tool_call_id="c1"))
    if isinstance(result, ToolReturn):  # a started job: its id is also in the result's data
        assert result.data.job_id is not None
        result = result.value
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


# --- output: masked as it arrives, bounded, visible ---------------------------------------------


def test_a_secret_split_across_writes_is_masked_whatever_comes_between(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBS_API_TOKEN", FAKE_TOKEN)
    for cut in range(1, len(FAKE_TOKEN)):
        output = JobOutput()
        reads = [output.since(0)[0]]
        output.write(f"token {FAKE_TOKEN[:cut]}", "stdout")
        reads.append(output.since(0)[0])  # a card looking while the stream pauses
        output.write(" 12%|#  | 12/100\r", "stderr")
        reads.append(output.since(0)[0])
        output.write(f"{FAKE_TOKEN[cut:]} done\n", "stdout")
        reads.append(output.since(0)[0])
        output.close()
        reads.append(output.text)
        for read in reads:
            for fragment in (FAKE_TOKEN[:cut], FAKE_TOKEN[cut:]):
                if len(fragment) >= 4:
                    assert fragment not in read, (cut, read)
        # The held start of the secret waits for its end; the other stream is not held up.
        assert output.text == "token  12%|#  | 12/100\r[REDACTED] done\n", cut


def test_a_secret_split_by_one_writer_is_masked_whatever_other_writers_print_between(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    monkeypatch.setenv("JOBS_API_TOKEN", FAKE_TOKEN)
    output = JobOutput()
    buffered = output.buffer()  # a python job's own thread appends here, without a lock
    buffered.items.append(f"token {FAKE_TOKEN[:9]}")
    reads = [output.since(0)[0]]

    def other_thread() -> None:  # a thread the job started writes straight to the output
        output.write("from another thread\n")

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    reads.append(output.since(0)[0])
    buffered.items.append(f"{FAKE_TOKEN[9:]} end\n")
    buffered.retire()
    output.close()
    for read in [*reads, output.text]:
        assert FAKE_TOKEN[:9] not in read and FAKE_TOKEN[9:] not in read, read
    assert output.text == "token from another thread\n[REDACTED] end\n"


def test_a_paused_job_shows_its_last_line_at_once() -> None:
    output = JobOutput()
    output.write("loading\nepoch 3 loss=0.123")
    assert output.last_lines() == ["loading", "epoch 3 loss=0.123"]
    assert output.since(0) == ("loading\nepoch 3 loss=0.123", 0)


def test_many_small_writes_are_buffered_and_masked_in_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jupyter_codelia import _redact

    monkeypatch.setenv("JOBS_API_TOKEN", FAKE_TOKEN)
    feeds: list[int] = []
    original = _redact.StreamRedactor.feed

    def counted(self: _redact.StreamRedactor, piece: str) -> str:
        feeds.append(len(piece))
        return original(self, piece)

    monkeypatch.setattr(_redact.StreamRedactor, "feed", counted)
    output = JobOutput()
    for index in range(100_000):
        output.write(f"{index} {FAKE_TOKEN}" if index % 1000 == 0 else str(index))
        output.write("\n")
    text, _lost = output.since(0)
    assert FAKE_TOKEN not in text and text.count("[REDACTED]") == 100
    assert text.endswith("99998\n99999\n")
    # 200,000 writes, masked in a few dozen batches: nothing is scanned per write.
    assert len(feeds) <= sum(feeds) // (64 * 1024) + 2


def test_endless_output_without_newlines_stays_bounded_and_its_end_visible() -> None:
    from jupyter_codelia.standard_tools import jobs

    output = JobOutput()
    piece = "x" * 1_000_000
    for _ in range(10):
        output.write(piece)
    output.write("...THE-END")
    assert output.tail(10) == "...THE-END"
    assert output.end == 10_000_010
    assert len(output.text) == jobs.MAX_JOB_OUTPUT_CHARS
    assert output.last_lines() == ["…" + ("x" * 290) + "...THE-END"]


# --- shell jobs under their guard --------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_shell_job_printing_without_newlines_shows_its_end_and_keeps_all_in_the_cache(
    tmp_path: Path,
) -> None:
    from jupyter_codelia.cache import ToolOutputCacheStore

    store = ToolOutputCacheStore(tmp_path / "cache", max_entry_bytes=8_000_000)
    registry = JobRegistry()  # standard_tools gives it the tool set's store
    tools = {
        t.name: t
        for t in standard_tools(tmp_path, output_store=store, include_web=False, jobs=registry)
    }
    tag = marker()
    command = f"head -c 30000000 /dev/zero | tr '\\0' x; printf 'END-OF-LINE'; sleep {tag}"
    started = await call(tools, "shell", command=command, background=True)
    job = registry.get(started["job_id"])
    await wait_until(lambda: job.output.tail(11) == "END-OF-LINE", "the end of the line", 60)
    read = await call(tools, "job_output", job_id=job.job_id, tail_lines=1)
    assert read.rstrip().endswith("xxxxEND-OF-LINE")
    assert "earlier characters were dropped from memory; the whole output goes to the " in read
    assert len(job.output.text) <= 2_000_000
    stopped = await call(tools, "job_stop", job_id=job.job_id)
    assert f"{job.job_id} [shell] stopped" in stopped
    assert job.full_output_ref is not None
    again = await call(tools, "job_output", job_id=job.job_id, since="start", tail_lines=1)
    ref = job.full_output_ref
    assert f'the whole output is in the output cache: tool_output_cache({{"ref_id": "{ref}"}})' in (
        again
    )
    assert store.get_entry(ref).size_bytes <= 8_000_000 + 1000  # within the per-entry cap
    assert "bytes dropped from the middle" in store.grep(ref, "bytes dropped from the middle")
    # Its head, the note, and the tail window that ends with the last characters written.
    assert "match at line 3 " in store.grep(ref, "END-OF-LINE")


HOST = """
import sys, time
from pathlib import Path
from jupyter_codelia.standard_tools.jobs import JobRecords, JobRegistry, start_shell_job
registry = JobRegistry(records=JobRecords(lambda: Path(sys.argv[1])))
for command in sys.argv[2:]:
    start_shell_job(registry, command, ".", dict(__import__("os").environ), "/bin/bash")
print("started", flush=True)
time.sleep(600)
"""


def test_jobs_end_when_their_host_is_killed_and_the_next_one_says_so(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from jupyter_codelia.standard_tools.jobs import JobRecords

    tag = marker()
    commands = [
        f"trap '' TERM; sleep {tag}; echo never",
        f"(setsid sleep {tag} &); sleep {tag}",
        f"setsid sleep {tag} & sleep {tag} & wait",
    ]
    records = tmp_path / "records"
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, str(records), *commands], stdout=subprocess.PIPE
    )
    assert host.stdout is not None and host.stdout.readline() == b"started\n"
    deadline = time.monotonic() + 20
    while len(live_processes(tag)) < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(live_processes(tag)) >= 6
    assert len(list(records.glob("*.json"))) == 3
    os.kill(host.pid, signal.SIGKILL)
    host.wait()
    deadline = time.monotonic() + 30
    while live_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_processes(tag) == []
    previous = JobRecords(lambda: records).previous()
    assert sorted(job.job_id for job in previous) == ["job-1", "job-2", "job-3"]
    assert {job.outcome for job in previous} == {
        "stopped when the kernel ended (its processes got SIGTERM, then SIGKILL)"
    }
    assert list(records.glob("*.json")) == []  # reported once, then forgotten


@pytest.mark.asyncio
async def test_job_stop_reaches_setsid_children_and_a_job_lasts_as_long_as_its_processes(
    tmp_path: Path,
) -> None:
    registry, tools = job_tools_for(tmp_path)
    tag = marker()
    escaped = await call(
        tools, "shell", command=f"setsid sleep {tag} & sleep {tag} & exit 0", background=True
    )
    job = registry.get(escaped["job_id"])
    await wait_until(lambda: job.note is not None, "the command's exit with children left", 30)
    assert job.running
    listed = await call(tools, "job_list")
    assert "note: its command exited (exit code 0); processes it started are still running" in (
        listed
    )
    assert len(live_processes(tag)) == 3  # its guard (the command is its argument) and two
    stopped = await call(tools, "job_stop", job_id=job.job_id)
    assert f"{job.job_id} [shell] stopped" in stopped
    assert live_processes(tag) == []


@pytest.mark.asyncio
async def test_a_killed_guard_ends_the_job_and_says_so(tmp_path: Path) -> None:
    import os
    import signal

    registry, tools = job_tools_for(tmp_path)
    tag = marker()
    started = await call(tools, "shell", command=f"sleep {tag}", background=True)
    job = registry.get(started["job_id"])
    await wait_until(lambda: len(live_processes(tag)) == 2, "the guard and the command to run")
    os.kill(job.record_extra["guard_pid"], signal.SIGKILL)
    await wait_until(job.done.is_set, "the job to end with its guard")
    assert job.state == "failed"
    assert job.summary == "its guard process ended unexpectedly (terminated by SIGKILL)"
    await wait_until(lambda: not live_processes(tag), "the command to die with its guard")


def test_end_trees_ends_a_process_and_its_children_but_never_a_reused_pid() -> None:
    import subprocess
    import time

    from jupyter_codelia.standard_tools._job_guard import end_trees, process_start

    tag = marker()
    parent = subprocess.Popen(["/bin/bash", "-c", f"trap '' TERM; sleep {tag} & wait"])
    deadline = time.monotonic() + 20
    while len(live_processes(tag)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    start = process_start(parent.pid)
    assert start is not None
    assert end_trees({parent.pid: "not-its-start"}, grace=0.2) == 0
    assert len(live_processes(tag)) == 2  # a pid with another start is someone else's
    assert end_trees({parent.pid: start}, grace=0.5) == 2  # SIGTERM ignored: both SIGKILLed
    parent.wait()
    deadline = time.monotonic() + 10
    while live_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_processes(tag) == []


def test_job_records_of_a_dead_kernel_are_reported_once_and_bad_ones_dropped(
    tmp_path: Path,
) -> None:
    import json as json_module
    import subprocess
    import sys

    from jupyter_codelia.standard_tools._job_guard import process_start
    from jupyter_codelia.standard_tools.jobs import JobRecords

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a kernel process that has ended
    ending = subprocess.Popen(["sleep", "30"])  # stands in for a guard still at work
    directory = tmp_path / "jobs"
    old = JobRecords(lambda: directory, kernel_pid=gone.pid)
    old.save("job-1", "python", "train()", 1_700_000_000.0)
    old.save("job-2", "shell", "serve", 1_700_000_001.0, guard_pid=ending.pid,
             guard_start=process_start(ending.pid))  # fmt: skip
    (directory / "999-job-9.json").write_text("{not json", encoding="utf-8")
    (directory / "998-job-8.json").write_text(json_module.dumps({"job_id": 3}), encoding="utf-8")
    try:
        records = JobRecords(lambda: directory)
        first = {job.job_id: job.outcome for job in records.previous()}
        assert first == {
            "job-1": "ended with the kernel (python jobs run on the kernel's threads)",
            "job-2": "being stopped: its guard is ending its processes (the kernel ended)",
        }
        assert sorted(p.name for p in directory.iterdir()) == [f"{gone.pid}-job-2.json"]
    finally:
        ending.kill()
        ending.wait()
    again = {job.job_id: job.outcome for job in records.previous()}
    assert again["job-2"] == "ended with the kernel (its guard process is gone too)"
    assert list(directory.iterdir()) == []
    assert "job-1 [python] started " in records.previous()[0].line()


class _FullDiskWriter:
    """An output-cache writer on a disk that fills up after its first megabyte."""

    ref_id = "job-x_output"

    def __init__(self) -> None:
        self.written = 0
        self.aborted = False

    def write(self, text: str) -> None:
        import errno

        if self.written > 1_000_000:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.written += len(text)

    def close(self) -> Any:
        raise AssertionError("a failed entry is never committed")

    def abort(self) -> None:
        self.aborted = True


def test_a_full_disk_never_fails_a_job_and_the_model_hears_why_the_rest_is_gone() -> None:
    from jupyter_codelia.standard_tools.jobs import Job, read_new_output

    writer = _FullDiskWriter()
    job = Job(job_id="job-x", kind="python", title="print", stop_fn=lambda: None,
              output=JobOutput(writer))  # fmt: skip
    for _ in range(40):
        job.write("y" * 100_000 + "\n")  # 4 MB: memory keeps 2 MB, the disk fills at 1 MB
    job.finish("completed")
    assert writer.aborted and job.state == "completed" and job.full_output_ref is None
    read = read_new_output(job, "start", 1)
    assert (
        "earlier characters were dropped from memory; the output cache could not keep it "
        "(OSError: [Errno 28] No space left on device)" in read
    ), read
