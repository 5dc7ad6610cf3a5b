"""The ``apply_patch`` tool: grammar, lenient matching, validation, all-or-nothing writing."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path

import pytest
from _file_tools_helpers import FileTools, make_store
from test_write_edit import apply_unified

from jupyter_codelia.standard_tools.diff import to_lines, unified_diff
from jupyter_codelia.standard_tools.patch import PatchApplyError, apply_update, update_diff
from jupyter_codelia.standard_tools.patch._fast import apply_exact
from jupyter_codelia.standard_tools.patch._lines import UpdateResult, apply_update_lines
from jupyter_codelia.standard_tools.patch._parse import Chunk, PatchParseError, parse_patch

E = "Error executing tool: "


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for directories)."""
    result: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        result[rel] = None if path.is_dir() else path.read_bytes()
    return result


def wrap(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


@pytest.fixture
def patch_tools(tmp_path: Path) -> FileTools:
    root = tmp_path / "work"
    root.mkdir()
    (root / "app.py").write_text(
        "import os\n\n\ndef main():\n    print('hello')\n    return 0\n\n\n"
        "def helper():\n    return 'x'\n"
    )
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    store, _ = make_store(tmp_path / "store")
    return FileTools(root, store=store)


def write(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text)


def read(root: Path, name: str) -> str:
    return (root / name).read_text()


# --- the four kinds of section -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_add_delete_update_move_in_one_patch(patch_tools: FileTools) -> None:
    root = patch_tools.root
    (root / "old").mkdir()
    write(root, "old/mod.py", "x = 1\ny = 2\n")
    os.chmod(root / "old/mod.py", 0o751)
    patch = wrap(
        "*** Add File: pkg/new.py",
        "+def added():",
        "+    return 42",
        "*** Delete File: notes.txt",
        "*** Update File: app.py",
        "@@ def main():",
        "-    print('hello')",
        "+    print('bye')",
        "*** Update File: old/mod.py",
        "*** Move to: new/place/mod.py",
        "@@",
        " x = 1",
        "-y = 2",
        "+y = 3",
    )
    value = await patch_tools.json("apply_patch", patch=patch)
    assert value["summary"] == "Applied patch to 4 file(s)"
    assert value["file_count"] == 4
    assert value["files"] == [
        {"action": "add", "file_path": "pkg/new.py", "summary": "A pkg/new.py"},
        {"action": "delete", "file_path": "notes.txt", "summary": "D notes.txt"},
        {"action": "update", "file_path": "app.py", "summary": "M app.py"},
        {
            "action": "move",
            "file_path": "old/mod.py",
            "move_to": "new/place/mod.py",
            "summary": "R old/mod.py -> new/place/mod.py",
        },
    ]
    assert read(root, "pkg/new.py") == "def added():\n    return 42\n"
    assert not (root / "notes.txt").exists()
    assert "    print('bye')\n" in read(root, "app.py")
    assert not (root / "old/mod.py").exists()
    assert read(root, "new/place/mod.py") == "x = 1\ny = 3\n"
    assert stat.S_IMODE((root / "new/place/mod.py").stat().st_mode) == 0o751
    diff = value["diff"]
    assert diff.startswith("--- pkg/new.py\n+++ pkg/new.py\n@@ -0,0 +1,2 @@\n+def added():")
    assert "\n\n--- notes.txt\n+++ notes.txt\n@@ -1,3 +0,0 @@\n-one\n-two\n-three\n\n" in diff
    assert (
        "--- app.py\n+++ app.py\n@@ -2,7 +2,7 @@\n \n \n def main():\n-    print('hello')" in diff
    )
    assert (
        "--- old/mod.py\n+++ new/place/mod.py\n@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 3\n " in diff
    )
    leftovers = [p.name for p in root.rglob("*") if ".codelia-" in p.name]
    assert leftovers == []


@pytest.mark.asyncio
async def test_move_only_and_move_onto_itself(patch_tools: FileTools) -> None:
    root = patch_tools.root
    value = await patch_tools.json(
        "apply_patch", patch=wrap("*** Update File: notes.txt", "*** Move to: archive/notes.md")
    )
    assert value["files"][0]["action"] == "move"
    assert value["diff"] == ""
    assert read(root, "archive/notes.md") == "one\ntwo\nthree\n"
    value = await patch_tools.json(
        "apply_patch",
        patch=wrap(
            "*** Update File: archive/notes.md",
            "*** Move to: ./archive/notes.md",
            "@@",
            "-one",
            "+ONE",
        ),
    )
    assert value["files"] == [
        {"action": "update", "file_path": "./archive/notes.md", "summary": "M ./archive/notes.md"}
    ]
    assert read(root, "archive/notes.md") == "ONE\ntwo\nthree\n"


@pytest.mark.asyncio
async def test_move_onto_a_file_deleted_earlier_in_the_patch(patch_tools: FileTools) -> None:
    root = patch_tools.root
    write(root, "target.txt", "old target\n")
    await patch_tools.json(
        "apply_patch",
        patch=wrap(
            "*** Delete File: target.txt", "*** Update File: notes.txt", "*** Move to: target.txt"
        ),
    )
    assert read(root, "target.txt") == "one\ntwo\nthree\n"
    assert not (root / "notes.txt").exists()


@pytest.mark.asyncio
async def test_several_hunks_anchors_and_end_of_file(patch_tools: FileTools) -> None:
    root = patch_tools.root
    write(root, "long.txt", "".join(f"line {i}\n" for i in range(1, 41)))
    patch = wrap(
        "*** Update File: long.txt",
        "@@ line 4",
        " line 5",
        "-line 6",
        "+line six",
        " line 7",
        "@@",
        " line 19",
        "+inserted after 19",
        " line 20",
        "@@ line 30",
        "+after thirty",
        "@@",
        " line 39",
        "-line 40",
        "+the end",
        "*** End of File",
    )
    value = await patch_tools.json("apply_patch", patch=patch)
    lines = read(root, "long.txt").splitlines()
    assert lines[5] == "line six"
    assert lines[19] == "inserted after 19"
    assert lines[31] == "after thirty"
    assert lines[-1] == "the end"
    assert len(lines) == 42
    assert value["diff"].count("\n@@ -") == 4


@pytest.mark.asyncio
async def test_eof_anchored_insertion_and_no_trailing_newline(patch_tools: FileTools) -> None:
    root = patch_tools.root
    write(root, "tail.txt", "a\nb")
    await patch_tools.json(
        "apply_patch", patch=wrap("*** Update File: tail.txt", "@@", "+c", "*** End of File")
    )
    # Lines added after a last line without a newline are whole lines, as in codex.
    assert read(root, "tail.txt") == "a\nb\nc\n"
    write(root, "open.txt", "a\nb")
    await patch_tools.json("apply_patch", patch=wrap("*** Update File: open.txt", "@@", "-a"))
    assert read(root, "open.txt") == "b"  # the last line untouched: still no newline
    await patch_tools.json("apply_patch", patch=wrap("*** Update File: open.txt", "@@", "-b", "+B"))
    assert read(root, "open.txt") == "B\n"
    write(root, "one.txt", "only\n")
    await patch_tools.json("apply_patch", patch=wrap("*** Update File: one.txt", "@@", "-only"))
    assert read(root, "one.txt") == ""


@pytest.mark.asyncio
async def test_eof_chunk_prefers_the_last_occurrence(patch_tools: FileTools) -> None:
    root = patch_tools.root
    write(root, "dup.txt", "end\nmiddle\nend\n")
    await patch_tools.json(
        "apply_patch",
        patch=wrap("*** Update File: dup.txt", "@@", "-end", "+END", "*** End of File"),
    )
    assert read(root, "dup.txt") == "end\nmiddle\nEND\n"


@pytest.mark.asyncio
async def test_whitespace_and_unicode_punctuation_tolerance(patch_tools: FileTools) -> None:
    root = patch_tools.root
    write(
        root,
        "fuzzy.py",
        "def f():   \n\tmsg = \u201chello\u201d \u2014 it\u2019s\u2026\n    return\u00a0msg\n",
    )
    patch = wrap(
        "*** Update File: fuzzy.py",
        "@@",
        " def f():",
        '-    msg = "hello" - it\'s...',
        "+    msg = 'bye'",
        "     return msg",
    )
    value = await patch_tools.json("apply_patch", patch=patch)
    # lines matched leniently are rewritten as the patch wrote them
    assert read(root, "fuzzy.py") == "def f():\n    msg = 'bye'\n    return msg\n"
    assert "-def f():\n+def f():" not in value["diff"]  # trailing spaces are a real change...
    assert "-def f():   " in value["diff"]  # ...and shown as such


@pytest.mark.asyncio
async def test_update_of_a_crlf_file_keeps_crlf(patch_tools: FileTools) -> None:
    root = patch_tools.root
    (root / "win.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    value = await patch_tools.json(
        "apply_patch",
        patch=wrap("*** Update File: win.txt", "@@", " alpha", "-beta", "+BETA", "+extra"),
    )
    assert (root / "win.txt").read_bytes() == b"alpha\r\nBETA\r\nextra\r\ngamma\r\n"
    assert value["diff"] == (
        "--- win.txt\n+++ win.txt\n@@ -1,4 +1,5 @@\n alpha\n-beta\n+BETA\n+extra\n gamma\n "
    )


@pytest.mark.asyncio
async def test_lines_appended_to_a_crlf_file_without_a_final_newline_end_in_crlf(
    patch_tools: FileTools,
) -> None:
    """codex gives every line of the result the file's CRLF, the appended last one too."""
    root = patch_tools.root
    (root / "win.txt").write_bytes(b"one\r\ntwo")
    value = await patch_tools.json(
        "apply_patch", patch=wrap("*** Update File: win.txt", "@@", " two", "+three", "+four")
    )
    assert (root / "win.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\nfour\r\n"
    assert value["diff"] == unified_diff("win.txt", "one\ntwo", "one\ntwo\nthree\nfour\n")
    (root / "eof.txt").write_bytes(b"one\r\ntwo")
    await patch_tools.json(
        "apply_patch", patch=wrap("*** Update File: eof.txt", "@@", "+three", "*** End of File")
    )
    assert (root / "eof.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\n"


@pytest.mark.asyncio
async def test_multibyte_crlf_file_through_the_fast_path_and_its_line_views(
    patch_tools: FileTools,
) -> None:
    """Exact matches in a CRLF file of multi-byte characters: the fast path works on the bytes,
    and its hunks with one context line need the line views (byte offsets, decoded lines)."""
    root = patch_tools.root
    lines = [f"{i} \u00e9t\u00e9 \u65e5\u672c \U0001f600" for i in range(40)]
    (root / "wide.txt").write_bytes("".join(line + "\r\n" for line in lines).encode())
    patch = wrap(
        "*** Update File: wide.txt",
        "@@",
        " " + lines[4],
        "-" + lines[5],
        "+cinq \u00e9",
        "@@",
        " " + lines[20],
        "+\u00e0 part",
        " " + lines[21],
        "@@",
        "-" + lines[39],
        "+fin \U0001f600",
        "*** End of File",
    )
    value = await patch_tools.json("apply_patch", patch=patch)
    expected = [*lines[:5], "cinq \u00e9", *lines[6:21], "\u00e0 part", *lines[21:39]]
    expected.append("fin \U0001f600")
    assert (root / "wide.txt").read_bytes() == "".join(line + "\r\n" for line in expected).encode()
    assert value["diff"] == "\n".join(
        [
            "--- wide.txt",
            "+++ wide.txt",
            "@@ -3,7 +3,7 @@",
            *(" " + line for line in lines[2:5]),
            "-" + lines[5],
            "+cinq \u00e9",
            *(" " + line for line in lines[6:9]),
            "@@ -19,6 +19,7 @@",
            *(" " + line for line in lines[18:21]),
            "+\u00e0 part",
            *(" " + line for line in lines[21:24]),
            "@@ -37,5 +38,5 @@",
            *(" " + line for line in lines[36:39]),
            "-" + lines[39],
            "+fin \U0001f600",
            " ",
        ]
    )


@pytest.mark.asyncio
async def test_crlf_patch_text_is_normalized(patch_tools: FileTools) -> None:
    patch = "*** Begin Patch\r\n*** Update File: notes.txt\r\n@@\r\n-two\r\n+2\r\n*** End Patch\r\n"
    await patch_tools.json("apply_patch", patch=patch)
    assert read(patch_tools.root, "notes.txt") == "one\n2\nthree\n"


@pytest.mark.asyncio
async def test_dry_run_writes_nothing(patch_tools: FileTools) -> None:
    root = patch_tools.root
    before = snapshot(root)
    value = await patch_tools.json(
        "apply_patch",
        patch=wrap("*** Add File: x.txt", "+x", "*** Update File: notes.txt", "@@", "-one", "+1"),
        dry_run=True,
    )
    assert value["summary"] == "Patch preview ready for 2 file(s)"
    assert "-one\n+1" in value["diff"]
    assert snapshot(root) == before


@pytest.mark.asyncio
async def test_big_patch_diff_is_cached(tmp_path: Path) -> None:
    store, read_back = make_store(tmp_path / "store")
    root = tmp_path / "w"
    tools = FileTools(root, store=store)
    body = [f"+row {i}" for i in range(400)]
    value = await tools.json("apply_patch", patch=wrap("*** Add File: big.txt", *body))
    assert value["diff_truncated"] is True
    full = read_back(value["diff_cache_id"])
    assert value["diff_cache_id"].startswith("apply_patch_diff_")
    assert full.startswith("--- big.txt\n+++ big.txt\n@@ -0,0 +1,400 @@\n+row 0\n")
    assert list(value) == [
        "summary",
        "file_count",
        "files",
        "diff",
        "diff_truncated",
        "diff_cache_id",
    ]


# --- grammar errors ----------------------------------------------------------------------------

GRAMMAR_CASES = [
    (
        "<<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nNOPE",
        "Patch parse failed: missing Begin/End markers",
    ),
    (
        "<<EOF\n*** Add File: a\n+x\nEOF",
        "Patch parse failed: missing Begin/End markers",
    ),
    (
        "*** Begin Patch\n*** Add File: a.txt\n+ok\n\nstray\n*** End Patch",
        "Patch parse failed: add file lines must start with '+' (line 4)",
    ),
    (
        "*** Begin Patch\n*** Update File: a\n@@\n-old\n*** End of File\n-x\n*** End Patch",
        "Patch parse failed: expected '@@' chunk header (line 6)",
    ),
    ("  \n\n ", "Patch parse failed: patch is empty"),
    (
        "*** Update File: a\n@@\n-x\n+y\n*** End Patch",
        "Patch parse failed: missing Begin/End markers",
    ),
    ("*** Begin Patch\n*** Add File: a\n+x", "Patch parse failed: missing Begin/End markers"),
    ("*** Begin Patch", "Patch parse failed: missing Begin/End markers"),
    ("*** Begin Patch\n*** End Patch", "Patch parse failed: no file changes found"),
    ("*** Begin Patch\n\n  \n*** End Patch", "Patch parse failed: no file changes found"),
    (
        "*** Begin Patch\n*** Add File: a.txt\n+ok\nnot plus\n*** End Patch",
        "Patch parse failed: add file lines must start with '+' (line 4)",
    ),
    (
        "*** Begin Patch\n*** Add File:   \n+x\n*** End Patch",
        "Patch parse failed: missing path in Add File",
    ),
    (
        "*** Begin Patch\n*** Delete File:\n*** End Patch",
        "Patch parse failed: missing path in Delete File",
    ),
    (
        "*** Begin Patch\n*** Update File: \n@@\n-a\n*** End Patch",
        "Patch parse failed: missing path in Update File",
    ),
    (
        "*** Begin Patch\n*** Update File: a\n*** Move to:\n@@\n-a\n*** End Patch",
        "Patch parse failed: missing path in Move to",
    ),
    (
        "*** Begin Patch\nhello\n*** Add File: a\n*** End Patch",
        "Patch parse failed: unexpected line outside file section (line 2)",
    ),
    (
        "*** Begin Patch\n*** Move to: b\n*** End Patch",
        "Patch parse failed: unexpected line outside file section (line 2)",
    ),
    (
        "*** Begin Patch\n*** Update File: a\n@@ -1,3 +1,3 @@\n-old\n*** End of File\nx\n"
        "*** End Patch",
        "Patch parse failed: expected '@@' chunk header (line 6)",
    ),
    (
        "*** Begin Patch\n*** Update File: a\n@@\n-old\n*new\n*** End Patch",
        "Patch parse failed: invalid change marker '*' (line 5)",
    ),
    (
        "*** Begin Patch\n*** Update File: a\n*** End Patch",
        "Patch parse failed: update file section has no chunks",
    ),
    (
        "*** Begin Patch\n*** Update File: a\n@@ anchor\n same\n*** End Patch",
        "Patch parse failed: update file section must contain at least one '+' or '-' change",
    ),
]


@pytest.mark.parametrize(("patch", "message"), GRAMMAR_CASES)
def test_grammar_errors(patch: str, message: str) -> None:
    with pytest.raises(PatchParseError) as caught:
        parse_patch(patch)
    assert str(caught.value) == message


@pytest.mark.asyncio
async def test_grammar_errors_reach_the_model_and_change_nothing(patch_tools: FileTools) -> None:
    before = snapshot(patch_tools.root)
    for patch, message in GRAMMAR_CASES:
        assert await patch_tools.error("apply_patch", patch=patch) == E + message
    assert snapshot(patch_tools.root) == before


def test_parse_details() -> None:
    sections = parse_patch(
        "\n\n*** Begin Patch\n\n*** Add File:  spaced name.txt \n+\n+x\n"
        "*** Update File: u\n\n@@   def f():\n  indented\n-old\n+new\n*** End of File\n\n"
        "@@\n+tail\n*** Delete File: d\n*** End Patch\n\n"
    )
    assert [s.kind for s in sections] == ["add", "update", "delete"]
    assert sections[0].path == "spaced name.txt"
    assert sections[0].add_text == "\nx\n"
    chunk = sections[1].chunks[0]
    assert chunk.anchor == "def f():"
    assert chunk.old == [" indented", "old"]
    assert chunk.new == [" indented", "new"]
    assert chunk.eof is True
    assert sections[1].chunks[1].anchor is None
    assert parse_patch("*** Begin Patch\n*** Add File: e\n*** End Patch")[0].add_text == ""


# --- apply / validation errors ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_apply_errors(patch_tools: FileTools) -> None:
    root = patch_tools.root
    (root / "dir").mkdir()
    before = snapshot(root)
    cases = [
        (
            wrap("*** Update File: notes.txt", "@@ missing anchor", "-one", "+1"),
            "Patch apply failed: context 'missing anchor' not found in notes.txt",
        ),
        (
            wrap("*** Update File: notes.txt", "@@", "-four", "+4"),
            "Patch apply failed: expected lines not found in notes.txt",
        ),
        (
            wrap("*** Update File: notes.txt", "@@ three", "-one", "+1"),
            "Patch apply failed: expected lines not found in notes.txt",
        ),
        (wrap("*** Add File: notes.txt", "+x"), "File already exists: notes.txt"),
        (wrap("*** Delete File: nope.txt"), "File not found: nope.txt"),
        (wrap("*** Update File: nope.txt", "@@", "-a"), "File not found: nope.txt"),
        (wrap("*** Delete File: dir"), "Path is a directory: dir"),
        (wrap("*** Update File: dir", "@@", "-a"), "Path is a directory: dir"),
        (
            wrap("*** Delete File: notes.txt", "*** Delete File: ./notes.txt"),
            "Patch apply failed: duplicate source path ./notes.txt",
        ),
        (
            wrap("*** Add File: n.txt", "+x", "*** Update File: app.py", "*** Move to: n.txt"),
            "Patch apply failed: duplicate target path n.txt",
        ),
        (
            wrap("*** Update File: notes.txt", "*** Move to: app.py"),
            "Move target already exists: app.py",
        ),
        (
            wrap("*** Add File: fine.txt", "+ok", "*** Update File: notes.txt", "@@", "-zzz"),
            "Patch apply failed: expected lines not found in notes.txt",
        ),
    ]
    for patch, message in cases:
        assert await patch_tools.error("apply_patch", patch=patch) == E + message, patch
    assert snapshot(root) == before


# --- all-or-nothing -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_failure_while_staging_leaves_every_file_unchanged(patch_tools: FileTools) -> None:
    """A target whose parent is a regular file cannot be created: nothing else may change."""
    root = patch_tools.root
    write(root, "blocker", "I am a file\n")
    before = snapshot(root)
    patch = wrap(
        "*** Update File: app.py",
        "@@ def main():",
        "-    print('hello')",
        "+    print('changed')",
        "*** Delete File: notes.txt",
        "*** Add File: brand/new/dir/file.txt",
        "+new",
        "*** Add File: blocker/child.txt",
        "+cannot exist",
    )
    message = await patch_tools.error("apply_patch", patch=patch)
    assert message.startswith(E + "Error applying patch: NotADirectoryError: ")
    assert message.endswith("(no file was changed)")
    assert snapshot(root) == before  # no temp files, no new directories, no edits


@pytest.mark.asyncio
async def test_failure_while_renaming_rolls_back_earlier_files(patch_tools: FileTools) -> None:
    """A file must go where an earlier section of the same patch made a directory.

    Validation cannot see it (neither path exists yet); the rename of the last section fails
    after the update, the delete and the first add were already renamed into place, and all of
    them are rolled back.
    """
    root = patch_tools.root
    before = snapshot(root)
    patch = wrap(
        "*** Update File: app.py",
        "@@ def main():",
        "-    print('hello')",
        "+    print('changed')",
        "*** Delete File: notes.txt",
        "*** Add File: clash/inner.txt",
        "+inner",
        "*** Add File: clash",
        "+a file where a directory now is",
    )
    message = await patch_tools.error("apply_patch", patch=patch)
    assert message.startswith(E + "Error applying patch: ")
    assert "IsADirectoryError" in message or "FileExistsError" in message
    assert message.endswith("(no file was changed)")
    assert snapshot(root) == before


@pytest.mark.asyncio
async def test_directory_where_a_moved_file_must_go(patch_tools: FileTools) -> None:
    root = patch_tools.root
    before = snapshot(root)
    patch = wrap(
        "*** Update File: notes.txt",
        "@@",
        "-one",
        "+uno",
        "*** Add File: spot/x.txt",
        "+x",
        "*** Update File: app.py",
        "*** Move to: spot",
    )
    message = await patch_tools.error("apply_patch", patch=patch)
    assert message.startswith(E + "Error applying patch: ")
    assert snapshot(root) == before


# --- the pure function ---------------------------------------------------------------------------


def test_apply_update_blocks_describe_the_change() -> None:
    sections = parse_patch(wrap("*** Update File: f", "@@", " a", "-b", "+B", " c"))
    result = apply_update("a\nb\nc\n", sections[0].chunks, "f")
    assert result.text == "a\nB\nc\n"
    assert [tuple(b) for b in result.blocks] == [(1, 2, 1, 2)]
    empty = apply_update("", parse_patch(wrap("*** Update File: f", "@@", "+x"))[0].chunks, "f")
    assert empty.text == "x\n"


ASCII_WORDS = ["a", "b", "c", "", "dd", "e e"]
# Multi-byte UTF-8 (2, 3 and 4 bytes): the fast path matches bytes, so its byte offsets and
# line views must still give the line algorithm's characters.
WIDE_WORDS = ["\u00e9", "b", "\u65e5\u672c", "", "\U0001f600x", "e \u00e9"]


def random_patch_case(
    rng: random.Random, words: list[str] = ASCII_WORDS
) -> tuple[str, list[Chunk]]:
    """A random file and random chunks that usually (not always) match it exactly."""
    lines = [rng.choice(words) for _ in range(rng.randint(1, 30))]
    text = "\n".join(lines) + rng.choice(["", "\n"])
    file_lines = text.split("\n")
    if text.endswith("\n"):
        file_lines.pop()
    chunks: list[Chunk] = []
    position = 0
    for _ in range(rng.randint(1, 4)):
        if position >= len(file_lines) and rng.random() < 0.7:
            break
        chunk = Chunk(anchor=None, eof=rng.random() < 0.15)
        if rng.random() < 0.2 and position < len(file_lines):
            chunk.anchor = file_lines[position]
            position += 1
        size = rng.randint(0, 3)
        segment = file_lines[position : position + size]
        position += size
        for item in segment:
            roll = rng.random()
            if roll < 0.5:
                chunk.add(" ", item)
            elif roll < 0.8:
                chunk.add("-", item)
            else:
                chunk.add("-", item)
                chunk.add("+", item + "x")
        for _ in range(rng.randint(0, 2)):
            chunk.add("+", rng.choice(words))
        if rng.random() < 0.1:
            chunk.add(" ", "not in the file")
        chunks.append(chunk)
    return text, chunks


@pytest.mark.parametrize("words", [ASCII_WORDS, WIDE_WORDS], ids=["ascii", "multibyte"])
def test_fast_path_equals_the_line_algorithm(words: list[str]) -> None:
    """The bytes.find fast path gives the line algorithm's text and diff on random cases."""
    rng = random.Random(11)
    compared = 0
    for _ in range(3000):
        text, chunks = random_patch_case(rng, words)
        try:
            slow = apply_update_lines(text, chunks, "f")
        except PatchApplyError:
            slow = None
        fast = apply_exact(text.encode(), chunks)
        if fast is None:
            continue
        assert slow is not None, (text, chunks)
        assert fast.text == slow.text, (text, chunks)
        fast_result = apply_update(text, chunks, "f")
        assert update_diff("f", "f", text, fast_result) == update_diff("f", "f", text, slow)
        assert apply_unified(text, update_diff("f", "f", text, fast_result)) == to_lines(slow.text)
        compared += 1
    assert compared > 1000


def test_hunks_read_off_the_chunks_equal_the_rendered_diff() -> None:
    """Well-formed chunks (3+ context lines, one '-' then '+' run) take the copy shortcut."""
    rng = random.Random(5)
    shortcut = 0
    for _ in range(300):
        lines = [f"line {i} {rng.randint(0, 9)}" for i in range(rng.randint(20, 80))]
        text = "\n".join(lines) + "\n"
        chunks: list[Chunk] = []
        position = rng.randint(0, 5)
        while position + 8 < len(lines):
            chunk = Chunk(anchor=None)
            lead, removed, trail = rng.randint(3, 4), rng.randint(0, 2), rng.randint(3, 4)
            for item in lines[position : position + lead]:
                chunk.add(" ", item)
            for item in lines[position + lead : position + lead + removed]:
                chunk.add("-", item)
            for k in range(rng.randint(0 if removed else 1, 2)):
                chunk.add("+", f"new {k}")
            for item in lines[position + lead + removed : position + lead + removed + trail]:
                chunk.add(" ", item)
            chunks.append(chunk)
            position += lead + removed + trail + rng.randint(0, 6)
        if not chunks or position > len(lines):
            continue
        result = apply_update(text, chunks, "f")
        if result.hunks is not None:
            shortcut += 1
        rendered = update_diff(
            "f",
            "f",
            text,
            UpdateResult(result.text, result.blocks, result.old_view, result.new_view),
        )
        assert update_diff("f", "f", text, result) == rendered
        assert rendered == update_diff("f", "f", text, apply_update_lines(text, chunks, "f"))
    assert shortcut > 20
