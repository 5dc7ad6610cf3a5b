"""The line index written next to every cached output.

The index is a sorted list of *checkpoints* ``(byte offset, 0-based line, grapheme column)``,
one about every ``STRIDE`` bytes: at the first line start after each stride, and inside lines
longer than two strides at cluster boundaries. Any line start or any character position is then
at most a few strides of scanning away from a checkpoint, so reading line 1,900,000 or character
5,000,000 of one long line costs about the same as reading line 10. A 1 GB output needs about
16,000 checkpoints (under 400 KB of index).

The builder is fed the UTF-8 bytes in order (as a writer streams them) and keeps only the bytes
of the current line since its last checkpoint, so its memory stays bounded.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import CodeliaError
from ._graphemes import count_with_last, pread, utf8_decoder

STRIDE = 64 * 1024
_MAGIC = b"JCIDX001"
_HEADER = struct.Struct("<8sQQQQ")  # magic, checkpoints, total bytes, line count, stride


class IndexFormatError(CodeliaError, ValueError):
    """The index file does not match the format or the entry it belongs to."""


@dataclass
class LineIndexBuilder:
    stride: int = STRIDE
    offsets: array[int] = field(default_factory=lambda: array("Q", [0]))
    lines: array[int] = field(default_factory=lambda: array("Q", [0]))
    cols: array[int] = field(default_factory=lambda: array("Q", [0]))
    _pos: int = 0  # bytes fed so far
    _newlines: int = 0  # newlines before _counted
    _counted: int = 0
    _line_start: int = 0  # start of the line in progress at _pos
    _tail: list[bytes] = field(default_factory=list)  # bytes [_tail_start, _pos) of that line
    _tail_start: int = 0
    has_crlf: bool = False  # any "\r\n" line end (grep then treats "\r" as part of it)
    _ends_with_cr: bool = False

    @property
    def total_bytes(self) -> int:
        return self._pos

    @property
    def line_count(self) -> int:
        """``len(split_lines(text))``: newlines + 1 (``""`` is one empty line)."""
        return self._newlines + 1

    def feed(self, data: bytes) -> None:
        if not data:
            return
        if not self.has_crlf:
            self.has_crlf = b"\r\n" in data or (self._ends_with_cr and data[0] == 0x0A)
            self._ends_with_cr = data[-1] == 0x0D
        base = self._pos
        size = len(data)
        self._pos = base + size
        stride = self.stride
        while True:
            due = self.offsets[-1] + stride
            if due >= self._pos:
                break
            due_rel = max(due - base, 0)
            newline = data.find(b"\n", due_rel)
            previous = data.rfind(b"\n", 0, due_rel)
            line_start = base + previous + 1 if previous != -1 else self._line_start
            last_cp = self.offsets[-1]
            segment = max(line_start, last_cp)
            line_end = base + newline if newline != -1 else self._pos
            if line_end - segment > 2 * stride:
                line_no = self._count(data, base, max(segment - base, 0))
                column = self.cols[-1] if segment == last_cp else 0
                source = self._slice(data, base, segment, line_end)
                self._add_inner_checkpoints(source, segment, line_no, column)
            if newline == -1:
                break
            self._add(base + newline + 1, self._count(data, base, newline + 1), 0)
        self._count(data, base, size)
        last_newline = data.rfind(b"\n")
        if last_newline != -1:
            self._line_start = base + last_newline + 1
        keep_from = max(self._line_start, self.offsets[-1])
        if keep_from >= base:
            self._tail = [data[keep_from - base :]]
        elif keep_from == self._tail_start:
            self._tail.append(data)
        else:
            self._tail = [b"".join(self._tail)[keep_from - self._tail_start :], data]
        self._tail_start = keep_from

    def _count(self, data: bytes, base: int, rel: int) -> int:
        """Newlines before ``base + rel`` (counting forward from where the last call stopped)."""
        start = self._counted - base
        if rel > start:
            self._newlines += data.count(b"\n", start, rel)
            self._counted = base + rel
        return self._newlines

    def _slice(self, data: bytes, base: int, start: int, end: int) -> bytes:
        if start >= base:
            return data[start - base : end - base]
        return b"".join(self._tail)[start - self._tail_start :] + data[: end - base]

    def _add(self, offset: int, line: int, col: int) -> None:
        self.offsets.append(offset)
        self.lines.append(line)
        self.cols.append(col)

    def _add_inner_checkpoints(self, source: bytes, origin: int, line: int, col: int) -> None:
        """Checkpoints every ~stride bytes inside one long line, at cluster boundaries."""
        stride = self.stride
        pos = 0
        width = stride
        while len(source) - pos > 2 * stride:
            end = min(pos + width, len(source))
            while end < len(source) and (source[end] & 0xC0) == 0x80:
                end += 1  # never cut a UTF-8 sequence
            found, last_bytes = count_with_last(source[pos:end].decode("utf-8", "surrogatepass"))
            if found < 2:
                width += stride  # one enormous cluster: widen the window until it ends
                continue
            # The last cluster may continue past the window, so the checkpoint goes before it.
            pos = end - last_bytes
            col += found - 1
            width = stride
            self._add(origin + pos, line, col)

    def to_bytes(self) -> bytes:
        header = _HEADER.pack(
            _MAGIC, len(self.offsets), self.total_bytes, self.line_count, self.stride
        )
        return header + self.offsets.tobytes() + self.lines.tobytes() + self.cols.tobytes()


@dataclass(frozen=True)
class LineIndex:
    offsets: array[int]
    lines: array[int]
    cols: array[int]
    total_bytes: int
    line_count: int
    stride: int

    @classmethod
    def from_bytes(cls, raw: bytes) -> LineIndex:
        if len(raw) < _HEADER.size:
            raise IndexFormatError("index file is shorter than its header")
        magic, count, total, line_count, stride = _HEADER.unpack_from(raw)
        if magic != _MAGIC:
            raise IndexFormatError("index file has an unknown format")
        if len(raw) != _HEADER.size + 24 * count or count == 0 or stride <= 0:
            raise IndexFormatError(f"index file size does not match its {count} checkpoints")
        arrays = []
        for part in range(3):
            values = array("Q")
            start = _HEADER.size + part * 8 * count
            values.frombytes(raw[start : start + 8 * count])
            arrays.append(values)
        return cls(arrays[0], arrays[1], arrays[2], total, line_count, stride)

    def floor(self, line: int, col: int = 0) -> int:
        """Position of the last checkpoint at or before ``(line, col)``."""
        lo, hi = 0, len(self.offsets)
        while lo < hi:
            mid = (lo + hi) // 2
            if (self.lines[mid], self.cols[mid]) <= (line, col):
                lo = mid + 1
            else:
                hi = mid
        return max(lo - 1, 0)

    def line_start(self, fd: int, line: int) -> int:
        """Byte offset where 0-based ``line`` starts (``line < line_count``)."""
        i = self.floor(line, 0)
        offset = self.offsets[i]
        skip = line - self.lines[i]
        if skip == 0 and self.cols[i] == 0:
            return offset
        while True:
            data = pread(fd, self.stride, offset)
            if not data:
                raise IndexFormatError(f"line {line + 1} is past the end of the text")
            found = data.count(b"\n")
            if found < skip:
                skip -= found
                offset += len(data)
                continue
            pos = -1
            for _ in range(skip):
                pos = data.find(b"\n", pos + 1)
            return offset + pos + 1

    def last_checkpoint_in_line(self, line: int) -> tuple[int, int]:
        """``(offset, col)`` of the last checkpoint inside ``line`` (``col`` 0 if none inside)."""
        i = self.floor(line + 1, 0)
        while i > 0 and (self.lines[i], self.cols[i]) >= (line + 1, 0):
            i -= 1
        if self.lines[i] == line:
            return self.offsets[i], self.cols[i]
        return -1, 0

    def checkpoint_before_col(self, line: int, col: int) -> tuple[int, int]:
        """``(offset, col)`` of the last checkpoint in ``line`` at or before ``col`` (-1: none)."""
        i = self.floor(line, col)
        if self.lines[i] == line:
            return self.offsets[i], self.cols[i]
        return -1, 0


@dataclass
class LineSpan:
    line: int  # 0-based
    start: int  # byte offset of the first byte of the line
    end: int  # byte offset after the line's content (before ``\r\n`` / ``\n``)


def iter_spans(index: LineIndex, fd: int, first_line: int) -> Iterator[LineSpan]:
    """Spans of lines ``first_line, first_line + 1, ...`` read forward in blocks; a long line is
    jumped over with the index instead of being read."""
    stride = index.stride
    line = first_line
    count = index.line_count
    if line >= count:
        return
    start = index.line_start(fd, line)
    buf = b""
    buf_pos = start
    while line < count:
        rel = start - buf_pos
        if rel >= len(buf):  # jumped past the buffer over a long line
            buf, buf_pos, rel = b"", start, 0
        newline = buf.find(b"\n", rel) if rel < len(buf) else -1
        while newline == -1:
            if line == count - 1:
                newline_abs = index.total_bytes
                break
            if buf_pos + len(buf) - start >= 2 * stride:
                newline_abs = index.line_start(fd, line + 1) - 1
                break
            more = pread(fd, stride, buf_pos + len(buf))
            if not more:
                raise IndexFormatError("the text ends before the last indexed line")
            buf = buf[max(rel, 0) :] + more
            buf_pos = start
            rel = 0
            newline = buf.find(b"\n")
        else:
            newline_abs = buf_pos + newline
        end = newline_abs
        if line < count - 1 and end > start and _byte_at(fd, buf, buf_pos, end - 1) == 0x0D:
            end -= 1
        yield LineSpan(line, start, end)
        start = newline_abs + 1
        line += 1


def _byte_at(fd: int, buf: bytes, buf_pos: int, offset: int) -> int:
    rel = offset - buf_pos
    if 0 <= rel < len(buf):
        return buf[rel]
    data = pread(fd, 1, offset)
    return data[0] if data else -1


def read_text(fd: int, start: int, end: int) -> str:
    """Decode bytes ``[start, end)``; a partial character at the end is dropped."""
    return utf8_decoder().decode(pread(fd, end - start, start), final=False)
