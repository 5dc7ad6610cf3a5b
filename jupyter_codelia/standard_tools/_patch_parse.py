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
Every failure raises :class:`PatchParseError` whose message starts ``Patch parse failed:`` and
names the 1-based line of the normalized patch text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ..errors import CodeliaError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"
_HEADERS = (ADD, DELETE, UPDATE)
_CHANGE_RUN = re.compile(r"[-+]+")
_NOT_BODY = re.compile(r"[^ +\-]")
_NOT_ADDED = re.compile(r"[^+]")


class PatchParseError(CodeliaError, ValueError):
    """The patch text does not follow the grammar; the message says where and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Patch parse failed: {reason}")


class Chunk:
    """One ``@@`` chunk: its anchor, raw body lines (each starting with ``' '``, ``'-'`` or
    ``'+'``) and EOF anchoring.

    ``old``/``new`` are the chunk's lines before/after; ``changes`` lists its runs of ``-``/``+``
    lines as (old offset, old count, new offset, new count) relative to the chunk start. They are
    computed once, with comprehensions and regexes rather than a Python step per line (a patch
    may have tens of thousands of lines).
    """

    __slots__ = ("_changes", "_marks", "_new", "_old", "anchor", "eof", "lines")

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
        self._old: list[str] | None = None
        self._new: list[str] | None = None
        self._changes: list[tuple[int, int, int, int]] | None = None

    def __repr__(self) -> str:
        return f"Chunk(anchor={self.anchor!r}, lines={self.lines!r}, eof={self.eof!r})"

    def add(self, marker: str, text: str) -> None:
        self.lines.append(marker + text)
        self._old = self._new = self._changes = self._marks = None

    @property
    def body(self) -> list[tuple[str, str]]:
        return [(line[0], line[1:]) for line in self.lines]

    @property
    def old(self) -> list[str]:
        if self._old is None:
            marks = self.marks
            if "+" not in marks:
                self._old = [line[1:] for line in self.lines]
            else:
                self._old = [line[1:] for line in self.lines if line[0] != "+"]
        return self._old

    @property
    def new(self) -> list[str]:
        if self._new is None:
            marks = self.marks
            if "-" not in marks:
                self._new = [line[1:] for line in self.lines]
            else:
                self._new = [line[1:] for line in self.lines if line[0] != "-"]
        return self._new

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


def _is_header(line: str) -> bool:
    return line.startswith(_HEADERS)


def _path_after(line: str, prefix: str, label: str) -> str:
    path = line[len(prefix) :].strip()
    if not path:
        raise PatchParseError(f"missing path in {label}")
    return path


def parse_patch(text: str) -> list[Section]:
    """The sections of ``text``; raises :class:`PatchParseError`."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first, last = 0, len(lines) - 1
    while first <= last and not lines[first].strip():
        first += 1
    while last >= first and not lines[last].strip():
        last -= 1
    if first > last:
        raise PatchParseError("patch is empty")
    if lines[first] != BEGIN or lines[last] != END or first == last:
        raise PatchParseError("missing Begin/End markers")
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
        if line.startswith(ADD):
            section = Section("add", _path_after(line, ADD, "Add File"))
            index += 1
            other = _NOT_ADDED.search(marks, index, last)
            stop = other.start() if other else last
            section.add_lines = [body_line[1:] for body_line in lines[index:stop]]
            if stop < last and not _is_header(lines[stop]):
                raise PatchParseError(f"add file lines must start with '+' (line {stop + 1})")
            index = stop
        elif line.startswith(DELETE):
            section = Section("delete", _path_after(line, DELETE, "Delete File"))
            index += 1
        elif line.startswith(UPDATE):
            section = Section("update", _path_after(line, UPDATE, "Update File"))
            index += 1
            if index < last and lines[index].startswith(MOVE):
                section.move_to = _path_after(lines[index], MOVE, "Move to")
                index += 1
            index = _parse_chunks(lines, marks, index, last, section)
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


def _parse_chunks(lines: list[str], marks: str, index: int, last: int, section: Section) -> int:
    """Parse the chunks of an Update section; returns the index of the next section header."""
    while index < last and not _is_header(lines[index]):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        if not line.startswith("@@"):
            raise PatchParseError(f"expected '@@' chunk header (line {index + 1})")
        index += 1
        other = _NOT_BODY.search(marks, index, last)
        stop = other.start() if other else last
        chunk = Chunk(line[2:].lstrip() or None, lines[index:stop], marks=marks[index:stop])
        section.chunks.append(chunk)
        index = stop
        if index < last:
            body_end = lines[index]
            if body_end == END_OF_FILE:
                chunk.eof = True
                index += 1
            elif not (body_end.startswith("@@") or _is_header(body_end)):
                raise PatchParseError(f"invalid change marker '{body_end[:1]}' (line {index + 1})")
    return index
