"""Exact texts of the three retrieval operations, written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_codelia.cache import CacheLimits, ToolOutputCacheStore


@pytest.fixture
def store(tmp_path: Path) -> ToolOutputCacheStore:
    return ToolOutputCacheStore(tmp_path / "cache")


def test_read_numbers_lines_and_normalises_crlf(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="call-1", tool_name="shell", content="alpha\r\nbeta\ngamma")
    assert store.read("call-1") == "    1  alpha\n    2  beta\n    3  gamma"
    assert store.read("call-1", 1, 1) == (
        "    2  beta\n\nOutput has more lines. Use offset to read beyond line 2."
    )
    assert store.read("call-1", 3) == "Offset exceeds output length."
    assert store.read("call-1", 2) == "    3  gamma"


def test_read_trailing_newline_is_a_final_empty_line(store: ToolOutputCacheStore) -> None:
    ref = store.save(tool_call_id="c", tool_name="t", content="x\n")
    assert (ref.byte_size, ref.line_count) == (2, 2)
    assert store.read("c") == "    1  x\n    2  "
    empty = store.save(tool_call_id="e", tool_name="t", content="")
    assert (empty.byte_size, empty.line_count) == (0, 1)
    assert store.read("e") == "    1  "


def test_read_clips_long_lines_and_points_to_the_line_tool(store: ToolOutputCacheStore) -> None:
    text = "short\n" + "é" * 1005 + "\nend"
    store.save(tool_call_id="long", tool_name="t", content=text)
    assert store.read("long") == (
        "    1  short\n"
        f"    2  {'é' * 1000}...\n"
        "    3  end\n\n"
        "[truncated lines: 2]\n\n"
        'For full long-line content, use tool_output_cache_line({"ref_id":"long",'
        '"line_number":2,"char_offset":0,"char_limit":10000}).'
    )


def test_read_lists_many_truncated_lines(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path, limits=CacheLimits(max_line_length=2))
    store.save(tool_call_id="m", tool_name="t", content="abc\nabcd\nab\nxyz\nqrst")
    out = store.read("m")
    assert out.startswith("    1  ab...\n    2  ab...\n    3  ab\n    4  xy...\n    5  qr...")
    assert "\n\n[truncated lines: many]\n\n" in out
    assert out.endswith('"line_number":1,"char_offset":0,"char_limit":10000}).')
    store.save(tool_call_id="few", tool_name="t", content="abc\nab\nxyz")
    assert "[truncated lines: 1, 3]" in store.read("few")


def test_read_stops_at_the_byte_budget(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path, limits=CacheLimits(max_read_bytes=30))
    store.save(tool_call_id="b", tool_name="t", content="0123456789\n0123456789\nxx")
    assert store.read("b") == (
        "    1  0123456789\n\n[output truncated at 30 bytes] Use offset to read beyond line 1."
    )
    # A first line over the budget is cut to budget - prefix - 3 bytes, plus "...".
    store.save(tool_call_id="one", tool_name="t", content="€" * 20)
    assert store.read("one") == (
        f"    1  {'€' * 6}...\n\n"
        "[output truncated at 30 bytes] Use offset to read beyond line 1.\n\n"
        "[truncated lines: 1]\n\n"
        'For full long-line content, use tool_output_cache_line({"ref_id":"one",'
        '"line_number":1,"char_offset":0,"char_limit":10000}).'
    )


def test_read_line_window_and_continuation(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="l", tool_name="t", content="first\nab👍🏽cde\u0301f")
    assert store.read_line("l", 2, 1, 3) == (
        "ref_id=l\nline_number=2\nline_length=7\nchar_range=1..3\nb👍🏽c\n\n"
        "Use char_offset=4 to continue.\n"
        'tool_output_cache_line({"ref_id":"l","line_number":2,"char_offset":4,"char_limit":3})'
    )
    assert store.read_line("l", 2, 4) == (
        "ref_id=l\nline_number=2\nline_length=7\nchar_range=4..6\nde\u0301f"
    )
    assert store.read_line("l", 2, 7) == (
        "ref_id=l\nline_number=2\nline_length=7\nchar_range=7..6\n"
    )
    assert store.read_line("l", 3) == "Line number out of range: 3 (total 2)"
    assert store.read_line("l", 1, 6) == "char_offset out of range: 6 (line length 5)"
    # char_limit is clamped into [1, 100000].
    assert store.read_line("l", 1, 0, 0).split("\n")[3:5] == ["char_range=0..0", "f"]


def test_grep_literal_with_context(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="g", tool_name="t", content="a\nneedle 1\nb\nc\nneedle 2\nd")
    assert store.grep("g", "needle", before=1, after=1) == (
        "ref:g\n    1  a\n    2  needle 1\n    3  b\n\nref:g\n    4  c\n    5  needle 2\n    6  d"
    )
    assert store.grep("g", "needle.", regex=False) == "No matches for: needle."
    assert store.grep("g", "Needle") == "No matches for: Needle"  # case-sensitive


def test_grep_regex_and_truncation_quirk(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="r", tool_name="t", content="x1\ny\nx22\nz")
    assert store.grep("r", r"x\d+$", regex=True) == "ref:r\n    1  x1\n\nref:r\n    3  x22"
    # Reaching max_matches while lines remain is reported as truncated (reference quirk).
    assert store.grep("r", "x", max_matches=2) == (
        "ref:r\n    1  x1\n\nref:r\n    3  x22\n... (truncated)"
    )
    assert store.grep("r", "z", max_matches=1) == "ref:r\n    4  z"


def test_grep_byte_budget(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path, limits=CacheLimits(max_grep_bytes=45))
    store.save(tool_call_id="s", tool_name="t", content="hit one\nhit two\n" + "hit " + "w" * 50)
    assert store.grep("s", "hit") == (
        "ref:s\n    1  hit one\n\nref:s\n    2  hit two\n... (truncated)"
    )
    assert store.grep("s", "hit w") == "\n".join(
        [
            "MATCH_TOO_LARGE_TO_RENDER: match at line 3 exceeded 45 bytes.",
            "ref_id=s",
            "Reduce grep context (before/after) or read the matched line directly:",
            'tool_output_cache_line({"ref_id":"s","line_number":3,"char_offset":0,"char_limit":10000})',
        ]
    )


def test_grep_final_empty_line_and_special_patterns(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="e", tool_name="t", content="a\n\nb\n")
    assert store.grep("e", "^$", regex=True) == "ref:e\n    2  \n\nref:e\n    4  "
    assert store.grep("e", "") == (
        "ref:e\n    1  a\n\nref:e\n    2  \n\nref:e\n    3  b\n\nref:e\n    4  "
    )
    assert store.grep("e", "a\nb") == "No matches for: a\nb"


def test_ref_ids_are_normalised_everywhere(store: ToolOutputCacheStore) -> None:
    ref = store.save(tool_call_id="toolu:01/ab c", tool_name="t", content="v")
    assert ref.id == "toolu_01_ab_c"
    assert store.read("toolu:01/ab c") == "    1  v"
    assert store.grep("toolu_01_ab_c", "v") == "ref:toolu_01_ab_c\n    1  v"


def test_read_tail(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="t", tool_name="shell", content="1\n2\n3\n4")
    assert store.read_tail("t", 2) == "3\n4"
    assert store.read_tail("t", 10) == "1\n2\n3\n4"
    assert store.read_tail("t", 0) == ""


@pytest.mark.parametrize("ripgrep", [True, False])
def test_grep_sees_exactly_the_stored_lines(tmp_path: Path, ripgrep: bool) -> None:
    """A byte-order mark stays part of line 1 and a lone \\r stays inside its line, with or
    without ripgrep."""
    store = ToolOutputCacheStore(tmp_path, use_ripgrep=ripgrep)
    store.save(tool_call_id="b", tool_name="t", content="\ufeffhello\nhello\ra\r\nend\r")
    assert store.grep("b", "^hello", regex=True) == "ref:b\n    2  hello\ra"
    assert store.grep("b", "a$", regex=True) == "ref:b\n    2  hello\ra"
    assert store.grep("b", "end\r") == "ref:b\n    3  end\r"


@pytest.mark.parametrize("ripgrep", [True, False])
def test_lone_carriage_returns_are_ordinary_characters(tmp_path: Path, ripgrep: bool) -> None:
    """Progress-bar output: "\\r" without "\\n" does not split lines, for anchors either."""
    store = ToolOutputCacheStore(tmp_path, use_ripgrep=ripgrep)
    store.save(tool_call_id="p", tool_name="t", content="10%\r50%\r100%\ndone")
    assert store.grep("p", "^50%", regex=True) == "No matches for: ^50%"
    assert store.grep("p", "^10%.*100%$", regex=True) == "ref:p\n    1  10%\r50%\r100%"
    assert store.grep("p", r"0%\s5", regex=True) == "ref:p\n    1  10%\r50%\r100%"
    assert store.grep("p", "%\r5") == "ref:p\n    1  10%\r50%\r100%"
    assert store.read("p") == "    1  10%\r50%\r100%\n    2  done"
