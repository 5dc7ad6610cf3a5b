"""One streaming pass over a file for ``read`` and ``read_line``: memory does not grow with it.

:func:`scan_file` reads the file in blocks, hashes every byte, counts lines (as
``split_lines`` does: a final newline starts one more, empty line), finds the first byte that is
not UTF-8, and hands the bytes of the wanted lines to a sink. Skipping to a far line counts
newlines per block with numpy (a byte compare into a reused bool buffer, then
``count_nonzero``: a few times faster than ``bytes.count``, which counts one byte with a scalar
loop), never a Python step per line; numpy is imported by the first scan, not with the package.
:class:`LineWindow` keeps the lines ``read`` shows, each clipped to what the preview can hold;
:class:`GraphemeWindow` keeps one character window of one line for ``read_line`` and counts the
rest of the line's grapheme clusters without holding them.
"""

from __future__ import annotations

import codecs
import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

BLOCK = 1 << 22
_SLICE = 1 << 16
_NEWLINE = ord("\n")


class Sink(Protocol):
    def take(self, piece: memoryview, line_ended: bool) -> bool:
        """Bytes of the current wanted line (``line_ended``: its newline came after them),
        valid only during the call; returns False once it wants nothing more."""
        ...


@dataclass
class FileFacts:
    total: int  # number of lines
    sha256: str | None  # of the bytes; None when the file was too big to hash
    bad_offset: int | None  # first byte that is not UTF-8, or None


def _check_utf8(decoder: codecs.IncrementalDecoder, data: memoryview, consumed: int) -> int | None:
    """Feed ``data`` (which starts at file offset ``consumed``) to the strict ``decoder`` in
    slices (the decoded text is thrown away: only validity matters); the first bad offset."""
    for start in range(0, len(data), _SLICE * 16):
        buffered = len(decoder.getstate()[0])
        try:
            decoder.decode(data[start : start + _SLICE * 16])
        except UnicodeDecodeError as exc:
            return consumed + start - buffered + exc.start
    return None


def _nth_newline(is_newline: NDArray[np.bool_], start: int, stop: int, n: int) -> int:
    """Offset just past the ``n``-th newline of ``is_newline[start:stop]`` (it has at least n).

    Halves by counting down to a slice of at most ``_SLICE`` bytes, then lists that slice's
    newlines: the list of a whole block's newlines could hold millions of 8-byte offsets.
    """
    import numpy as np

    low, high = start, stop
    while high - low > _SLICE:
        middle = (low + high) // 2
        found = int(np.count_nonzero(is_newline[low:middle]))
        if found >= n:
            high = middle
        else:
            n -= found
            low = middle
    return low + int(np.flatnonzero(is_newline[low:high])[n - 1]) + 1


def scan_file(fd: int, first: int, stop: int, sink: Sink, *, hash_limit: int) -> FileFacts:
    """Stream ``fd`` once, giving the bytes of lines ``first`` .. ``stop - 1`` to ``sink``.

    The bytes are hashed only when the file is at most ``hash_limit`` bytes: SHA-256 runs at a
    few hundred MB/s, and reading a window of a huge file must not cost seconds. Blocks are read
    into one reused buffer (a fresh 4 MiB object per read costs a page fault per 4 KiB).
    """
    import numpy as np

    hasher = hashlib.sha256() if os.fstat(fd).st_size <= hash_limit else None
    decoder = codecs.getincrementaldecoder("utf-8")()
    bad_offset: int | None = None
    line = 0  # index of the line the next byte belongs to
    wanting = True
    consumed = 0
    buffer = bytearray(BLOCK)
    view = memoryview(buffer)
    byte_values = np.frombuffer(buffer, dtype=np.uint8)
    is_newline = np.empty(BLOCK, dtype=np.bool_)
    with os.fdopen(os.dup(fd), "rb", buffering=0) as stream:
        while True:
            size = stream.readinto(buffer)
            if not size:
                break
            data = view[:size]
            np.equal(byte_values[:size], _NEWLINE, out=is_newline[:size])
            if hasher is not None:
                hasher.update(data)
            # An all-ASCII block is valid UTF-8 unless a sequence cut by the last block waits.
            ascii_block = size == BLOCK and not decoder.getstate()[0] and buffer.isascii()
            if bad_offset is None and not ascii_block:
                bad_offset = _check_utf8(decoder, data, consumed)
            position = 0
            while position < size:
                if line < first:
                    need = first - line
                    found = int(np.count_nonzero(is_newline[position:size]))
                    if found < need:
                        line += found
                        break
                    position = _nth_newline(is_newline, position, size, need)
                    line += need
                elif line < stop and wanting:
                    end = buffer.find(b"\n", position, size)
                    wanting = sink.take(data[position : size if end < 0 else end], end >= 0)
                    if end < 0:
                        break
                    line += 1
                    position = end + 1
                else:
                    line += int(np.count_nonzero(is_newline[position:size]))
                    break
            consumed += size
    if bad_offset is None:
        buffered = len(decoder.getstate()[0])
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            bad_offset = consumed - buffered + exc.start
    if first <= line < stop and wanting:  # the last line has no newline after it
        sink.take(memoryview(b""), True)
    return FileFacts(line + 1, None if hasher is None else hasher.hexdigest(), bad_offset)


