"""The fast path of applying an Update section: exact matches found with ``bytes.find``.

Splitting a 100,000-line file into a list, splicing it and joining it again costs more than
everything else in apply_patch. When every chunk (and anchor) matches exactly - the common case for
a model that just read the file - the result is the same as the line algorithm's (``_patch_lines``)
and can be computed on the file's bytes themselves: each chunk's old lines are searched as one
UTF-8 string aligned on line boundaries, the line numbers come from counting newlines between
matches, and the output is the untouched stretches of the original (views, not copies) joined with
the new lines. Working on the bytes spares decoding the file, copying its stretches and encoding
the result again: each is a fresh copy of a big file. Anything else (a lenient match, CRLF text,
an empty pattern) returns ``None`` and the caller runs the line algorithm.

The diff only needs lines near the changes, so :class:`TextLines` is a read-only line view of a
text that locates a line from the nearest known line start instead of splitting everything.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import overload

from ..diff import Block, merge_blocks
from ._lines import Buffer, DiffMaterial, UpdateResult
from ._parse import Chunk, ChunkShape


class TextLines(Sequence[str]):
    """The lines of the UTF-8 ``text`` (split on ``\\n``), decoded one by one as they are asked
    for and found from known (line, byte offset) anchors.

    ``anchors`` must be sorted by line and start with ``(0, 0)``; ``segments`` are runs of
    lines already known, sorted by their first line.
    """

    def __init__(
        self,
        text: bytes,
        anchors: Sequence[tuple[int, int]],
        length: int | None = None,
        segments: Sequence[tuple[int, list[str]]] = (),
    ) -> None:
        self._text = text
        self._len = text.count(b"\n") + 1 if length is None else length
        # ``anchors`` are sorted by line and include (0, 0).
        self._lines = [line for line, _ in anchors]
        self._offsets = [offset for _, offset in anchors]
        # Runs of lines already at hand (a chunk's old or new lines), sorted by first line.
        self._segment_starts = [start for start, _ in segments]
        self._segments = [lines for _, lines in segments]

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._take(start, max(0, stop - start))
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        return self._take(index, 1)[0]

    def _offset(self, line: int) -> int:
        text = self._text
        k = bisect.bisect_right(self._lines, line) - 1
        below_line, offset = self._lines[k], self._offsets[k]
        if k + 1 < len(self._lines) and self._lines[k + 1] - line < line - below_line:
            offset = self._offsets[k + 1]
            for _ in range(self._lines[k + 1] - line):
                offset = text.rfind(b"\n", 0, offset - 1) + 1
            return offset
        for _ in range(line - below_line):
            offset = text.index(b"\n", offset) + 1
        return offset

    def _take(self, start: int, count: int) -> list[str]:
        if count == 0:
            return []
        k = bisect.bisect_right(self._segment_starts, start) - 1
        if k >= 0:
            first = self._segment_starts[k]
            lines = self._segments[k]
            if start + count <= first + len(lines):
                return lines[start - first : start - first + count]
        text = self._text
        offset = self._offset(start)
        out: list[str] = []
        for _ in range(count):
            end = text.find(b"\n", offset)
            if end == -1:
                out.append(_decode(text[offset:]))
                break
            out.append(_decode(text[offset:end]))
            offset = end + 1
        return out


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogatepass")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")


Found = tuple[int, int, Chunk, int, int, ChunkShape]
"""Where a chunk matched: (line, old line count, chunk, start offset, end offset, its shape)."""
_NEWLINE = ord("\n")


class _NoExactMatchError(Exception):
    """No exact match: the caller must run the line algorithm."""


class _Cursor:
    """Search state over the original text (UTF-8 bytes): the current line and its start
    offset."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self.size = len(text)
        self.had_newline = text.endswith(b"\n")
        self.line = 0
        self.offset = 0
        self._line_count: int | None = None

    @property
    def line_count(self) -> int:
        """Number of lines (a final newline does not start one); counted on first use."""
        if self._line_count is None:
            self._line_count = self.text.count(b"\n") + (0 if self.had_newline else 1)
        return self._line_count

    def _ends_line(self, end: int) -> bool:
        if end < self.size:
            return self.text[end] == _NEWLINE
        return not self.had_newline

    def _start_of(self, line: int) -> int:
        """Offset of ``line``, walking back from the end of the text (for EOF chunks)."""
        text = self.text
        position = self.size - 1 if self.had_newline else self.size
        start = 0
        for _ in range(self.line_count - line):
            start = text.rfind(b"\n", 0, position) + 1
            position = start - 1
        return start

    def find(self, joined: bytes, count: int, eof: bool) -> tuple[int, int, int]:
        """(line, start offset, end offset) of the first exact match at/after the cursor of the
        ``count`` lines ``joined`` with newlines."""
        if not joined:
            raise _NoExactMatchError
        text = self.text
        if eof:
            candidate = self.line_count - count
            if candidate >= self.line:
                start = self._start_of(candidate)
                end = start + len(joined)
                if text.startswith(joined, start) and self._ends_line(end):
                    return candidate, start, end
        position = text.find(joined, self.offset)
        while position != -1:
            if position == 0 or text[position - 1] == _NEWLINE:
                end = position + len(joined)
                if self._ends_line(end):
                    line = self.line + text.count(b"\n", self.offset, position)
                    return line, position, end
            position = text.find(joined, position + 1)
        raise _NoExactMatchError

    def advance(self, line: int, end: int) -> None:
        """Move the cursor to ``line``, whose start follows the line ending at ``end``."""
        self.line = line
        self.offset = end + 1 if end < self.size else self.size


