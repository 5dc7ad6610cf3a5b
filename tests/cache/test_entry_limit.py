"""One entry never outgrows its limit (head and tail kept, the middle dropped with a note), so
a later commit's eviction never takes the newest outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.cache._writer import dropped_note
from jupyter_codelia.llm.messages import TextPart

LINE = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ ......\n"  # 72 bytes


def full_text(store: ToolOutputCacheStore, ref_id: str) -> str:
    part = store.read_parts(ref_id, max_text_bytes=1 << 30)[0]
    assert isinstance(part, TextPart)
    return part.text


def test_a_stream_past_the_limit_keeps_head_and_tail_and_says_what_was_dropped(
    tmp_path: Path,
) -> None:
    store = ToolOutputCacheStore(tmp_path, max_bytes=400_000)
    assert store.max_entry_bytes == 100_000
    with store.writer(tool_call_id="yes", tool_name="shell") as writer:
        for i in range(20_000):  # 1.44 MB, written line by line like a long-running command
            writer.write(f"{i:05d} {LINE}")
        writer.write("the final error message\n")
        dropped = writer.dropped_bytes
    text = full_text(store, "yes")
    head, tail = 50_000, 50_000
    total = 20_000 * 78 + 24
    assert dropped == total - head - tail
    assert text.startswith(f"00000 {LINE}00001 ")
    assert text.endswith("19999 " + LINE + "the final error message\n")
    note = dropped_note(dropped, 100_000, head, tail)
    assert text == text[:head] + note + text[head + len(note) :]
    assert len(text.encode()) == head + len(note) + tail
    assert store._load_meta("yes").dropped_bytes == dropped
    # The tail is read like any other lines.
    assert "the final error message" in store.read_tail("yes", 2)


def test_the_newest_entry_survives_the_next_commits_eviction(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path, max_bytes=400_000)
    for old in range(3):
        store.save(tool_call_id=f"old{old}", tool_name="t", content=LINE * 1300)  # ~94 KB each
    with store.writer(tool_call_id="big", tool_name="shell") as writer:
        for _ in range(7_000):  # 500 KB: more than the whole cap
            writer.write(LINE)
    store.save(tool_call_id="next", tool_name="t", content=LINE * 1300)  # the agent's next save
    assert store.read("big", 0, 1).startswith("    1  " + LINE)
    assert full_text(store, "big").endswith(LINE * 3)
    assert store.disk_usage() <= 400_000


def test_an_entry_under_the_limit_is_kept_whole_and_characters_are_never_split(
    tmp_path: Path,
) -> None:
    store = ToolOutputCacheStore(tmp_path, max_bytes=4_000, max_entry_bytes=1_001)
    store.save(tool_call_id="small", tool_name="t", content="é" * 500)  # exactly 1000 bytes
    assert full_text(store, "small") == "é" * 500
    with store.writer(tool_call_id="wide", tool_name="t") as writer:
        for _ in range(300):
            writer.write("é€😀")  # 2-, 3- and 4-byte characters around every cut
    text = full_text(store, "wide")
    assert "\ufffd" not in text
    assert text.startswith("é€😀") and text.endswith("é€😀")
    assert "bytes dropped from the middle" in text


@pytest.mark.parametrize("bad", [0, -1, 2_001, True, "100"])
def test_a_bad_entry_limit_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(
        ValueError,
        match=r"max_entry_bytes must be a positive number of bytes of at most half of "
        r"max_bytes \(2000\)",
    ):
        ToolOutputCacheStore(tmp_path, max_bytes=4_000, max_entry_bytes=bad)  # type: ignore[arg-type]


def test_the_entry_limit_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_MAX_ENTRY_BYTES", "1500")
    assert ToolOutputCacheStore(tmp_path, max_bytes=4_000).max_entry_bytes == 1_500