class LineWindow:
    """The lines ``read`` shows: each kept up to ``4 * (max_line + 1)`` bytes (enough to tell it
    is longer than ``max_line`` characters), and lines only while the preview budget lasts."""

    def __init__(self, max_line: int, max_bytes: int) -> None:
        self.lines: list[str] = []
        self._cap = 4 * (max_line + 1)
        self._max_line = max_line
        self._max_bytes = max_bytes
        self._current: list[bytes] = []
        self._kept = 0
        self._shown = 0  # a lower bound of the preview's size so far

    def take(self, piece: memoryview, line_ended: bool) -> bool:
        if self._kept < self._cap:
            self._current.append(bytes(piece[: self._cap - self._kept]))
            self._kept += len(self._current[-1])
        if not line_ended:
            return True
        text = b"".join(self._current).decode("utf-8", errors="replace").removesuffix("\r")
        self.lines.append(text)
        self._shown += min(len(text), self._max_line) + 8  # the number prefix is 7, newline 1
        self._current, self._kept = [], 0
        return self._shown <= self._max_bytes


class GraphemeWindow:
    """Grapheme clusters ``offset`` .. ``offset + limit`` of one line and the line's length in
    clusters, decoded piece by piece (a cluster cut by a block boundary is carried over)."""

    def __init__(self, offset: int, limit: int) -> None:
        import regex

        self._cluster = regex.compile(r"\X")
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._offset, self._stop = offset, offset + limit
        self._carry = ""
        self.length = 0
        self.kept: list[str] = []
        self.found = False

    def take(self, piece: memoryview, line_ended: bool) -> bool:
        self.found = True
        # Small slices: a list of clusters of a whole block would hold millions of strings.
        starts = range(0, len(piece), _SLICE) or range(1)
        for start in starts:
            self._clusters(piece[start : start + _SLICE], line_ended and start == starts[-1])
        return not line_ended

    def _clusters(self, piece: memoryview, line_ended: bool) -> None:
        text = self._carry + self._decoder.decode(piece, final=line_ended)
        if text.isascii():
            self._ascii_clusters(text, line_ended)
            return
        clusters = self._cluster.findall(text)
        if line_ended:
            if clusters and clusters[-1] == "\r":  # split_lines drops the CR of a CRLF
                clusters.pop()
            self._carry = ""
        else:
            self._carry = clusters.pop() if clusters else ""  # may continue in the next piece
        start = self.length
        low, high = max(self._offset - start, 0), min(self._stop - start, len(clusters))
        if low < high:
            self.kept.extend(clusters[low:high])
        self.length += len(clusters)

    def _ascii_clusters(self, text: str, line_ended: bool) -> None:
        """Every ASCII character is a cluster of its own here (``\r\n``, the one ASCII pair
        that joins, cannot occur inside a line): counted and sliced without the regex, which
        costs about a second per million characters. The last character is still carried: a
        combining mark in the next piece would join it."""
        if line_ended:
            if text.endswith("\r"):  # split_lines drops the CR of a CRLF
                text = text[:-1]
            self._carry = ""
        else:
            text, self._carry = text[:-1], text[-1:]
        start = self.length
        low, high = max(self._offset - start, 0), min(self._stop - start, len(text))
        if low < high:
            self.kept.extend(text[low:high])
        self.length += len(text)
