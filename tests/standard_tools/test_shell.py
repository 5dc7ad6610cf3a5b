"""The shell tool: real subprocesses, real process groups, the real output cache."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from jupyter_codelia._text import utf8_len
from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.llm.messages import TextPart
from jupyter_codelia.standard_tools.shell import shell_tool
from jupyter_codelia.tools import CancelSignal, RunCancelled, ToolContext, ToolError, ToolInputError

FAKE_TOKEN = "tok-FAKE-shell-0123456789abcdef"


async def run(
    tool: Any, ctx: ToolContext | None = None, call_id: str = "call_1", **args: Any
) -> Any:
    context = ctx or ToolContext()
    context.tool_call_id = context.tool_call_id or call_id
    result = await tool.execute_raw(json.dumps(args), context)
    assert result.type == "json"
    return result.value


def marker() -> str:
    """A unique, harmless sleep duration that tags the processes of one test."""
    return f"{900000 + uuid.uuid4().int % 99999}.{uuid.uuid4().int % 1000:03d}"


def live_processes(tag: str) -> list[psutil.Process]:
    """Processes whose command line carries ``tag`` and are not yet dead (zombies are dead)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            tagged = tag in " ".join(proc.info["cmdline"] or [])
            if tagged and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


async def wait_until(predicate: Any, what: str, limit_s: float = 20.0) -> None:
    """Poll ``predicate`` (a generous bound: this is a liveness check, not a speed check)."""
    deadline = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
def store(tmp_path: Path) -> ToolOutputCacheStore:
    return ToolOutputCacheStore(tmp_path / "cache")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.mark.asyncio
async def test_success_returns_stdout_only(workdir: Path, store: ToolOutputCacheStore) -> None:
    tool = shell_tool(workdir, store)
    out = await run(tool, command="echo hello; echo warning >&2; pwd; printf 'x  \\n\\n\\n'")
    assert list(out) == ["state", "command", "exit_code", "duration_ms", "stdout"]
    assert out["state"] == "completed"
    assert out["exit_code"] == 0
    assert out["duration_ms"] >= 0
    assert out["stdout"] == f"hello\n{workdir}\nx"
    both = await run(tool, command="echo out; echo err >&2", include_stderr_on_success=True)
    assert (both["stdout"], both["stderr"]) == ("out", "err")


@pytest.mark.asyncio
async def test_failure_includes_stderr_and_the_reason(workdir: Path) -> None:
    tool = shell_tool(workdir)
    out = await run(tool, command="echo partial; echo 'boom' >&2; exit 3")
    assert out["state"] == "failed"
    assert out["exit_code"] == 3
    assert out["failure_message"] == "exited with code 3"
    assert (out["stdout"], out["stderr"]) == ("partial", "boom")
    killed = await run(tool, command="kill -9 $$")
    assert killed["failure_message"] == "terminated by SIGKILL"
    assert killed["exit_code"] == -9


@pytest.mark.asyncio
async def test_env_cwd_and_bad_directory(workdir: Path, tmp_path: Path) -> None:
    tool = shell_tool(workdir, env={"PATH": os.environ["PATH"], "GREETING": "hi there"})
    out = await run(tool, command='echo "$GREETING in $PWD with $PAGER"; echo ${HOME:-nohome}')
    assert out["stdout"] == f"hi there in {workdir} with cat\nnohome"
    missing = shell_tool(tmp_path / "gone")
    with pytest.raises(ToolError) as info:
        await run(missing, command="true")
    assert str(info.value) == f"Working directory does not exist: {tmp_path / 'gone'}"


@pytest.mark.asyncio
async def test_undecodable_bytes_become_replacement_chars(workdir: Path) -> None:
    out = await run(shell_tool(workdir), command=r"printf 'caf\xe9 ok\n'")
    assert out["stdout"] == "caf\ufffd ok"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"command": ""}, "command"),
        ({"command": "true", "timeout": 301}, "timeout"),
        ({"command": "true", "timeout": 0}, "timeout"),
        ({"command": "true", "label": "x" * 81}, "label"),
        ({"command": "true", "detached_wait": True}, 'Unrecognized key: "detached_wait"'),
    ],
)
async def test_input_validation(workdir: Path, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolInputError) as info:
        await run(shell_tool(workdir), **args)
    assert "Tool input validation failed for shell: " in str(info.value)
    assert message in str(info.value)