def apply_exact(before: bytes, chunks: Sequence[Chunk]) -> UpdateResult | None:
    """The line algorithm's result for chunks that all match exactly; None when it is needed.

    ``before`` is the file's UTF-8 text (matching bytes finds what matching the decoded text
    would: UTF-8 keeps character boundaries and a newline byte is always a newline), and so are
    the result's ``pieces``.

    Every matched line is followed by a newline here (changes touching a last line without one
    go to the line algorithm), so regions and insertions are whole ``line\\n`` units. The
    common chunk (not EOF-anchored, found at the first candidate) is handled inline with the
    cursor in locals: a big patch has thousands of chunks, and a method call or property per
    chunk and step is most of the Python time.
    """
    if not before or b"\r" in before:
        return None
    cursor = _Cursor(before)
    text, size = before, len(before)
    find, count = text.find, text.count
    found: list[Found] = []
    append = found.append
    line = offset = 0  # the cursor, kept in locals; ``cursor`` is synced for its methods
    try:
        for chunk in chunks:
            if chunk.anchor is not None:
                cursor.line, cursor.offset = line, offset
                at, _, end = cursor.find(_encode(chunk.anchor), 1, False)
                line, offset = at + 1, end + 1 if end < size else size
            shape = chunk.shape
            old_count = shape[0]
            if not old_count:
                if chunk.eof or chunk.anchor is None:
                    line, offset = cursor.line_count, size
                append((line, 0, chunk, offset, offset, shape))
                continue
            joined = chunk.old_text.encode("utf-8", "surrogatepass")
            start = find(joined, offset) if joined and not chunk.eof else -1
            end = start + len(joined)
            if (
                start >= 0
                and (start == 0 or text[start - 1] == _NEWLINE)
                and end < size
                and text[end] == _NEWLINE
            ):
                at = line + count(b"\n", offset, start)
            else:
                cursor.line, cursor.offset = line, offset
                at, start, end = cursor.find(joined, old_count, chunk.eof)
            append((at, old_count, chunk, start, end, shape))
            line, offset = at + old_count, end + 1 if end < size else size
    except _NoExactMatchError:
        return None
    cursor.line, cursor.offset = line, offset
    if not cursor.had_newline and any(
        end == size or start == size for _, _, _, start, end, _ in found
    ):
        return None  # the last line has no newline: leave that bookkeeping to the line algorithm
    return _assemble(cursor, found)


