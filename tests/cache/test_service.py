"""In-context processing and total-budget trimming with hysteresis."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from pydantic import ValidationError

from jupyter_codelia.cache import (
    ToolOutputCache,
    ToolOutputCacheConfig,
    ToolOutputCacheStore,
    derive_budget,
)
from jupyter_codelia.llm.messages import (
    AssistantMessage,
    ImagePart,
    TextPart,
    ToolMessage,
    ToolOutputRef,
    UserMessage,
)
from jupyter_codelia.standard_tools.output_cache import output_cache_tools
from jupyter_codelia.tools import risk_of


def _tool(call_id: str, content: str | list, name: str = "shell") -> ToolMessage:  # type: ignore[type-arg]
    return ToolMessage(tool_call_id=call_id, tool_name=name, content=content)


@pytest.fixture
def store(tmp_path: Path) -> ToolOutputCacheStore:
    return ToolOutputCacheStore(tmp_path)


def test_small_output_is_saved_and_kept(store: ToolOutputCacheStore) -> None:
    cache = ToolOutputCache(store)
    out = cache.process(_tool("call 1", "a\r\nb"))
    assert out.content == "a\nb"  # kept lines are joined with "\n" even when nothing is cut
    assert out.output_ref == ToolOutputRef(id="call_1", byte_size=4, line_count=2)
    assert out.trimmed is None
    assert store.read("call_1") == "    1  a\n    2  b"


def test_large_output_keeps_whole_lines(store: ToolOutputCacheStore) -> None:
    cache = ToolOutputCache(store, ToolOutputCacheConfig(max_message_bytes=10))
    out = cache.process(_tool("c", "1234\r\n5678\r\n90"))
    assert out.content == "1234\n5678\n\n[tool output truncated; ref=c]"
    assert out.trimmed is True
    assert store.read("c") == "    1  1234\n    2  5678\n    3  90"
    # A first line over the cap leaves an empty body.
    assert cache.process(_tool("d", "x" * 11)).content == "\n\n[tool output truncated; ref=d]"


def test_without_store_or_when_saving_fails(tmp_path: Path) -> None:
    # Never truncated without a ref the model could read the rest from.
    cache = ToolOutputCache(None, ToolOutputCacheConfig(max_message_bytes=3))
    out = cache.process(_tool("c", "ab\ncd"))
    assert (out.content, out.output_ref, out.trimmed) == ("ab\ncd", None, None)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    failing = ToolOutputCache(
        ToolOutputCacheStore(blocked / "cache"), ToolOutputCacheConfig(max_message_bytes=3)
    )
    out = failing.process(_tool("c", "ab\ncd"))  # the failure is swallowed and logged
    assert (out.content, out.output_ref, out.trimmed) == ("ab\ncd", None, None)


def test_text_parts_are_flattened_and_cache_tools_are_exempt(store: ToolOutputCacheStore) -> None:
    cache = ToolOutputCache(store, ToolOutputCacheConfig(max_message_bytes=5))
    parts = [TextPart(text="ab\n"), TextPart(text="cd\r\nef")]
    flattened = cache.process(_tool("p", parts))
    assert flattened.content == "ab\ncd\n\n[tool output truncated; ref=p]"
    # The cache readers declare whether their output may be cut: the page and grep readers'
    # output is a bounded view already, the line reader's is cut like any other.
    cut = {t.name: risk_of(t).output_cut for t in output_cache_tools(store)}
    assert cut == {
        "tool_output_cache": False,
        "tool_output_cache_grep": False,
        "tool_output_cache_line": True,
    }
    for name in ("tool_output_cache", "tool_output_cache_grep"):
        message = _tool(f"x-{name}", "long line\r\nmore", name=name)
        exempt = cache.process(message, cut=cut[name])
        assert exempt.content == "long line\r\nmore" and exempt.trimmed is None
    line_tool = cache.process(
        _tool("y", "long line", name="tool_output_cache_line"), cut=cut["tool_output_cache_line"]
    )
    assert line_tool.trimmed is True


def test_image_result_survives_processing_structurally(store: ToolOutputCacheStore) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "green").save(buffer, format="PNG")
    image = ImagePart.from_bytes(buffer.getvalue(), "image/png")
    message = _tool("img", [TextPart(text="x" * 100), image], name="view_image")
    out = ToolOutputCache(store, ToolOutputCacheConfig(max_message_bytes=10)).process(message)
    assert out.content == message.content  # parts untouched, no byte cap
    assert out.output_ref is not None and out.output_ref.id == "img"
    read_back = store.read_parts("img")[1]
    assert isinstance(read_back, ImagePart)
    assert read_back.data_bytes() == buffer.getvalue()


def test_disabled_returns_the_message_unchanged(store: ToolOutputCacheStore) -> None:
    cache = ToolOutputCache(store, ToolOutputCacheConfig(enabled=False))
    message = _tool("c", "x" * 100_000)
    assert cache.process(message) is message
    assert cache.trim([message, message], context_limit=10) is None
    assert store.list_entries() == []


def test_streamed_output_is_not_overwritten(store: ToolOutputCacheStore) -> None:
    with store.writer(tool_call_id="s", tool_name="shell") as writer:
        for i in range(1000):
            writer.write(f"log line {i}\n")
    out = ToolOutputCache(store).process(_tool("s", "exit 0 (1000 lines logged)"))
    assert out.output_ref is not None and out.output_ref.line_count == 1001
    assert (
        store.read("s", 999, 1)
        == " 1000  log line 999\n\nOutput has more lines. Use offset to read beyond line 1000."
    )


def test_existing_ref_is_kept(store: ToolOutputCacheStore) -> None:
    ref = ToolOutputRef(id="elsewhere", byte_size=1, line_count=1)
    message = _tool("c", "x").model_copy(update={"output_ref": ref})
    assert ToolOutputCache(store).process(message).output_ref == ref
    assert store.list_entries() == []


def test_budget_derivation() -> None:
    assert derive_budget(None, None) == 100_000
    assert derive_budget(None, 0) == 100_000
    assert derive_budget(None, 50_000) == 20_000
    assert derive_budget(None, 200_000) == 50_000
    assert derive_budget(None, 1_000_000) == 100_000
    assert derive_budget(7, 1_000_000) == 7


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValidationError, match="trim_target_ratio"):
        ToolOutputCacheConfig(trim_target_ratio=1.5)
    with pytest.raises(ValidationError, match="max_message_bytes"):
        ToolOutputCacheConfig(max_message_bytes=0)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        ToolOutputCacheConfig(budget=3)  # type: ignore[call-arg]


def _history(n: int, tokens_each: int) -> list:  # type: ignore[type-arg]
    """user, then n (assistant, tool) pairs with ``tokens_each`` estimated tokens per output."""
    messages: list = [UserMessage(content="go")]  # type: ignore[type-arg]
    for i in range(n):
        messages.append(AssistantMessage(content=f"step {i}"))
        ref = ToolOutputRef(id=f"r{i}", byte_size=tokens_each * 4, line_count=1)
        tool = _tool(f"r{i}", "x" * (tokens_each * 4)).model_copy(update={"output_ref": ref})
        messages.append(tool)
    return messages


def test_trim_is_a_no_op_under_budget() -> None:
    cache = ToolOutputCache(None, ToolOutputCacheConfig(context_budget_tokens=1000))
    assert cache.trim(_history(4, 250), context_limit=None) is None
    off = ToolOutputCache(
        None, ToolOutputCacheConfig(context_budget_tokens=10, total_budget_trim=False)
    )
    assert off.trim(_history(4, 250), context_limit=None) is None


def test_trim_oldest_first_with_hysteresis() -> None:
    cache = ToolOutputCache(None, ToolOutputCacheConfig(context_budget_tokens=1000))
    history = _history(5, 250)  # 1250 tokens > 1000: trim down to <= 600
    trimmed = cache.trim(history, context_limit=None)
    assert trimmed is not None
    tools = [m for m in trimmed if isinstance(m, ToolMessage)]
    assert [t.content for t in tools[:3]] == [f"[tool output trimmed; ref=r{i}]" for i in range(3)]
    assert all(t.trimmed for t in tools[:3])
    assert tools[3] is history[8] and tools[4] is history[10]  # untouched objects are reused
    assert tools[0].output_ref == history[2].output_ref
    assert history[2].content.startswith("xxx")  # the input list is not modified
    # Hysteresis: the next output does not trigger a new trim until the budget is exceeded.
    trimmed.append(AssistantMessage(content="more"))
    trimmed.append(_tool("r5", "y" * 1600))  # 400 tokens: total 7*3 + 500 + 400 < 1000
    assert cache.trim(trimmed, context_limit=None) is None


def test_newest_output_is_never_trimmed() -> None:
    cache = ToolOutputCache(None, ToolOutputCacheConfig(context_budget_tokens=100))
    history = _history(3, 500)
    trimmed = cache.trim(history, context_limit=None)
    assert trimmed is not None
    assert [m.content for m in trimmed if isinstance(m, ToolMessage)][:2] == [
        "[tool output trimmed; ref=r0]",
        "[tool output trimmed; ref=r1]",
    ]
    assert trimmed[-1] is history[-1]
    single = _history(1, 5000)
    assert cache.trim(single, context_limit=None) is None
    # Already trimmed messages are not rewritten again.
    assert cache.trim(trimmed, context_limit=None) is None


def test_trim_counts_images_and_placeholder_without_ref() -> None:
    cache = ToolOutputCache(None, ToolOutputCacheConfig(context_budget_tokens=2000))
    image = ImagePart.from_bytes(b"\x89PNG fake", "image/png")
    history = [
        _tool("a", [TextPart(text="chart"), image], name="python"),
        _tool("b", [image], name="python"),
    ]
    trimmed = cache.trim(history, context_limit=None)  # 2 images ~ 3200 tokens > 2000
    assert trimmed is not None
    assert trimmed[0].content == "[tool output trimmed]" and trimmed[0].trimmed
    assert trimmed[1] is history[1]


def test_trim_budget_from_context_limit() -> None:
    cache = ToolOutputCache(None)
    history = _history(3, 10_000)  # 30k tokens
    assert cache.trim(history, context_limit=200_000) is None  # budget 50k
    trimmed = cache.trim(history, context_limit=80_000)  # budget 20k, target 12k
    assert trimmed is not None
    assert [isinstance(m, ToolMessage) and m.trimmed for m in trimmed].count(True) == 2
