"""Parsing codex-style patch text (spec/file-tools.md §7.1).

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

from dataclasses import dataclass, field
from typing import Literal

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"
_HEADERS = (ADD, DELETE, UPDATE)
_MARKERS = frozenset(" -+")


class PatchParseError(ValueError):
    """The patch text does not follow the grammar; the message says where and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Patch parse failed: {reason}")


@dataclass
class Chunk:
    """One ``@@`` chunk: its anchor, body lines as (marker, text), and EOF anchoring.

    ``old``/``new`` are the chunk's lines before/after; ``changes`` lists its runs of ``-``/``+``
    lines as (old offset, old count, new offset, new count) relative to the chunk start.
    """

    anchor: str | None
    body: list[tuple[str, str]] = field(default_factory=list)
    eof: bool = False
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    changes: list[tuple[int, int, int, int]] = field(default_factory=list)

    def add(self, marker: str, text: str) -> None:
        self.body.append((marker, text))
        if marker == " ":
            self.old.append(text)
            self.new.append(text)
            return
        last = self.changes[-1] if self.changes else None
        old_at, new_at = len(self.old), len(self.new)
        if last is None or last[0] + last[1] != old_at or last[2] + last[3] != new_at:
            last = (old_at, 0, new_at, 0)
            self.changes.append(last)
        if marker == "-":
            self.old.append(text)
            self.changes[-1] = (last[0], last[1] + 1, last[2], last[3])
        else:
            self.new.append(text)
            self.changes[-1] = (last[0], last[1], last[2], last[3] + 1)

    @property
    def has_change(self) -> bool:
        return bool(self.changes)


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
            while index < last and not _is_header(lines[index]):
                body_line = lines[index]
                if not body_line.startswith("+"):
                    raise PatchParseError(f"add file lines must start with '+' (line {index + 1})")
                section.add_lines.append(body_line[1:])
                index += 1
        elif line.startswith(DELETE):
            section = Section("delete", _path_after(line, DELETE, "Delete File"))
            index += 1
        elif line.startswith(UPDATE):
            section = Section("update", _path_after(line, UPDATE, "Update File"))
            index += 1
            if index < last and lines[index].startswith(MOVE):
                section.move_to = _path_after(lines[index], MOVE, "Move to")
                index += 1
            index = _parse_chunks(lines, index, last, section)
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


def _parse_chunks(lines: list[str], index: int, last: int, section: Section) -> int:
    """Parse the chunks of an Update section; returns the index of the next section header."""
    while index < last and not _is_header(lines[index]):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        if not line.startswith("@@"):
            raise PatchParseError(f"expected '@@' chunk header (line {index + 1})")
        chunk = Chunk(anchor=line[2:].lstrip() or None)
        index += 1
        while index < last:
            body_line = lines[index]
            marker = body_line[:1]
            if marker in _MARKERS:  # the common case first: headers start with '*' or '@'
                chunk.add(marker, body_line[1:])
                index += 1
                continue
            if body_line.startswith("@@") or _is_header(body_line):
                break
            if body_line == END_OF_FILE:
                chunk.eof = True
                index += 1
                break
            raise PatchParseError(f"invalid change marker '{marker}' (line {index + 1})")
        section.chunks.append(chunk)
    return index