def _replacement(found: Found) -> tuple[int, bytes]:
    """(offset where the original resumes, the bytes put in place of ``start`` .. it)."""
    _, count, chunk, start, end, shape = found
    if not shape[1]:
        return (end + 1, b"") if count else (start, b"")
    new = chunk.new_text.encode("utf-8", "surrogatepass")
    return (end, new) if count else (start, new + b"\n")


def _assemble(cursor: _Cursor, found: list[Found]) -> UpdateResult:
    """The new text and its diff hunks; the blocks and line views are built only if the hunks
    cannot be read off the chunks (or someone asks for them)."""
    text = cursor.text
    view = memoryview(text)  # slices of a view are not copies
    pieces: list[Buffer] = []
    add = pieces.append
    position = 0
    delta = 0  # new line number - old line number
    for match in found:
        cut, insert = _replacement(match)
        add(view[position : match[3]])
        add(insert)
        position = cut
        delta += match[5][1] - match[1]
    add(view[position:])
    if cursor.had_newline and sum(map(len, pieces)) == 1 and b"".join(pieces) == b"\n":
        pieces = []  # the line algorithm's "empty result" rule
    # Every line before the cursor ends with a newline, so only the rest needs counting.
    old_length = cursor.line + text.count(b"\n", cursor.offset) + 1

    def build() -> DiffMaterial:
        result = b"".join(pieces)
        return _diff_material(text, result, found, old_length, old_length + delta)

    return UpdateResult.deferred(pieces, _hunks_from_chunks(found), build)


def _diff_material(
    text: bytes, result: bytes, found: list[Found], old_length: int, new_length: int
) -> DiffMaterial:
    """The change blocks and line views of the old and new text, from where chunks matched."""
    blocks: list[Block] = []
    old_anchors: list[tuple[int, int]] = [(0, 0)]
    new_anchors: list[tuple[int, int]] = [(0, 0)]
    old_segments: list[tuple[int, list[str]]] = []
    new_segments: list[tuple[int, list[str]]] = []
    written = 0  # length of the new text up to the current chunk
    position = 0
    delta = 0
    for match in found:
        line, count, chunk, start, _, _ = match
        new = chunk.new
        new_line = line + delta
        if count == 0:
            blocks.append((line, line, new_line, new_line + len(new)))
        else:
            for o, oc, n, nc in chunk.changes:
                blocks.append((line + o, line + o + oc, new_line + n, new_line + n + nc))
            old_anchors.append((line, start))
            old_segments.append((line, chunk.old))
        if new:
            new_segments.append((new_line, new))
        cut, insert = _replacement(match)
        written += start - position
        new_anchors.append((new_line, written))
        written += len(insert)
        position = cut
        delta += len(new) - count
    return (
        merge_blocks(blocks),
        TextLines(text, old_anchors, old_length, old_segments),
        TextLines(result, new_anchors, new_length, new_segments),
    )


def _hunks_from_chunks(found: list[Found], context: int = 3) -> str | None:
    """The diff hunks copied from the chunk bodies, when that is exactly what
    :func:`~.diff.render_hunks` would print; else None.

    That holds when every chunk has one run of changes written as all ``-`` lines then all ``+``
    lines, at least ``context`` context lines on both sides, and no other chunk's change within
    ``2 * context`` lines (which would merge the hunks). A chunk body's lines are then the hunk's
    lines verbatim: the exact match guarantees its context lines are the file's.
    """
    if not found:
        return None
    out: list[str] = []
    previous_end = -1 - 2 * context  # old line just past the previous chunk's change
    delta = 0  # new line number - old line number
    for line, _, chunk, _, _, shape in found:
        run = shape[2]
        if run is None:
            return None
        at, removed, added = run
        new_line = line + delta
        delta += added - removed
        if not removed + added or at < context or len(chunk.lines) - at - removed - added < context:
            return None
        if line + at - previous_end <= 2 * context:
            return None
        previous_end = line + at + removed
        out.append(
            f"@@ -{line + at - context + 1},{removed + 2 * context} "
            f"+{new_line + at - context + 1},{added + 2 * context} @@"
        )
        out.append("\n".join(chunk.lines[at - context : at + removed + added + context]))
    return "\n".join(out)
