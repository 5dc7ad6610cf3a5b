"""The line algorithm of an Update section, with lenient matching.

The file is split into lines; each chunk's anchor and old lines are sought from a cursor in four
passes (exact, ``rstrip``, ``strip``, ``strip`` plus folding of typographic punctuation), and the
replacements are spliced in order. ``_patch_fast`` handles the all-exact case on the text itself;
this module is the general path and the reference it must agree with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import overload

from ...errors import CodeliaError
from ..diff import Block, merge_blocks
from ._parse import Chunk


class PatchApplyError(CodeliaError, ValueError):
    """A section cannot be applied to the files as they are (nothing was written)."""


DiffMaterial = tuple[list[Block], Sequence[str], Sequence[str]]
"""The change blocks and the line views of the old and new text that ``render_hunks`` uses."""


Buffer = bytes | memoryview


class UpdateResult:
    """The new text of an updated file, and what its diff is made from: the change ``blocks``
    with line views of both versions, and ``hunks`` when they are already rendered.

    The fast path works on the file's UTF-8 bytes and gives its result as ``pieces`` to write
    in order (views of the old file's bytes between the new lines), decoded or joined only if
    someone asks for ``text`` or ``data``: a big file is then never copied into a ``str``, back,
    and into one ``bytes`` (each a fresh allocation the kernel must fault in). It renders the
    hunks from the chunks themselves, so its blocks and views are rarely needed, and
    :meth:`deferred` builds them only when first asked for.
    """

    def __init__(
        self,
        text: str | list[Buffer],
        blocks: list[Block],
        old_view: Sequence[str],
        new_view: Sequence[str],
        hunks: str | None = None,
    ) -> None:
        self._text = text if isinstance(text, str) else None
        self._pieces = None if isinstance(text, str) else text
        self.hunks = hunks  # pre-rendered diff hunks (the fast path), or None
        self._material: DiffMaterial = (blocks, old_view, new_view)
        self._build: Callable[[], DiffMaterial] | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.data.decode("utf-8", errors="surrogatepass")
        return self._text

    @property
    def pieces(self) -> list[Buffer]:
        """The new text as UTF-8 (lone surrogates from the patch kept), in pieces."""
        if self._pieces is None:
            assert self._text is not None
            self._pieces = [self._text.encode("utf-8", errors="surrogatepass")]
        return self._pieces

    @property
    def data(self) -> bytes:
        return b"".join(self.pieces)

    @property
    def empty(self) -> bool:
        return not self._text if self._pieces is None else not any(self._pieces)

    def to_crlf(self) -> None:
        """End every line with CRLF (the result was computed on the LF form of a CRLF file)."""
        if self._pieces is not None:
            self._pieces = [self.data.replace(b"\n", b"\r\n")]
        if self._text is not None:
            self._text = self._text.replace("\n", "\r\n")

    @classmethod
    def deferred(
        cls, text: str | list[Buffer], hunks: str | None, build: Callable[[], DiffMaterial]
    ) -> UpdateResult:
        """A result whose blocks and views ``build`` makes on first use."""
        result = cls(text, [], (), (), hunks)
        result._build = build
        return result

    def _diff_material(self) -> DiffMaterial:
        if self._build is not None:
            self._material, self._build = self._build(), None
        return self._material

    @property
    def blocks(self) -> list[Block]:
        return self._diff_material()[0]

    @property
    def old_view(self) -> Sequence[str]:
        return self._diff_material()[1]

    @property
    def new_view(self) -> Sequence[str]:
        return self._diff_material()[2]


_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        "\u2026": "...",
        # no-break, en/em/thin/hair and the other fixed-width spaces, and the ideographic space
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000",
            " ",
        ),
    }
)


def _loose(line: str) -> str:
    return line.strip().translate(_PUNCTUATION)


_PASSES: tuple[Callable[[str], str] | None, ...] = (None, str.rstrip, str.strip, _loose)


class _Haystack:
    """The file's lines plus, computed on first use, their forms for each lenient pass."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._forms: dict[int, list[str]] = {0: lines}

    def form(self, level: int) -> list[str]:
        if level not in self._forms:
            transform = _PASSES[level]
            assert transform is not None
            self._forms[level] = [transform(line) for line in self.lines]
        return self._forms[level]

    def seek(self, pattern: list[str], start: int, eof: bool) -> tuple[int, int]:
        """(first index >= ``start`` where ``pattern`` matches, pass number) or (-1, -1).

        The passes are tried in order: exact, rstrip, strip, strip + punctuation folding.
        """
        count = len(self.lines)
        size = len(pattern)
        for level, transform in enumerate(_PASSES):
            hay = self.form(level)
            wanted = pattern if transform is None else [transform(p) for p in pattern]
            if eof:
                at = count - size
                if at >= start and hay[at : at + size] == wanted:
                    return at, level
            found = _scan(hay, wanted, start)
            if found >= 0:
                return found, level
        return -1, -1


def _scan(hay: list[str], wanted: list[str], start: int) -> int:
    size = len(wanted)
    limit = len(hay) - size + 1
    head = wanted[0]
    position = start
    while position < limit:
        try:
            position = hay.index(head, position, limit)
        except ValueError:
            return -1
        if size == 1 or hay[position : position + size] == wanted:
            return position
        position += 1
    return -1


@dataclass
class _Replacement:
    start: int
    old_count: int
    new_lines: list[str]
    chunk: Chunk
    exact: bool  # matched by the exact pass: context lines equal the file's lines


def apply_update_lines(before: str, chunks: Sequence[Chunk], path: str) -> UpdateResult:
    """The line algorithm of an Update section, with the four matching passes."""
    # An empty file has no lines (not one empty line): what is added to it ends with a newline.
    had_newline = before.endswith("\n") or not before
    lines = before.split("\n")
    if had_newline:
        lines.pop()
    hay = _Haystack(lines)
    cursor = 0
    replacements: list[_Replacement] = []
    for chunk in chunks:
        if chunk.anchor is not None:
            found, _ = hay.seek([chunk.anchor], cursor, False)
            if found < 0:
                raise PatchApplyError(
                    f"Patch apply failed: context '{chunk.anchor}' not found in {path}"
                )
            cursor = found + 1
        old, new = chunk.old, chunk.new
        if not old:
            # Nothing to match: after the anchor, else (as codex does) at the end of the file.
            at = len(lines) if chunk.eof or chunk.anchor is None else cursor
            replacements.append(_Replacement(at, 0, new, chunk, True))
            cursor = at
            continue
        found, level = hay.seek(old, cursor, chunk.eof)
        if found < 0:
            raise PatchApplyError(f"Patch apply failed: expected lines not found in {path}")
        replacements.append(_Replacement(found, len(old), new, chunk, level == 0))
        cursor = found + len(old)
    result: list[str] = []
    blocks: list[Block] = []
    position = 0
    for rep in replacements:
        result.extend(lines[position : rep.start])
        blocks.extend(_chunk_blocks(lines, rep, len(result)))
        result.extend(rep.new_lines)
        position = rep.start + rep.old_count
    result.extend(lines[position:])
    # A last line without a newline that the patch changes, removes or adds lines after gets
    # one, as codex does: the missing newline was that line's, and added lines are whole lines.
    last = replacements[-1] if replacements else None
    ends_with_newline = had_newline or (
        last is not None
        and last.start + last.old_count == len(lines)
        and bool(last.old_count or last.new_lines)
    )
    text = "\n".join(result)
    if ends_with_newline and text:
        text += "\n"
        if not had_newline:  # the final newline is a change of its own in the diff
            blocks.append((len(lines), len(lines), len(result), len(result) + 1))
    elif not result:
        text = ""
    if "\r" in before or "\r" in text:
        old_view: Sequence[str] = _DiffLines(lines, had_newline)
        new_view: Sequence[str] = _DiffLines(result, ends_with_newline and bool(result))
    else:
        old_view = lines + ([""] if had_newline else [])
        new_view = result + ([""] if ends_with_newline and result else [])
    return UpdateResult(text, merge_blocks(blocks), old_view, new_view)


def _chunk_blocks(lines: list[str], rep: _Replacement, new_start: int) -> list[Block]:
    """Change blocks of one replacement, read off the chunk body (no diffing needed)."""
    if rep.old_count == 0:
        return [(rep.start, rep.start, new_start, new_start + len(rep.new_lines))]
    if rep.exact:
        start = rep.start
        return [
            (start + o, start + o + oc, new_start + n, new_start + n + nc)
            for o, oc, n, nc in rep.chunk.changes
        ]
    # A lenient match: a context line may differ from the file line it matched (it is written
    # as the patch has it), which is a change too.
    blocks: list[Block] = []
    old_at, new_at = rep.start, new_start
    for marker, text in rep.chunk.body:
        if marker == " ":
            actual = lines[old_at]
            if actual.endswith("\r"):
                actual = actual[:-1]
            if actual == text:
                old_at += 1
                new_at += 1
                continue
            blocks.append((old_at, old_at + 1, new_at, new_at + 1))
            old_at += 1
            new_at += 1
        elif marker == "-":
            blocks.append((old_at, old_at + 1, new_at, new_at))
            old_at += 1
        else:
            blocks.append((old_at, old_at, new_at, new_at + 1))
            new_at += 1
    return blocks


class _DiffLines(Sequence[str]):
    """A file's lines as the diff sees them: ``\\r`` dropped, the final empty line kept."""

    def __init__(self, lines: list[str], had_newline: bool) -> None:
        self._lines = lines
        self._len = len(lines) + (1 if had_newline else 0)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._line(i) for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        return self._line(index)

    def _line(self, index: int) -> str:
        if index >= len(self._lines):
            return ""
        line = self._lines[index]
        return line[:-1] if line.endswith("\r") else line
