"""The indexed, streaming store renders exactly what the whole-text reference algorithm renders.

A tiny index stride (16 bytes) puts checkpoints, long-line checkpoints and grapheme windows
everywhere, and writes are split at random points (inside clusters and between ``\\r`` and
``\\n`` too), so every boundary case of the index is exercised against the oracle.
"""

from __future__ import annotations

import tempfile
from itertools import count
from pathlib import Path

import pytest
from _cache_reference import ref_grep, ref_read, ref_read_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_codelia._text import split_lines
from jupyter_codelia.cache import CacheLimits, ToolOutputCacheStore

# ASCII, 2/3/4-byte characters, a combining accent, skin-tone and ZWJ emoji, a flag, a tab.
_PIECES = ["a", "b", "x", " ", "7", "é", "漢", "😀", "e\u0301", "👍🏽", "👨‍👩‍👧", "🇫🇷", "\t", "ab"]


def _texts(pieces: list[str]) -> st.SearchStrategy[str]:
    line = st.lists(st.sampled_from(pieces), max_size=40).map("".join)
    return st.tuples(
        st.lists(line, min_size=1, max_size=12),
        st.lists(st.sampled_from(["\n", "\r\n"]), min_size=12, max_size=12),
    ).map(lambda t: "".join(line + t[1][i] for i, line in enumerate(t[0][:-1])) + t[0][-1])


# Lone "\r" (progress output) is an ordinary character of a line. The regex test leaves it out:
# in an output that also has "\r\n" line ends, ripgrep's CRLF mode anchors ^/$ at a lone "\r".
_TEXT = _texts([*_PIECES, "\r"])
_TEXT_NO_LONE_CR = _texts(_PIECES)
_LIMITS = CacheLimits(max_line_length=12, max_read_bytes=200, max_grep_bytes=160)
_ids = count()
_settings = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _store(root: Path, *, ripgrep: bool = True) -> ToolOutputCacheStore:
    # A fresh directory per example keeps the per-commit eviction scan small.
    return ToolOutputCacheStore(
        Path(tempfile.mkdtemp(dir=root)), limits=_LIMITS, index_stride=16, use_ripgrep=ripgrep
    )


def _save_chunked(store: ToolOutputCacheStore, text: str, cuts: list[int]) -> str:
    ref_id = f"call_{next(_ids)}"
    with store.writer(tool_call_id=ref_id, tool_name="t") as writer:
        previous = 0
        for cut in sorted(c % (len(text) + 1) for c in cuts):
            writer.write(text[previous:cut])
            previous = max(previous, cut)
        writer.write(text[previous:])
    return ref_id


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache-equivalence")


@_settings
@given(text=_TEXT, cuts=st.lists(st.integers(0, 10_000), max_size=6), data=st.data())
def test_read_matches_the_spec(root: Path, text: str, cuts: list[int], data: st.DataObject) -> None:
    store = _store(root)
    ref_id = _save_chunked(store, text, cuts)
    total = len(split_lines(text))
    offset = data.draw(st.integers(0, total + 1))
    limit = data.draw(st.none() | st.integers(1, total + 1))
    expected = ref_read(text, ref_id, offset, limit, max_line_length=12, max_read_bytes=200)
    assert store.read(ref_id, offset, limit) == expected


@_settings
@given(text=_TEXT, cuts=st.lists(st.integers(0, 10_000), max_size=6), data=st.data())
def test_read_line_matches_the_spec(
    root: Path, text: str, cuts: list[int], data: st.DataObject
) -> None:
    store = _store(root)
    ref_id = _save_chunked(store, text, cuts)
    total = len(split_lines(text))
    line_number = data.draw(st.integers(1, total + 1))
    char_offset = data.draw(st.integers(0, 60))
    char_limit = data.draw(st.integers(-2, 50))
    expected = ref_read_line(text, ref_id, line_number, char_offset, char_limit)
    assert store.read_line(ref_id, line_number, char_offset, char_limit) == expected