@pytest.mark.asyncio
async def test_timeout_stops_the_whole_process_group(workdir: Path) -> None:
    tag = marker()
    command = f"trap '' TERM; sleep {tag} & (sleep {tag}; true) & echo started; sleep {tag}"
    out = await run(shell_tool(workdir), command=command, timeout=1)
    assert out["state"] == "timed_out"
    assert out["failure_message"] == "timed out after 1s; the command's process group was stopped"
    assert out["stdout"] == "started"
    await wait_until(lambda: not live_processes(tag), "no process of the command left")


@pytest.mark.asyncio
async def test_cancel_signal_kills_children_and_raises(workdir: Path) -> None:
    tag = marker()
    signal = CancelSignal()
    ctx = ToolContext(signal=signal)
    task = asyncio.create_task(
        run(shell_tool(workdir), ctx, command=f"sleep {tag} & sleep {tag} & wait")
    )
    await wait_until(lambda: len(live_processes(tag)) >= 2, "the children started")
    signal.cancel("stop pressed")
    with pytest.raises(RunCancelled, match="stop pressed"):
        await task
    await wait_until(lambda: not live_processes(tag), "no child left after cancel")


@pytest.mark.asyncio
async def test_task_cancellation_kills_children(workdir: Path, store: ToolOutputCacheStore) -> None:
    tag = marker()
    task = asyncio.create_task(
        run(shell_tool(workdir, store), command=f"seq 1 500; sleep {tag} & sleep {tag}")
    )
    await wait_until(lambda: len(live_processes(tag)) >= 2, "the children started")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not live_processes(tag), "no child left after task cancel")
    assert list((store.root).glob("*_stdout*")) == []


@pytest.mark.asyncio
async def test_background_jobs_end_with_the_command(workdir: Path) -> None:
    tag = marker()
    out = await run(shell_tool(workdir), command=f"sleep {tag} & echo started")
    assert out["stdout"] == "started"
    await wait_until(lambda: not live_processes(tag), "background job stopped")


@pytest.mark.asyncio
async def test_inline_limit_is_160_lines(workdir: Path, store: ToolOutputCacheStore) -> None:
    tool = shell_tool(workdir, store)
    inline = await run(tool, command="seq 1 160")
    assert inline["stdout"] == "\n".join(str(i) for i in range(1, 161))
    assert "stdout_cache_id" not in inline
    out = await run(tool, call_id="call_2", command="seq 1 161")
    lines = out["stdout"].split("\n")
    assert lines[:80] == [str(i) for i in range(1, 81)]
    assert lines[81:] == [str(i) for i in range(82, 162)]
    assert lines[80] == (
        "[... 1 lines omitted (161 lines, 536 bytes in all); the full stdout is in the output "
        'cache: tool_output_cache({"ref_id":"call_2_stdout"}) reads it, tool_output_cache_grep '
        "searches it ...]"
    )
    assert out["stdout_cache_id"] == "call_2_stdout"
    assert store.read_tail("call_2_stdout", 3).split("\n")[:2] == ["160", "161"]


@pytest.mark.asyncio
async def test_inline_limit_is_64_kib(workdir: Path, store: ToolOutputCacheStore) -> None:
    tool = shell_tool(workdir, store)
    fits = await run(tool, command="head -c 65536 /dev/zero | tr '\\0' a")
    assert fits["stdout"] == "a" * 65536
    over = await run(tool, call_id="call_2", command="head -c 65537 /dev/zero | tr '\\0' a")
    assert over["stdout"].startswith("a" * 2000 + " … [+63537 chars]\n[... 0 lines omitted")
    assert over["stdout_cache_id"] == "call_2_stdout"
    assert store.get_entry("call_2_stdout").size_bytes == 65537


@pytest.mark.asyncio
async def test_long_output_without_a_store_says_it_was_not_kept(workdir: Path) -> None:
    out = await run(shell_tool(workdir), command="seq 1 1000")
    assert "the full stdout was not kept (no output cache configured)" in out["stdout"]
    assert "stdout_cache_id" not in out


