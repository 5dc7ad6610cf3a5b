"""The streaming scan behind ``read`` and ``read_line`` at tiny block and slice sizes, so every
block boundary case (a newline at a block's last byte, CRLF and UTF-8 sequences cut by a
boundary, halving down to the last slice) is hit by files of a few dozen bytes, and its results
match a plain whole-file reference."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_codelia.standard_tools.files import _filescan
from jupyter_codelia.standard_tools.files._filescan import FileFacts, LineWindow, scan_file


class Collected:
    """Each wanted line's bytes as the scan hands them over, up to ``limit`` lines."""

    def __init__(self, limit: int) -> None:
        self.lines: list[bytes] = []
        self._current = bytearray()
        self._limit = limit

    def take(self, piece: memoryview, line_ended: bool) -> bool:
        self._current += piece
        if not line_ended:
            return True
        self.lines.append(bytes(self._current))
        self._current.clear()
        return len(self.lines) < self._limit


def _reference(data: bytes, first: int, stop: int, limit: int, hashed: bool) -> tuple:
    """What the scan must find, from the whole file in memory."""
    try:
        data.decode("utf-8")
        bad_offset = None
    except UnicodeDecodeError as exc:
        bad_offset = exc.start
    lines = data.split(b"\n")
    digest = hashlib.sha256(data).hexdigest() if hashed else None
    return lines[first:stop][:limit], FileFacts(len(lines), digest, bad_offset)


@pytest.fixture
def small_blocks() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _scan(
    tmp_path: Path, data: bytes, first: int, stop: int, sink: _filescan.Sink, hash_limit: int
) -> FileFacts:
    path = tmp_path / "scanned.txt"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return scan_file(fd, first, stop, sink, hash_limit=hash_limit)
    finally:
        os.close(fd)


def _check_every_window(
    tmp_path: Path, patch: pytest.MonkeyPatch, data: bytes, block: int, slice_: int
) -> None:
    patch.setattr(_filescan, "BLOCK", block)
    patch.setattr(_filescan, "_SLICE", slice_)
    total = data.count(b"\n") + 1
    for first in range(total + 2):
        for span in (1, 2, 5, total + 1):
            sink = Collected(limit=3)
            facts = _scan(tmp_path, data, first, first + span, sink, hash_limit=len(data))
            assert (sink.lines, facts) == _reference(data, first, first + span, 3, True), (
                first,
                span,
            )


# Each case at a block size that puts a boundary where the case needs it.
CASES = {
    "a block ends exactly on each newline": (b"abc\n" * 12, 4),
    "a block ends just before each newline": (b"abc\n" * 12, 3),
    "only newlines": (b"\n" * 40, 4),
    "CRLF split across blocks": (b"ab\r\n" * 10, 3),
    "no final newline": (b"one\ntwo\nthree\nlast line, unterminated", 5),
    "non-UTF-8 past the first block": (b"ascii\n" * 4 + b"\xff tail\nend\n", 4),
    "a UTF-8 sequence cut by a boundary": ("ab\u20ac\n".encode() * 8 + b"\xe2\x82", 4),
    "empty file": (b"", 4),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("slice_", [1, 2, 64])
def test_scan_at_tiny_blocks_matches_the_whole_file_reference(
    tmp_path: Path, small_blocks: pytest.MonkeyPatch, case: str, slice_: int
) -> None:
    data, block = CASES[case]
    _check_every_window(tmp_path, small_blocks, data, block, slice_)


def test_crlf_across_blocks_shows_lines_without_the_carriage_return(
    tmp_path: Path, small_blocks: pytest.MonkeyPatch
) -> None:
    small_blocks.setattr(_filescan, "BLOCK", 3)
    small_blocks.setattr(_filescan, "_SLICE", 1)
    window = LineWindow(max_line=80, max_bytes=10_000)
    data = b"ab\r\n" * 10 + b"cd\r\nlast\r"
    facts = _scan(tmp_path, data, 7, 20, window, hash_limit=0)
    assert window.lines == ["ab", "ab", "ab", "cd", "last"]
    assert facts == FileFacts(12, None, None)


def test_non_utf8_past_the_first_block_is_found_at_its_file_offset(
    tmp_path: Path, small_blocks: pytest.MonkeyPatch
) -> None:
    small_blocks.setattr(_filescan, "BLOCK", 8)
    data = b"all ascii here\n" * 3 + b"caf\xe9\n"  # latin-1, in the sixth block
    window = LineWindow(max_line=80, max_bytes=10_000)
    facts = _scan(tmp_path, data, 3, 4, window, hash_limit=len(data))
    assert facts.bad_offset == 45 + 3
    assert window.lines == ["caf\ufffd"]
    assert facts.total == 5


_PIECES = [b"a", b"bc", b"\n", b"\r\n", b"\r", "\u00e9".encode(), "\u20ac".encode(), b"\xff"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.lists(st.sampled_from(_PIECES), max_size=60).map(b"".join),
    block=st.integers(1, 12),
    slice_=st.integers(1, 8),
    first=st.integers(0, 40),
    span=st.integers(1, 12),
    limit=st.integers(1, 6),
    hashed=st.booleans(),
)
def test_scan_matches_the_reference_at_any_block_size(
    tmp_path_factory: pytest.TempPathFactory,
    data: bytes,
    block: int,
    slice_: int,
    first: int,
    span: int,
    limit: int,
    hashed: bool,
) -> None:
    tmp_path = tmp_path_factory.mktemp("scan")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_filescan, "BLOCK", block)
        patch.setattr(_filescan, "_SLICE", slice_)
        sink = Collected(limit)
        hash_limit = len(data) if hashed else len(data) - 1
        facts = _scan(tmp_path, data, first, first + span, sink, hash_limit)
    assert (sink.lines, facts) == _reference(data, first, first + span, limit, hashed)


def test_importing_the_file_tools_does_not_import_numpy() -> None:
    """numpy is imported by the first scan only: ``import jupyter_codelia`` stays fast."""
    code = (
        "import sys, jupyter_codelia, jupyter_codelia.standard_tools.files\n"
        "print('numpy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    line=st.lists(
        st.sampled_from(["a", "b", " ", "\r", "e\u0301", "\u0301", "👍🏽", "漢", "xyz"]),
        max_size=30,
    ).map("".join),
    crlf=st.booleans(),
    offset=st.integers(0, 40),
    limit=st.integers(0, 12),
    slice_=st.integers(1, 7),
)
def test_grapheme_window_matches_whole_line_clusters(
    tmp_path_factory: pytest.TempPathFactory,
    line: str,
    crlf: bool,
    offset: int,
    limit: int,
    slice_: int,
) -> None:
    """ASCII pieces are counted without the regex; a combining mark after a piece boundary
    still joins the ASCII character before it, as in the whole line's clusters."""
    import regex

    from jupyter_codelia.standard_tools.files._filescan import GraphemeWindow

    raw = line + ("\r" if crlf else "")
    data = (raw + "\nnext\n").encode()
    clusters = regex.findall(r"\X", raw[:-1] if raw.endswith("\r") else raw)  # as split_lines
    tmp_path = tmp_path_factory.mktemp("graphemes")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_filescan, "BLOCK", 3)
        patch.setattr(_filescan, "_SLICE", slice_)
        window = GraphemeWindow(offset, limit)
        _scan(tmp_path, data, 0, 1, window, hash_limit=0)
    assert window.length == len(clusters)
    assert window.kept == clusters[offset : offset + limit]