@_settings
@given(
    text=_TEXT,
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
    pattern=st.sampled_from(["a", "é", "ab", "漢 ", "😀", "", "\t", "zz", "e\u0301", "a\r"]),
    before=st.integers(0, 2),
    after=st.integers(0, 2),
    max_matches=st.integers(1, 4),
    ripgrep=st.booleans(),
)
def test_literal_grep_matches_the_spec(
    root: Path,
    text: str,
    cuts: list[int],
    pattern: str,
    before: int,
    after: int,
    max_matches: int,
    ripgrep: bool,
) -> None:
    store = _store(root, ripgrep=ripgrep)
    ref_id = _save_chunked(store, text, cuts)
    expected = ref_grep(
        text,
        ref_id,
        pattern,
        before=before,
        after=after,
        max_matches=max_matches,
        max_grep_bytes=160,
    )
    actual = store.grep(ref_id, pattern, before=before, after=after, max_matches=max_matches)
    assert actual == expected


@_settings
@given(
    text=_TEXT_NO_LONE_CR,
    pattern=st.sampled_from(["a.b", "^a", "b$", r"\d", "[xé]+", "(ab|漢)", "^$", "a{2}", r"\t"]),
    after=st.integers(0, 1),
    ripgrep=st.booleans(),
)
def test_regex_grep_matches_the_spec(
    root: Path, text: str, pattern: str, after: int, ripgrep: bool
) -> None:
    store = _store(root, ripgrep=ripgrep)
    ref_id = _save_chunked(store, text, [])
    expected = ref_grep(text, ref_id, pattern, regex=True, after=after, max_grep_bytes=160)
    assert store.grep(ref_id, pattern, regex=True, after=after) == expected


@_settings
@given(
    text=_TEXT,
    cuts=st.lists(st.integers(0, 10_000), max_size=3),
    pattern=st.sampled_from(["a", "é", "ab", "漢 ", "", "zz", "e\u0301", "a\r", "b\ra", "xa"]),
    regex_pattern=st.sampled_from(["a.b", "^a", "b$", "^$", r"x\s"]),
    block=st.integers(1, 9),
    max_matches=st.integers(1, 4),
)
def test_python_grep_over_lines_longer_than_its_block_matches_the_spec(
    root: Path,
    text: str,
    cuts: list[int],
    pattern: str,
    regex_pattern: str,
    block: int,
    max_matches: int,
) -> None:
    """Without ripgrep, lines longer than the read block take the long-line path (a bounded
    tail for literals, the capped line for regexes): the same lines must match."""
    from unittest import mock

    from jupyter_codelia.cache import _grep

    store = _store(root, ripgrep=False)
    ref_id = _save_chunked(store, text, cuts)
    with mock.patch.object(_grep, "_BLOCK", block):
        actual = store.grep(ref_id, pattern, max_matches=max_matches)
        expected = ref_grep(text, ref_id, pattern, max_matches=max_matches, max_grep_bytes=160)
        assert actual == expected
        if "\r" not in text:  # ripgrep-free regex semantics of a lone "\r" are not the oracle's
            actual = store.grep(ref_id, regex_pattern, regex=True)
            assert actual == ref_grep(text, ref_id, regex_pattern, regex=True, max_grep_bytes=160)


def test_python_grep_regex_sees_the_capped_start_of_a_very_long_line(tmp_path: Path) -> None:
    from unittest import mock

    from jupyter_codelia.cache import _grep

    store = ToolOutputCacheStore(tmp_path, use_ripgrep=False)
    store.save(tool_call_id="long", tool_name="t", content="a" * 50 + "NEEDLE\nsecond NEEDLE\n")
    with (
        mock.patch.object(_grep, "_BLOCK", 8),
        mock.patch.object(_grep, "FALLBACK_REGEX_LINE_CHARS", 20),
    ):
        # The match at character 50 of line 1 is past the regex's 20 characters of that line.
        assert store.grep("long", "NEED+LE", regex=True) == "ref:long\n    2  second NEEDLE"
        assert store.grep("long", "NEEDLE") == (  # a literal sees whole lines
            f"ref:long\n    1  {'a' * 50}NEEDLE\n\nref:long\n    2  second NEEDLE"
        )
