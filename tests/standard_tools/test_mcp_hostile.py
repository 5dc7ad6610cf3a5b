"""A hostile or broken MCP server must not hurt the run (our scripted server, real SDK)."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.llm.messages import ImagePart, TextPart
from jupyter_codelia.standard_tools.mcp import McpServerConfig, McpServers, McpTool
from jupyter_codelia.tools import PartsResult, TextResult, ToolContext

SERVER_SCRIPT = str(Path(__file__).parent / "_mcp_server.py")


def stdio(*args: str, **settings: object) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[SERVER_SCRIPT, *args], **settings)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def servers() -> Iterator[McpServers]:
    mcp = McpServers({"t": stdio("stdio")})
    yield mcp
    mcp.close()


def named(mcp: McpServers) -> dict[str, McpTool]:
    tools, failures = mcp.tools()
    assert failures == {}
    return {t.name: t for t in tools if isinstance(t, McpTool)}


def call(tool: McpTool, args: str = "{}", ctx: ToolContext | None = None) -> object:
    return asyncio.run(tool.execute_raw(args, ctx or ToolContext(tool_call_id="c1")))


def test_names_that_sanitise_alike_stay_unique_reachable_and_shown(servers: McpServers) -> None:
    tools = named(servers)
    dotted = [t for t in tools.values() if t.remote_name == "a.b"][0]
    plain = tools["t__a_b"]
    assert plain.remote_name == "a_b"  # the exact name keeps its plain form
    assert dotted.name.startswith("t__a_b_") and dotted.name != "t__a_b"
    assert call(dotted) == TextResult(text="from a.b")
    assert call(plain) == TextResult(text="from a_b")
    long_tools = [t for t in tools.values() if t.remote_name.startswith("x" * 70)]
    assert len({t.name for t in long_tools}) == 2
    assert all(len(t.name) <= 64 for t in long_tools)
    assert {call(t) for t in long_tools} == {TextResult(text="long 1"), TextResult(text="long 2")}  # type: ignore[arg-type]
    assert len({t.name for t in tools.values()}) == len(tools)
    listing = servers.describe()
    assert f"    {dotted.name}  <- 'a.b'" in listing
    assert "    t__a_b\n" in listing
    assert "tool 'a.b'" in dotted.description  # the model sees the server's own name too
    assert named(servers)[dotted.name].remote_name == "a.b"  # stable across listings


def test_a_text_blob_is_decoded_and_a_binary_one_described(servers: McpServers) -> None:
    tools = named(servers)
    assert call(tools["t__text_blob"]) == TextResult(
        text="[resource file:///report.csv]\nname,total\nalice,3\n"
    )
    described = call(tools["t__binary_blob"])
    assert isinstance(described, TextResult)
    assert described.text.startswith("[resource file:///data.gz: application/gzip, ")
    assert "bytes of gzip-compressed data, not shown]" in described.text


def test_a_long_single_line_keeps_a_head_and_a_tail_with_the_ref(
    servers: McpServers, tmp_path: Path
) -> None:
    from jupyter_codelia.cache import ToolOutputCache
    from jupyter_codelia.llm.messages import ToolMessage

    result = call(named(servers)["t__minified"], '{"kilobytes": 200}')
    assert isinstance(result, TextResult)
    raw = result.text
    assert "\n" not in raw and len(raw) > 200_000
    cache = ToolOutputCache(ToolOutputCacheStore(tmp_path))
    message = ToolMessage(tool_call_id="c9", tool_name="t__minified", content=raw)
    shown = str(cache.process(message).content)
    assert shown.startswith(raw[:1000])
    assert raw[-500:] + "\n\n[tool output truncated; ref=c9]" in shown
    assert "ref=c9" in shown
    assert 10_000 < len(shown) < 60_000


def test_a_50_mb_image_is_downscaled_like_view_image(servers: McpServers) -> None:
    result = call(named(servers)["t__big_image"], '{"megabytes": 50}')
    assert isinstance(result, PartsResult)
    note, image = result.parts
    assert isinstance(note, TextPart) and "Downsized from" in note.text
    assert isinstance(image, ImagePart)
    assert len(base64.b64decode(image.image_url.url.split(",", 1)[1])) * 4 / 3 <= 5 * 1024 * 1024


@pytest.mark.slow
def test_a_200_mb_result_streams_into_the_cache_and_the_server_stays_usable(
    tmp_path: Path,
) -> None:
    # In a process of its own, so its peak memory is this call's alone.
    probe = textwrap.dedent(
        f"""
        import asyncio, resource, sys
        from pathlib import Path
        from jupyter_codelia.cache import ToolOutputCacheStore
        from jupyter_codelia.standard_tools.mcp import McpServerConfig, McpServers
        from jupyter_codelia.tools import ToolContext
        mcp = McpServers({{"t": McpServerConfig(command=sys.executable,
                                                 args=[{SERVER_SCRIPT!r}, "stdio"])}})
        store = ToolOutputCacheStore(Path({str(tmp_path)!r}))
        mcp.output_store = store
        tools = {{t.name: t for t in mcp.tools()[0]}}
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ctx = ToolContext(tool_call_id="big1", tool_name="t__huge")
        out = asyncio.run(tools["t__huge"].execute_raw('{{"megabytes": 200}}', ctx))
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        echo = asyncio.run(tools["t__echo"].execute_raw('{{"text": "still here"}}', ToolContext()))
        entry = store.get_entry(store.streamed_ref("big1").id)
        print(len(out.text), grown // 1024, echo.text, entry.size_bytes, out.text, sep="|")
        mcp.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=280, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown, grown_mb, echo, stored, view = done.stdout.split("|", 4)
    assert int(shown) < 60_000  # the model's view: head, the cut with the ref, tail
    assert echo == "still here"  # the next call works on the same connection
    assert int(grown_mb) < 100  # never held whole (200 MB) in memory
    assert int(stored) > 10 * 1024 * 1024  # the cache kept it, up to its cap
    assert "characters cut here; the whole output is ref=big1" in view
    assert view.startswith("0123456789abcdef")


def test_a_server_that_never_answers_initialize_is_abandoned_at_its_deadline() -> None:
    mcp = McpServers({"stuck": stdio("hang-init", startup_timeout=1.5)})
    try:
        tools, failures = mcp.tools()
        stuck = [
            p
            for p in psutil.Process().children(recursive=True)
            if "hang-init" in " ".join(p.cmdline())
        ]
        # The listing came back at the deadline, without waiting for the hung process to be
        # stopped (stdin closed, a grace period, then the kill) ...
        assert stuck and all(p.is_running() for p in stuck)
        assert tools == []
        assert "did not finish starting within 1.5 s (no answer to initialize)" in failures["stuck"]
        _gone, alive = psutil.wait_procs(stuck, timeout=20)  # ... which happens meanwhile
        assert alive == []
    finally:
        mcp.close()


def test_a_hanging_server_does_not_hold_up_the_others() -> None:
    mcp = McpServers({"stuck": stdio("hang-init", startup_timeout=1.5), "t": stdio("stdio")})
    try:
        tools, failures = mcp.tools()
    finally:
        mcp.close()
    assert "t__echo" in {t.name for t in tools}
    assert set(failures) == {"stuck"}


def test_a_secret_on_stderr_is_masked_in_the_failure_text() -> None:
    mcp = McpServers({"leaky": stdio("leak-secret")})
    try:
        _, failures = mcp.tools()
    finally:
        mcp.close()
    text = failures["leaky"]
    assert "failed to start" in text
    assert "GITHUB_TOKEN=[REDACTED]" in text
    assert "api_key: [REDACTED]" in text
    assert "ghs_leakedTokenValue" not in text and "notAKnownShape" not in text


def test_a_failed_server_is_retried_after_its_backoff_and_shows_its_state(tmp_path: Path) -> None:
    flag = tmp_path / "ready"
    mcp = McpServers({"late": stdio("when", str(flag))}, retry_base_s=3600)
    try:
        _, failures = mcp.tools()
        assert "not ready yet: the flag file is missing" in failures["late"]
        assert "[stdio, failed, attempt 1; tried again on a run" in mcp.describe()
        flag.write_text("go")
        assert mcp.tools() == ([], {})  # the backoff holds: not tried yet
        mcp.server("late").next_retry_at = 0  # the backoff has run out
        tools, failures = mcp.tools()
        assert failures == {}
        assert "late__echo" in {t.name for t in tools}
        assert "late  [stdio, ready]" in mcp.describe()
    finally:
        mcp.close()


def test_the_output_schema_validator_is_imported_when_listed_not_in_the_first_call() -> None:
    probe = textwrap.dedent(
        f"""
        import sys
        from jupyter_codelia.standard_tools.mcp import McpServerConfig, McpServers
        from jupyter_codelia.standard_tools.mcp.server import validator_ready
        mcp = McpServers({{"t": McpServerConfig(command=sys.executable,
                                                 args=[{SERVER_SCRIPT!r}, "stdio"])}})
        assert "jsonschema.validators" not in sys.modules
        mcp.tools()
        async def imported():
            await validator_ready()
        mcp.run_blocking(imported(), timeout=60)
        print("jsonschema.validators" in sys.modules)
        mcp.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_structured_output_is_validated_and_reaches_the_model(servers: McpServers) -> None:
    result = call(named(servers)["t__weather"], '{"city": "Oslo"}')
    assert isinstance(result, TextResult)
    assert '"celsius":21.5' in result.text.replace(" ", "")


def test_a_result_with_many_images_attaches_at_most_the_per_result_cap() -> None:
    import mcp_types as types

    from jupyter_codelia.standard_tools.images import MAX_IMAGES_PER_RESULT
    from jupyter_codelia.standard_tools.mcp import content_parts

    dot = base64.b64encode(
        base64.b64decode(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        )
    ).decode()
    many = types.CallToolResult(
        content=[types.ImageContent(data=dot, mime_type="image/png") for _ in range(12)]
    )
    parts = content_parts(many)
    assert sum(isinstance(p, ImagePart) for p in parts) == MAX_IMAGES_PER_RESULT
    assert isinstance(parts[-1], TextPart)
    assert parts[-1].text.startswith("[4 more image(s) not attached: one result attaches at most")
