"""The line index: checkpoints stay close together whatever the line lengths, so any line or
character position is a bounded read away (the cost of reading line 1,900,000 or a window deep
inside one long line does not depend on where it is)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from jupyter_codelia._text import split_lines
from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.cache._index import STRIDE, LineIndex, LineIndexBuilder


def _feed(text: str, stride: int, chunk: int) -> LineIndexBuilder:
    builder = LineIndexBuilder(stride=stride)
    data = text.encode()
    for start in range(0, len(data), chunk):
        # Cut on character boundaries, as the writer does (it encodes whole str pieces).
        builder.feed(data[start : start + chunk])
    return builder


def _mixed_text(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(400):
        kind = rng.random()
        if kind < 0.05:
            lines.append("L" * rng.randint(300, 3000))  # long lines, several strides each
        elif kind < 0.1:
            lines.append("")
        else:
            lines.append("x" * rng.randint(1, 40))
    return "\n".join(lines)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 10**9])
def test_checkpoints_are_never_more_than_three_strides_apart(chunk: int) -> None:
    stride = 64
    text = _mixed_text(chunk)
    builder = _feed(text, stride, chunk)
    assert builder.line_count == len(split_lines(text))
    assert builder.total_bytes == len(text)
    offsets = [*builder.offsets, builder.total_bytes]
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert max(gaps) <= 3 * stride + 1
    index = LineIndex.from_bytes(builder.to_bytes())
    assert (index.line_count, index.total_bytes) == (builder.line_count, builder.total_bytes)
    starts = [0]
    for line in split_lines(text)[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    for i in range(0, len(offsets) - 1):
        line, col = builder.lines[i], builder.cols[i]
        assert starts[line] + col == offsets[i]  # ASCII: a column is a byte


def test_line_starts_match_a_full_scan(tmp_path: Path) -> None:
    text = _mixed_text(3)
    store = ToolOutputCacheStore(tmp_path, index_stride=64)
    store.save(tool_call_id="m", tool_name="t", content=text)
    with store.open_entry("m") as entry:
        expected = 0
        for number, line in enumerate(split_lines(text)):
            assert entry.index.line_start(entry.fd, number) == expected
            expected += len(line) + 1


def test_deep_lines_and_deep_characters(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path)
    with store.writer(tool_call_id="deep", tool_name="t") as writer:
        for i in range(300_000):
            writer.write(f"row {i}\n")
        writer.write("é" * 2_000_000 + "漢" * 100 + "\nlast")
    assert store.read("deep", 299_999, 1) == (
        "300000  row 299999\n\nOutput has more lines. Use offset to read beyond line 300000."
    )
    window = store.read_line("deep", 300_001, 1_999_998, 4)
    assert window.split("\n")[:5] == [
        "ref_id=deep",
        "line_number=300001",
        "line_length=2000100",
        "char_range=1999998..2000001",
        "éé漢漢",
    ]
    assert store.grep("deep", "row 123456") == "ref:deep\n123457  row 123456"
    with store.open_entry("deep") as entry:
        # about one checkpoint per stride of bytes, never one per line
        assert len(entry.index.offsets) < entry.meta.size_bytes / STRIDE * 2 + 2


@pytest.mark.parametrize("with_joiners", [False, True])
def test_long_non_ascii_lines_count_graphemes_exactly(tmp_path: Path, with_joiners: bool) -> None:
    from _cache_reference import ref_read, ref_read_line

    rng = random.Random(7)
    pieces = ["é", "漢", "a", "😀", "ß"] + (["e\u0301", "🇫🇷", "👍🏽", "한"] if with_joiners else [])
    long_line = "".join(rng.choice(pieces) for _ in range(120_000))
    text = f"head\n{long_line}\ntail"
    store = ToolOutputCacheStore(tmp_path, index_stride=16_384)
    with store.writer(tool_call_id="u", tool_name="t") as writer:
        for start in range(0, len(text), 9_999):
            writer.write(text[start : start + 9_999])
    for offset in (0, 4_095, 50_001, 99_999, 119_000):
        assert store.read_line("u", 2, offset, 700) == ref_read_line(text, "u", 2, offset, 700)
    assert store.read("u") == ref_read(text, "u")
