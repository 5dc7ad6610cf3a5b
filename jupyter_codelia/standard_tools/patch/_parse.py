"""Parsing codex-style patch text.

```
*** Begin Patch
*** Add File: path          then lines that each start with '+'
*** Delete File: path
*** Update File: path
*** Move to: new/path       (optional)
@@ optional anchor line     then ' ' context, '-' old, '+' new lines; '*** End of File' ends an
                            EOF-anchored chunk
*** End Patch
```
It is as lenient as codex's own parser, which the models are trained against: markers may
carry surrounding whitespace, a heredoc wrapper (``<<'EOF'`` ... ``EOF``) is unwrapped, the
first chunk of a section may omit its ``@@`` line and a bare empty line inside a chunk is an
empty context line. Every failure raises :class:`PatchParseError` whose message starts
``Patch parse failed:`` and names the 1-based line of the normalized patch text.
"""

from __future__ import annotations

import bisect
import operator
import re
from dataclasses import dataclass, field
from typing import Literal

from ...errors import CodeliaError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"
_HEADERS = (ADD, DELETE, UPDATE)
_MARKERS = (BEGIN, END, ADD, DELETE, UPDATE, MOVE, END_OF_FILE)
# codex's openers, and the same after the command name (the whole shell line copied)
_HEREDOC_OPENER = re.compile(r"""(?:apply_patch\s*)?<<(EOF|'EOF'|"EOF")""")
_BODY_MARKS = frozenset(" +-")
_CHANGE_RUN = re.compile(r"[-+]+")
_STARS = re.compile(r"\*\*\*")
_NOT_BODY = re.compile(r"[^ +\-\0]")
_NOT_ADDED = re.compile(r"[^+]")
_AFTER_MARKER = operator.itemgetter(slice(1, None))  # a body line without its first character
ChunkShape = tuple[int, int, tuple[int, int, int] | None]
"""A chunk's old and new line counts and its single run of changes (see ``Chunk.shape``)."""