@pytest.mark.asyncio
async def test_long_stderr_of_a_failure_is_cached_too(
    workdir: Path, store: ToolOutputCacheStore
) -> None:
    out = await run(shell_tool(workdir, store), command="seq 1 1000 >&2; exit 1")
    assert out["stderr_cache_id"] == "call_1_stderr"
    assert out["stderr"].endswith("\n999\n1000")
    assert "stdout_cache_id" not in out
    assert store.get_entry("call_1_stderr").line_count >= 1000


@pytest.mark.asyncio
async def test_secrets_are_masked_inline_and_in_the_cache(
    workdir: Path, store: ToolOutputCacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", FAKE_TOKEN)
    tool = shell_tool(workdir, store)
    out = await run(tool, command='echo "token=$SERVICE_TOKEN"')
    assert out["stdout"] == "token=[REDACTED]"
    # A long stream whose secret copies straddle the 64 KiB pipe reads.
    script = (
        "import os, sys\n"
        "t = os.environ['SERVICE_TOKEN']\n"
        "for i in range(4000):\n"
        "    sys.stdout.write('x' * (i % 97) + t + '\\n')\n"
    )
    (workdir / "leak.py").write_text(script)
    out = await run(tool, call_id="call_2", command=f"{sys.executable} leak.py")
    assert FAKE_TOKEN not in json.dumps(out)
    cached = "".join(store.read("call_2_stdout", start, 300) for start in range(0, 4000, 300))
    assert FAKE_TOKEN not in cached
    assert cached.count("[REDACTED]") == 4000
    custom = shell_tool(workdir, env={"PATH": os.environ["PATH"], "DB_PASSWORD": "hunter2-hunter2"})
    out = await run(custom, command="echo $DB_PASSWORD")
    assert out["stdout"] == "[REDACTED]"


@pytest.mark.asyncio
@pytest.mark.parametrize("filler", ["a", " ", "é"])
async def test_a_secret_straddling_a_long_line_cut_is_masked_whole(
    workdir: Path, store: ToolOutputCacheStore, monkeypatch: pytest.MonkeyPatch, filler: str
) -> None:
    """2 MB with no newline and a token every 67 characters: the redactor must cut this line
    somewhere, and whatever the pipe's read sizes, a cut through a token must not leak it."""
    monkeypatch.setenv("SERVICE_TOKEN", FAKE_TOKEN)
    copies = 2 * 1024 * 1024 // 67
    script = (
        "import os, sys\n"
        "t = os.environ['SERVICE_TOKEN']\n"
        f"sys.stdout.write(({filler!r} * 37 + t) * {copies})\n"
    )
    (workdir / "long_line.py").write_text(script, encoding="utf-8")
    out = await run(shell_tool(workdir, store), command=f"{sys.executable} long_line.py")
    assert FAKE_TOKEN not in json.dumps(out)
    cached = store.read_parts("call_1_stdout", max_text_bytes=1 << 24)[0]
    assert isinstance(cached, TextPart)
    assert FAKE_TOKEN[:12] not in cached.text and FAKE_TOKEN[-12:] not in cached.text
    assert cached.text == (filler * 37 + "[REDACTED]") * copies


@pytest.mark.asyncio
async def test_a_runaway_stream_stops_growing_the_cache_and_the_result_says_so(
    workdir: Path, tmp_path: Path
) -> None:
    """``yes`` until the timeout must not fill the disk: past the per-entry limit the middle is
    dropped, the head and the newest output are kept, and the result tells the model."""
    store = ToolOutputCacheStore(tmp_path / "small-cache", max_bytes=2_000_000)
    out = await run(shell_tool(workdir, store), command="yes | head -c 20000000; echo THE END")
    assert out["state"] == "completed"
    entry = store.get_entry("call_1_stdout")
    assert entry.size_bytes < 500_000 + 200
    assert out["stdout_cache_note"].startswith(
        "the cached stdout passed the cache's per-entry size limit: "
    )
    assert out["stdout_cache_note"].endswith(
        " bytes in the middle were dropped; its head and tail are kept"
    )
    assert store.read_tail("call_1_stdout", 2) == "THE END\n"
    assert "bytes dropped from the middle" in store.grep("call_1_stdout", "dropped")


@pytest.mark.asyncio
@pytest.mark.slow
async def test_50_mb_of_output_keeps_context_bounded_and_cache_complete(
    workdir: Path, store: ToolOutputCacheStore
) -> None:
    size = 50 * 1024 * 1024
    command = f"yes 'a line of output that repeats' | head -c {size}"
    tracemalloc.start()
    try:
        out = await run(shell_tool(workdir, store), command=command)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out["state"] == "completed"
    assert utf8_len(out["stdout"]) < 8 * 1024
    lines = out["stdout"].split("\n")
    assert lines[0] == "a line of output that repeats"
    assert "lines omitted" in lines[80]
    assert "52,428,800 bytes in all" in lines[80]
    assert len(lines) == 161
    entry = store.get_entry(out["stdout_cache_id"])
    assert entry.size_bytes == size
    assert peak < 16 * 1024 * 1024, f"peak Python memory {peak:,} bytes"


@pytest.mark.asyncio
@pytest.mark.slow
async def test_one_50_mb_line_is_clipped_in_context(
    workdir: Path, store: ToolOutputCacheStore
) -> None:
    size = 50 * 1024 * 1024
    out = await run(shell_tool(workdir, store), command=f"head -c {size} /dev/zero | tr '\\0' z")
    assert out["stdout"].startswith("z" * 2000 + f" … [+{size - 2000} chars]\n[... 0 lines")
    assert utf8_len(out["stdout"]) < 4 * 1024
    assert store.get_entry("call_1_stdout").size_bytes == size


@pytest.mark.asyncio
async def test_excerpt_of_a_long_stream_is_exact(
    workdir: Path, store: ToolOutputCacheStore
) -> None:
    out = await run(shell_tool(workdir, store), command="seq 1 200000; printf '\\n\\n  \\n'")
    lines = out["stdout"].split("\n")
    assert lines[:80] == [str(i) for i in range(1, 81)]
    assert lines[81:] == [str(i) for i in range(199921, 200001)]
    assert lines[80].startswith(
        "[... 199,840 lines omitted (200,000 lines, 1,288,900 bytes in all);"
    )
    assert store.get_entry("call_1_stdout").size_bytes == 1_288_900


@pytest.mark.asyncio
async def test_an_already_cancelled_run_starts_nothing(workdir: Path) -> None:
    signal = CancelSignal()
    signal.cancel("cancelled before the call")
    with pytest.raises(RunCancelled, match="cancelled before the call"):
        await run(shell_tool(workdir), ToolContext(signal=signal), command="touch started")
    assert not (workdir / "started").exists()


@pytest.mark.asyncio
async def test_a_missing_shell_in_env_falls_back_to_bash(workdir: Path) -> None:
    env = {"PATH": os.environ["PATH"], "SHELL": str(workdir / "no-such-shell")}
    out = await run(shell_tool(workdir, env=env), command='echo "$BASH_VERSION" | cut -c1')
    assert out["state"] == "completed"
    assert out["stdout"].isdigit()


@pytest.mark.asyncio
async def test_a_cancel_while_the_shell_is_starting_stops_its_children_too(workdir: Path) -> None:
    tag = marker()
    signal = CancelSignal()
    task = asyncio.create_task(
        run(shell_tool(workdir), ToolContext(signal=signal), command=f"sleep {tag} & wait")
    )
    # Yield one loop turn at a time until the shell exists, then hold the loop (a blocking wait
    # on purpose) until its child runs: the start has not been told the pipes are connected yet.
    while not live_processes(tag):
        await asyncio.sleep(0)
    deadline = time.monotonic() + 20
    while len(live_processes(tag)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # noqa: ASYNC251 - the loop must not run here
    signal.cancel("stop pressed")
    with pytest.raises(RunCancelled, match="stop pressed"):
        await asyncio.wait_for(task, 20)
    await wait_until(lambda: not live_processes(tag), "no child left after cancel")