class PatchParseError(CodeliaError, ValueError):
    """The patch text does not follow the grammar; the message says where and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Patch parse failed: {reason}")


class Chunk:
    """One ``@@`` chunk: its anchor, raw body lines (each starting with ``' '``, ``'-'`` or
    ``'+'``) and EOF anchoring.

    ``old``/``new`` are the chunk's lines before/after (``old_text``/``new_text`` the same
    joined with newlines, which is what the fast path needs); ``changes`` lists its runs of
    ``-``/``+`` lines as (old offset, old count, new offset, new count) relative to the chunk
    start. They are computed once, with slices, joins and regexes rather than a Python step per
    line (a patch may have tens of thousands of lines), and the joined texts are kept as
    strings, not lists: a big patch makes thousands of chunks, and every list that lives as
    long as the patch adds to the garbage collector's work.
    """

    __slots__ = (
        "_changes",
        "_marks",
        "_new_text",
        "_old_text",
        "_shape",
        "anchor",
        "eof",
        "lines",
    )

    def __init__(
        self,
        anchor: str | None,
        lines: list[str] | None = None,
        eof: bool = False,
        marks: str | None = None,
    ) -> None:
        self.anchor = anchor
        self.lines: list[str] = lines if lines is not None else []
        self.eof = eof
        self._marks = marks  # the first character of every line, when the parser has it
        # What ``_forget`` resets, set here without the call: the parser makes thousands.
        self._old_text: str | None = None
        self._new_text: str | None = None
        self._changes: list[tuple[int, int, int, int]] | None = None
        self._shape: ChunkShape | None = None

    def _forget(self) -> None:
        """Drop everything computed from the lines (they changed)."""
        self._old_text = None
        self._new_text = None
        self._changes = None
        self._shape = None

    def __repr__(self) -> str:
        return f"Chunk(anchor={self.anchor!r}, lines={self.lines!r}, eof={self.eof!r})"

    def add(self, marker: str, text: str) -> None:
        self.lines.append(marker + text)
        self._marks = None
        self._forget()

    @property
    def body(self) -> list[tuple[str, str]]:
        return [(line[0], line[1:]) for line in self.lines]

    @property
    def shape(self) -> ChunkShape:
        """(old line count, new line count, run): the run is (offset, removed, added) when the
        changes are one run of ``-`` lines followed by ``+`` lines (the usual chunk; with no
        change at all it is ``(len, 0, 0)``), else None. One call gives the fast path all it
        needs to know."""
        shape = self._shape
        if shape is None:
            marks = self.marks
            removed, added = marks.count("-"), marks.count("+")
            at = len(marks) - len(marks.lstrip(" "))
            changed = marks[at:].rstrip(" ")
            run = None if " " in changed or "+-" in changed else (at, removed, added)
            shape = self._shape = (len(marks) - added, len(marks) - removed, run)
        return shape

    def _join_texts(self) -> None:
        """Compute ``old_text`` and ``new_text``: the body lines without their markers, less
        the added lines and less the removed ones, joined."""
        lines = self.lines
        run = self.shape[2]
        if run is None:
            self._old_text = "\n".join([line[1:] for line in lines if line[0] != "+"])
            self._new_text = "\n".join([line[1:] for line in lines if line[0] != "-"])
            return
        at, removed, added = run
        cut = at + removed
        texts = list(map(_AFTER_MARKER, lines))
        self._old_text = "\n".join(texts[:cut] + texts[cut + added :] if added else texts)
        self._new_text = "\n".join(texts[:at] + texts[cut:] if removed else texts)

    @property
    def old_text(self) -> str:
        if self._old_text is None:
            self._join_texts()
            assert self._old_text is not None
        return self._old_text

    @property
    def new_text(self) -> str:
        if self._new_text is None:
            self._join_texts()
            assert self._new_text is not None
        return self._new_text

    @property
    def old(self) -> list[str]:
        # A line holds no newline, so splitting undoes the join.
        return self.old_text.split("\n") if self.shape[0] else []

    @property
    def new(self) -> list[str]:
        return self.new_text.split("\n") if self.shape[1] else []

    @property
    def marks(self) -> str:
        if self._marks is None:
            self._marks = "".join([line[0] for line in self.lines])
        return self._marks

    @property
    def changes(self) -> list[tuple[int, int, int, int]]:
        if self._changes is None:
            marks = self.marks
            changed = marks.strip(" ")
            if " " not in changed:  # at most one run of changes: the usual chunk
                at = len(marks) - len(marks.lstrip(" "))
                removed = changed.count("-")
                self._changes = [(at, removed, at, len(changed) - removed)] if changed else []
                return self._changes
            runs = []
            for run in _CHANGE_RUN.finditer(marks):
                at, stop = run.span()
                removed, added = marks.count("-", at, stop), marks.count("+", at, stop)
                old_at = at - marks.count("+", 0, at)
                new_at = at - marks.count("-", 0, at)
                runs.append((old_at, removed, new_at, added))
            self._changes = runs
        return self._changes

    @property
    def has_change(self) -> bool:
        return bool(self.marks.strip(" "))


@dataclass
class Section:
    kind: Literal["add", "delete", "update"]
    path: str
    move_to: str | None = None
    add_lines: list[str] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def add_text(self) -> str:
        return "".join(line + "\n" for line in self.add_lines)


class _Markers:
    """Where the marker lines of a patch are, found once (one regex scan, not a step per line).

    A marker is recognised with whitespace around it. The one exception is inside a chunk body:
    a line that is a single space followed by exactly the marker text is the context line for a
    file line that reads like a marker (a document about this very format), as in codex.
    """

    def __init__(self, text: str, lines: list[str], first: int, last: int) -> None:
        self.lines = lines
        self.kind: dict[int, str] = {}
        # Markers written with leading spaces: the only ones a run of body lines can contain
        # (any other first character already ends the run).
        self.spaced: list[int] = []
        index, counted = 0, 0  # line number of offset ``counted`` of ``text``
        for found in _STARS.finditer(text):
            index += text.count("\n", counted, found.start())
            counted = found.start()
            if not first < index < last or index in self.kind:
                continue
            line = lines[index]
            marker = _marker(line)
            if marker is not None:
                self.kind[index] = marker
                if line[:1] == " " and line[1:] != line.strip():
                    self.spaced.append(index)

    def of(self, index: int) -> str | None:
        return self.kind.get(index)

    def header(self, index: int) -> bool:
        return self.kind.get(index) in _HEADERS

    def next_in_body(self, start: int, stop: int) -> int:
        """The first marker line in ``[start, stop)`` that ends a chunk body, else ``stop``."""
        if not self.spaced:
            return stop
        position = bisect.bisect_left(self.spaced, start)
        if position < len(self.spaced) and self.spaced[position] < stop:
            return self.spaced[position]
        return stop


def _marker(line: str) -> str | None:
    """The marker ``line`` is once surrounding whitespace is stripped, or None."""
    text = line.strip()
    for marker in _MARKERS:
        if text == marker or (marker.endswith(":") and text.startswith(marker)):
            return marker
    return None


def _path_after(line: str, prefix: str, label: str) -> str:
    path = line.strip()[len(prefix) :].strip()
    if not path:
        raise PatchParseError(f"missing path in {label}")
    return path


def _unwrap(lines: list[str]) -> tuple[int, int]:
    """(first, last): the indexes of the ``*** Begin Patch`` and ``*** End Patch`` lines.

    Blank lines around the patch are ignored, and so is a heredoc wrapper (``<<'EOF'``,
    ``<<"EOF"`` or ``<<EOF`` first, a line ending in ``EOF`` last) copied from a shell call.
    """

    def trimmed(first: int, last: int) -> tuple[int, int]:
        while first <= last and not lines[first].strip():
            first += 1
        while last >= first and not lines[last].strip():
            last -= 1
        return first, last

    first, last = trimmed(0, len(lines) - 1)
    if first > last:
        raise PatchParseError("patch is empty")
    opener, closer = lines[first].strip(), lines[last].strip()
    if first < last and _HEREDOC_OPENER.fullmatch(opener) and closer.endswith("EOF"):
        first, last = trimmed(first + 1, last - 1)
    if first >= last or lines[first].strip() != BEGIN or lines[last].strip() != END:
        raise PatchParseError("missing Begin/End markers")
    return first, last


def parse_patch(text: str) -> list[Section]:
    """The sections of ``text``; raises :class:`PatchParseError`."""
    if "\r" in text:  # a scan, not two copies of a big patch, when there is nothing to do
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    first, last = _unwrap(lines)
    markers = _Markers(text, lines, first, last)
    # The first character of every line (NUL for an empty one), so runs of body lines can be
    # found with a regex instead of a Python step per line.
    marks = "".join([line[:1] or "\0" for line in lines])
    sections: list[Section] = []
    index = first + 1
    while index < last:
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        kind = markers.of(index)
        if kind == ADD:
            section = Section("add", _path_after(line, ADD, "Add File"))
            index += 1
            other = _NOT_ADDED.search(marks, index, last)
            stop = other.start() if other else last
            section.add_lines = [body_line[1:] for body_line in lines[index:stop]]
            after = stop
            while after < last and not lines[after].strip():
                after += 1
            if after < last and not markers.header(after):
                raise PatchParseError(f"add file lines must start with '+' (line {stop + 1})")
            index = after
        elif kind == DELETE:
            section = Section("delete", _path_after(line, DELETE, "Delete File"))
            index += 1
        elif kind == UPDATE:
            section = Section("update", _path_after(line, UPDATE, "Update File"))
            index += 1
            if index < last and markers.of(index) == MOVE:
                section.move_to = _path_after(lines[index], MOVE, "Move to")
                index += 1
            index = _parse_chunks(lines, marks, markers, index, last, section)
            if section.move_to is None:
                if not section.chunks:
                    raise PatchParseError("update file section has no chunks")
                if not any(chunk.has_change for chunk in section.chunks):
                    raise PatchParseError(
                        "update file section must contain at least one '+' or '-' change"
                    )
        else:
            raise PatchParseError(f"unexpected line outside file section (line {index + 1})")
        sections.append(section)
    if not sections:
        raise PatchParseError("no file changes found")
    return sections


def _parse_chunks(
    lines: list[str], marks: str, markers: _Markers, index: int, last: int, section: Section
) -> int:
    """Parse the chunks of an Update section; returns the index of the next section header.

    The first chunk may start without ``@@`` (codex accepts that). A bare empty line inside a
    body is an empty context line whose leading space was lost; empty lines that end a body
    only separate it from what follows.
    """
    kinds, spaced = markers.kind, markers.spaced  # read directly: this loop runs per chunk
    chunks = section.chunks
    while index < last and kinds.get(index) not in _HEADERS:
        line = lines[index]
        if line.startswith("@@"):
            anchor: str | None = line[2:].lstrip() or None
            index += 1
        elif not line.strip():
            index += 1
            continue
        elif not chunks and line[:1] in _BODY_MARKS and index not in kinds:
            anchor = None
        else:
            raise PatchParseError(f"expected '@@' chunk header (line {index + 1})")
        other = _NOT_BODY.search(marks, index, last)
        stop = other.start() if other else last
        if spaced:
            stop = markers.next_in_body(index, stop)
        end = stop
        while end > index and not lines[end - 1]:
            end -= 1
        body, body_marks = lines[index:end], marks[index:end]
        if "\0" in body_marks:
            body = [body_line or " " for body_line in body]
            body_marks = body_marks.replace("\0", " ")
        chunk = Chunk(anchor, body, False, body_marks)
        chunks.append(chunk)
        index = stop
        if index < last:
            kind = kinds.get(index)
            if kind == END_OF_FILE:
                chunk.eof = True
                index += 1
            elif not (kind in _HEADERS or lines[index].startswith("@@")):
                raise PatchParseError(
                    f"invalid change marker '{lines[index][:1]}' (line {index + 1})"
                )
    return index
