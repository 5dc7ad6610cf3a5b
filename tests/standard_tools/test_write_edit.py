"""The ``write`` and ``edit`` tools and the diffs they return."""

from __future__ import annotations

import hashlib
import os
import random
import re
import stat
from pathlib import Path

import pytest
from _file_tools_helpers import FileBackedStore, FileTools, make_store

from jupyter_codelia.standard_tools.diff import (
    diff_payload,
    preview_diff,
    to_lines,
    unified_diff,
)
from jupyter_codelia.tools import ToolInputError

HASH_MESSAGE = "expected_hash must be a lowercase 64-character SHA-256 hash"


def file_text(path: Path) -> str:
    return path.read_text()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def apply_unified(before: str, diff: str) -> list[str]:
    """Apply our unified diff to ``to_lines(before)`` (a strict checker for the tests)."""
    old = to_lines(before)
    out: list[str] = []
    position = 0
    lines = diff.split("\n")[2:]
    index = 0
    while index < len(lines):
        header = re.match(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@$", lines[index])
        assert header, lines[index]
        start, length = int(header[1]), int(header[2])
        first = start - 1 if length else start
        out.extend(old[position:first])
        position = first
        index += 1
        while index < len(lines) and not lines[index].startswith("@@"):
            marker, text = lines[index][:1], lines[index][1:]
            if marker in (" ", "-"):
                assert old[position] == text, (position, old[position], text)
                position += 1
            if marker in (" ", "+"):
                out.append(text)
            index += 1
    out.extend(old[position:])
    return out


@pytest.fixture
def write_tools(tmp_path: Path) -> FileTools:
    store, _ = make_store(tmp_path / "store")
    return FileTools(tmp_path / "work", store=store)


# --- unified_diff and the payload ------------------------------------------------------------


def test_unified_diff_multi_hunk_with_three_lines_of_context() -> None:
    before = "".join(f"line {i}\n" for i in range(1, 31))
    after = before.replace("line 3\n", "LINE 3\n").replace("line 25\n", "")
    assert unified_diff("f.txt", before, after) == "\n".join(
        [
            "--- f.txt",
            "+++ f.txt",
            "@@ -1,6 +1,6 @@",
            " line 1",
            " line 2",
            "-line 3",
            "+LINE 3",
            " line 4",
            " line 5",
            " line 6",
            "@@ -22,7 +22,6 @@",
            " line 22",
            " line 23",
            " line 24",
            "-line 25",
            " line 26",
            " line 27",
            " line 28",
        ]
    )


def test_unified_diff_merges_close_changes_and_handles_edges() -> None:
    before = "".join(f"n{i}\n" for i in range(20))
    after = before.replace("n5\n", "five\n").replace("n11\n", "eleven\n")
    diff = unified_diff("p", before, after)
    assert diff.count("@@ -") == 1  # 5 equal lines between the changes: one hunk
    assert diff.splitlines()[2] == "@@ -3,13 +3,13 @@"
    assert unified_diff("p", "same\n", "same\n") == ""
    assert unified_diff("p", "a\r\nb\r\n", "a\nb\n") == ""  # line endings are not a change
    # A new (deleted) file's diff ends with its last line, not a bare "+" for the final newline.
    assert unified_diff("p", "", "x\n") == "--- p\n+++ p\n@@ -0,0 +1,1 @@\n+x"
    assert unified_diff("p", "x\n\n", "") == "--- p\n+++ p\n@@ -1,2 +0,0 @@\n-x\n-"
    no_eol = "\n\\ No newline at end of file"
    assert unified_diff("p", "x", "") == f"--- p\n+++ p\n@@ -1,1 +0,0 @@\n-x{no_eol}"
    assert unified_diff("p", "", "a\nb") == f"--- p\n+++ p\n@@ -0,0 +1,2 @@\n+a\n+b{no_eol}"
    assert unified_diff("old", "a\n", "b\n", new_path="new").startswith("--- old\n+++ new\n")


def test_unified_diff_is_a_correct_line_diff_on_random_edits() -> None:
    rng = random.Random(7)
    for _ in range(200):
        old = [rng.choice("abcdefgh") for _ in range(rng.randint(0, 80))]
        new = list(old)
        for _ in range(rng.randint(1, 10)):
            at = rng.randint(0, len(new))
            action = rng.random()
            if action < 0.35 and new:
                del new[min(at, len(new) - 1)]
            elif action < 0.7:
                new.insert(at, rng.choice("xyz"))
            elif new:
                new[min(at, len(new) - 1)] = "changed"
        before, after = "\n".join(old), "\n".join(new)
        diff = unified_diff("f", before, after)
        if to_lines(before) == to_lines(after):
            assert diff == ""
        else:
            assert apply_unified(before, diff) == to_lines(after)


def test_the_windowed_diff_of_big_texts_equals_the_whole_text_diff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Big texts are diffed around the changed region only: the very same diff text."""
    from jupyter_codelia.standard_tools import diff as diff_module

    rng = random.Random(11)
    for _ in range(400):
        old = [rng.choice(["a", "b", "c", "", "a\r", "dd"]) for _ in range(rng.randint(1, 40))]
        new = list(old)
        for _ in range(rng.randint(0, 4)):
            at = rng.randint(0, len(new))
            action = rng.random()
            if action < 0.3 and new:
                del new[min(at, len(new) - 1)]
            elif action < 0.6:
                new.insert(at, rng.choice(["x", "a", "", "b\r"]))
            elif new:
                line = new[min(at, len(new) - 1)]
                new[min(at, len(new) - 1)] = line + rng.choice(["y", "\r", ""])
        before, after = "\n".join(old), "\n".join(new)
        if not before or not after:
            continue
        context = rng.randint(0, 4)
        monkeypatch.setattr(diff_module, "WINDOWED_DIFF_CHARS", 1 << 40)
        whole = unified_diff("f", before, after, context)
        monkeypatch.setattr(diff_module, "WINDOWED_DIFF_CHARS", 0)
        assert unified_diff("f", before, after, context) == whole, (before, after, context)


def test_unified_diff_large_file_many_changes() -> None:
    old = [f"row {i} {i * 7919 % 10007}" for i in range(100_000)]
    new = list(old)
    for k in range(1000):
        new[k * 100 + 50] = f"changed {k}"
    new.insert(500, "inserted")
    del new[70_000]
    before, after = "\n".join(old), "\n".join(new)
    diff = unified_diff("big", before, after)
    assert diff.count("\n@@ -") >= 990
    assert apply_unified(before, diff) == new


def test_preview_bounds_lines_and_bytes() -> None:
    diff = "\n".join(f"+line {i}" for i in range(200))
    preview, truncated = preview_diff(diff)
    assert truncated
    lines = preview.split("\n")
    assert len(lines) == 121
    assert lines[60] == "...[80 lines omitted]..."
    assert lines[0] == "+line 0"
    assert lines[-1] == "+line 199"
    wide = "\n".join("+" + "é" * 1000 for _ in range(50))
    preview, truncated = preview_diff(wide)
    assert truncated
    assert len(preview.encode()) <= 16384
    assert "\n...[truncated by size]...\n" in preview
    assert preview_diff("--- a\n+++ a") == ("--- a\n+++ a", False)


def test_diff_payload_store_and_failure(tmp_path: Path) -> None:
    diff = "\n".join(f"+{i}" for i in range(300))
    assert diff_payload("", tool_name="edit") == {"diff": ""}
    assert diff_payload("", tool_name="write", placeholder="P") == {"diff": "P"}
    small = diff_payload("+a", tool_name="edit")
    assert small == {"diff": "+a"}
    no_store = diff_payload(diff, tool_name="edit")
    assert no_store["diff_truncated"] is True
    assert "diff_cache_id" not in no_store
    store, read_back = make_store(tmp_path / "cache")
    stored = diff_payload(diff, tool_name="edit", store=store)
    assert stored["diff_truncated"] is True
    assert stored["diff_cache_id"].startswith("edit_diff_")
    assert read_back(stored["diff_cache_id"]) == diff
    blocked = tmp_path / "not-a-dir"
    store_dir = tmp_path / "gone"
    broken = FileBackedStore(store_dir)
    store_dir.rmdir()
    blocked.write_text("x")
    store_dir.symlink_to(blocked)  # saving into a "directory" that is a regular file fails
    failed = diff_payload(diff, tool_name="write", store=broken)
    assert failed["diff_truncated"] is True
    assert failed["diff_cache_error"].startswith("Failed to persist full diff: NotADirectoryError")
    assert "diff_cache_id" not in failed


# --- write -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_write_creates_parents_and_returns_summary_and_diff(write_tools: FileTools) -> None:
    value = await write_tools.json("write", file_path="new/dir/f.txt", content="héllo\nworld\n")
    assert value == {
        "summary": "Wrote 13 bytes to new/dir/f.txt",
        "diff": "--- new/dir/f.txt\n+++ new/dir/f.txt\n@@ -0,0 +1,2 @@\n+héllo\n+world",
        "file_path": "new/dir/f.txt",
    }
    assert (write_tools.root / "new/dir/f.txt").read_bytes() == "héllo\nworld\n".encode()
    assert list(value) == ["summary", "diff", "file_path"]


@pytest.mark.asyncio
async def test_write_identical_content_uses_the_placeholder_diff(write_tools: FileTools) -> None:
    (write_tools.root / "f.txt").write_text("same\n")
    value = await write_tools.json("write", file_path="f.txt", content="same\n")
    assert value["diff"] == "--- f.txt\n+++ f.txt\n@@ -0,0 +0,0 @@"


@pytest.mark.asyncio
async def test_write_keeps_newlines_verbatim(write_tools: FileTools) -> None:
    await write_tools.json("write", file_path="crlf.txt", content="a\r\nb\r\n")
    assert (write_tools.root / "crlf.txt").read_bytes() == b"a\r\nb\r\n"


@pytest.mark.asyncio
async def test_write_hash_guard(write_tools: FileTools) -> None:
    target = write_tools.root / "f.txt"
    target.write_text("v1\n")
    text = await write_tools.text(
        "write", file_path="f.txt", content="v2\n", expected_hash="0" * 64
    )
    assert text == (
        "Error writing file: ValueError: Hash mismatch for f.txt. The file changed since it was "
        "read; read it again and retry with the new content_sha256."
    )
    assert target.read_text() == "v1\n"
    text = await write_tools.text(
        "write", file_path="missing.txt", content="x", expected_hash="a" * 64
    )
    assert text == (
        "Error writing file: ValueError: Expected hash provided but file not found: missing.txt"
    )
    assert not (write_tools.root / "missing.txt").exists()
    value = await write_tools.json(
        "write", file_path="f.txt", content="v2\n", expected_hash=sha("v1\n")
    )
    assert value["summary"] == "Wrote 3 bytes to f.txt"
    assert target.read_text() == "v2\n"
    for bad in ("ABC", "A" * 64, "g" * 64, "a" * 63):
        with pytest.raises(ToolInputError, match=HASH_MESSAGE):
            await write_tools.run("write", file_path="f.txt", content="x", expected_hash=bad)
    schema = write_tools.tools["write"].definition.parameters
    assert schema["properties"]["expected_hash"]["pattern"] == "^[a-f0-9]{64}$"
    assert schema["required"] == ["file_path", "content"]


@pytest.mark.asyncio
async def test_write_onto_a_directory_is_reported_as_text(write_tools: FileTools) -> None:
    (write_tools.root / "d").mkdir()
    text = await write_tools.text("write", file_path="d", content="x")
    assert text.startswith("Error writing file: IsADirectoryError: ")
    (write_tools.root / "plain").write_text("x")
    text = await write_tools.text("write", file_path="plain/child.txt", content="x")
    assert text.startswith("Error writing file: ")


@pytest.mark.asyncio
async def test_write_big_diff_is_cached(tmp_path: Path) -> None:
    store, read_back = make_store(tmp_path / "store")
    tools = FileTools(tmp_path / "work", store=store)
    content = "".join(f"line {i}\n" for i in range(500))
    value = await tools.json("write", file_path="big.txt", content=content)
    assert value["diff_truncated"] is True
    assert list(value) == ["summary", "diff", "diff_truncated", "diff_cache_id", "file_path"]
    assert read_back(value["diff_cache_id"]) == unified_diff("big.txt", "", content)
    assert "...[383 lines omitted]..." in value["diff"]


# --- edit ------------------------------------------------------------------------------------


@pytest.fixture
def code_file(write_tools: FileTools) -> Path:
    path = write_tools.root / "code.py"
    path.write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    return path


@pytest.mark.asyncio
async def test_edit_exact_single_match(write_tools: FileTools, code_file: Path) -> None:
    value = await write_tools.json(
        "edit",
        file_path="code.py",
        old_string="def g():\n    return 1",
        new_string="def g():\n    return 2",
    )
    assert value == {
        "summary": "Replaced 1 occurrence(s) in code.py",
        "replacements": 1,
        "match_mode": "exact",
        "diff": (
            "--- code.py\n+++ code.py\n@@ -3,5 +3,5 @@\n \n \n def g():\n-    return 1\n"
            "+    return 2\n "
        ),
        "file_path": "code.py",
    }
    assert file_text(code_file).endswith("def g():\n    return 2\n")


@pytest.mark.asyncio
async def test_edit_multiple_matches_and_replace_all(
    write_tools: FileTools, code_file: Path
) -> None:
    assert (
        await write_tools.error(
            "edit", file_path="code.py", old_string="return 1", new_string="return 3"
        )
        == "Error executing tool: Multiple matches (2) found in code.py"
    )
    assert (
        await write_tools.error(
            "edit",
            file_path="code.py",
            old_string="return 1",
            new_string="return 3",
            replace_all=True,
            expected_replacements=3,
        )
        == "Error executing tool: Expected 3 replacements, found 2"
    )
    assert "return 3" not in file_text(code_file)
    value = await write_tools.json(
        "edit",
        file_path="code.py",
        old_string="return 1",
        new_string="return 3",
        replace_all=True,
        expected_replacements=2,
    )
    assert value["summary"] == "Replaced 2 occurrence(s) in code.py"
    assert value["replacements"] == 2
    assert file_text(code_file).count("return 3") == 2


@pytest.mark.asyncio
async def test_edit_multi_hunk_diff(write_tools: FileTools) -> None:
    path = write_tools.root / "long.txt"
    path.write_text(
        "".join(f"item {i}\n" for i in range(40))
        .replace("item 5\n", "TODO\n")
        .replace("item 30\n", "TODO\n")
    )
    value = await write_tools.json(
        "edit", file_path="long.txt", old_string="TODO", new_string="DONE", replace_all=True
    )
    assert value["diff"].count("\n@@ -") == 2
    assert "@@ -3,7 +3,7 @@" in value["diff"]
    assert "@@ -28,7 +28,7 @@" in value["diff"]


@pytest.mark.asyncio
async def test_edit_no_op_shortcut_runs_before_any_check(write_tools: FileTools) -> None:
    value = await write_tools.json(
        "edit",
        file_path="does/not/exist.txt",
        old_string="x",
        new_string="x",
        expected_hash="b" * 64,
    )
    assert value == {
        "summary": "No changes needed in does/not/exist.txt (old_string equals new_string)",
        "replacements": 0,
        "match_mode": "exact",
        "diff": "",
        "file_path": "does/not/exist.txt",
    }


@pytest.mark.asyncio
async def test_edit_whole_file_mode(write_tools: FileTools) -> None:
    value = await write_tools.json(
        "edit", file_path="fresh/new.txt", old_string="", new_string="hi\n"
    )
    assert value["summary"] == "Replaced 1 occurrence(s) in fresh/new.txt"
    assert value["replacements"] == 1
    assert value["match_mode"] == "exact"
    assert (write_tools.root / "fresh/new.txt").read_text() == "hi\n"
    value = await write_tools.json(
        "edit", file_path="fresh/new.txt", old_string="", new_string="hi\n"
    )
    assert value["summary"] == "No changes needed in fresh/new.txt"
    assert value["replacements"] == 0
    assert value["diff"] == ""
    (write_tools.root / "adir").mkdir()
    text = await write_tools.error("edit", file_path="adir", old_string="", new_string="x")
    assert text.startswith("Error executing tool: Error editing file: IsADirectoryError: ")


@pytest.mark.asyncio
async def test_edit_missing_file_and_directory(write_tools: FileTools) -> None:
    (write_tools.root / "d").mkdir()
    assert await write_tools.error(
        "edit", file_path="nope.txt", old_string="a", new_string="b"
    ) == ("Error executing tool: File not found: nope.txt")
    assert await write_tools.error("edit", file_path="d", old_string="a", new_string="b") == (
        "Error executing tool: File not found: d"
    )


@pytest.mark.asyncio
async def test_edit_hash_guard(write_tools: FileTools, code_file: Path) -> None:
    before = file_text(code_file)
    assert await write_tools.error(
        "edit", file_path="code.py", old_string="def f", new_string="def h", expected_hash="c" * 64
    ) == (
        "Error executing tool: Hash mismatch for code.py. The file changed since it was read; "
        "read it again and retry with the new content_sha256."
    )
    assert (
        await write_tools.error(
            "edit", file_path="gone.py", old_string="", new_string="x", expected_hash="c" * 64
        )
        == "Error executing tool: Expected hash provided but file not found: gone.py"
    )
    assert file_text(code_file) == before
    value = await write_tools.json(
        "edit",
        file_path="code.py",
        old_string="def f",
        new_string="def h",
        expected_hash=sha(before),
    )
    assert value["replacements"] == 1
    with pytest.raises(ToolInputError, match=HASH_MESSAGE):
        await write_tools.run(
            "edit", file_path="code.py", old_string="a", new_string="b", expected_hash="XYZ"
        )


@pytest.mark.asyncio
async def test_edit_dry_run_does_not_write(write_tools: FileTools, code_file: Path) -> None:
    before = file_text(code_file)
    value = await write_tools.json(
        "edit", file_path="code.py", old_string="def f():", new_string="def f(x):", dry_run=True
    )
    assert value["summary"] == "Preview: 1 replacement(s) in code.py"
    assert "-def f():\n+def f(x):" in value["diff"]
    assert list(value) == ["summary", "replacements", "match_mode", "diff", "file_path"]
    assert file_text(code_file) == before


@pytest.mark.asyncio
async def test_edit_line_trimmed_and_block_anchor(write_tools: FileTools) -> None:
    path = write_tools.root / "m.py"
    path.write_text(
        "class A:\n    def run(self):\n        a = 1\n        b = 2\n        return a + b\n"
    )
    value = await write_tools.json(
        "edit",
        file_path="m.py",
        old_string="def run(self):\n  a = 1\n",
        new_string="    def run(self):\n        a = 10",
    )
    assert value["match_mode"] == "line_trimmed"
    assert path.read_text() == (
        "class A:\n    def run(self):\n        a = 10\n        b = 2\n        return a + b\n"
    )
    value = await write_tools.json(
        "edit",
        file_path="m.py",
        old_string="    def run(self):\n        a = 99\n        b = 2\n        return a + b",
        new_string="    def run(self):\n        return 12",
    )
    assert value["match_mode"] == "block_anchor"
    assert path.read_text() == "class A:\n    def run(self):\n        return 12\n"
    text = await write_tools.error(
        "edit", file_path="m.py", old_string="return  12", new_string="x", match_mode="exact"
    )
    assert text.startswith("Error executing tool: String not found in m.py")
    value = await write_tools.json(
        "edit",
        file_path="m.py",
        old_string="return 12  ",
        new_string="        return 13",
        match_mode="line_trimmed",
    )
    assert value["match_mode"] == "line_trimmed"
    text = await write_tools.error(
        "edit", file_path="m.py", old_string="a\nb", new_string="x", match_mode="block_anchor"
    )
    assert text.startswith("Error executing tool: String not found in m.py")


@pytest.mark.asyncio
async def test_edit_block_anchor_ties_are_multiple_matches(write_tools: FileTools) -> None:
    path = write_tools.root / "t.txt"
    path.write_text("start\nx\nend\nstart\ny\nend\n")
    assert (
        await write_tools.error(
            "edit", file_path="t.txt", old_string="start\nz\nend", new_string="S"
        )
        == "Error executing tool: Multiple matches (2) found in t.txt"
    )
    value = await write_tools.json(
        "edit", file_path="t.txt", old_string="start\nz\nend", new_string="S", replace_all=True
    )
    assert value["replacements"] == 2
    assert path.read_text() == "S\nS\n"


@pytest.mark.asyncio
async def test_edit_not_found_explains_closest_lines_and_whitespace(write_tools: FileTools) -> None:
    path = write_tools.root / "w.py"
    path.write_text("def alpha():\n\tvalue = compute(1,  2)\n\treturn value\n")
    text = await write_tools.error(
        "edit",
        file_path="w.py",
        old_string="def alpha():\n    value = compute(1, 2)\n    return value",
        new_string="x",
        match_mode="line_trimmed",
    )
    assert text.startswith("Error executing tool: String not found in w.py\n")
    assert "Closest candidate: lines 1-3" in text
    assert "    2  \tvalue = compute(1,  2)" in text
    assert "differ from old_string only in whitespace inside the lines" in text


@pytest.mark.asyncio
async def test_edit_not_found_names_the_first_difference(write_tools: FileTools) -> None:
    path = write_tools.root / "d.py"
    path.write_text("".join(f"x{i} = {i}\n" for i in range(50)))
    text = await write_tools.error(
        "edit",
        file_path="d.py",
        old_string="x20 = 20\nx21 = 99\nx22 = 22\n",
        new_string="y",
        match_mode="line_trimmed",
    )
    assert "Closest candidate: lines 21-23" in text
    assert (
        'First difference at line 22: the file has "x21 = 21", old_string has "x21 = 99".' in text
    )
    text = await write_tools.error(
        "edit", file_path="d.py", old_string="completely unrelated words", new_string="y"
    )
    assert "No lines of the file resemble old_string" in text
    text = await write_tools.error(
        "edit", file_path="d.py", old_string="X20 = 20\nX21 = 21", new_string="y"
    )
    assert "only in letter case" in text


@pytest.mark.asyncio
async def test_edit_on_a_crlf_file(write_tools: FileTools) -> None:
    path = write_tools.root / "win.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    value = await write_tools.json(
        "edit", file_path="win.txt", old_string="second\nthird", new_string="2nd\n3rd"
    )
    assert value["match_mode"] == "line_trimmed"
    assert path.read_bytes() == b"first\r\n2nd\r\n3rd\r\n"
    assert value["diff"] == (
        "--- win.txt\n+++ win.txt\n@@ -1,4 +1,4 @@\n first\n-second\n-third\n+2nd\n+3rd\n "
    )
    value = await write_tools.json(
        "edit", file_path="win.txt", old_string="2nd", new_string="two\nlines"
    )
    assert value["match_mode"] == "exact"
    assert path.read_bytes() == b"first\r\ntwo\r\nlines\r\n3rd\r\n"
    text = await write_tools.error(
        "edit", file_path="win.txt", old_string="first\ntwo", new_string="x", match_mode="exact"
    )
    assert "old_string matches at line 1 when line endings (the file uses CRLF)" in text
    assert "Note: the file uses CRLF (\\r\\n) line endings; old_string uses \\n." in text
    assert path.read_bytes() == b"first\r\ntwo\r\nlines\r\n3rd\r\n"


@pytest.mark.asyncio
async def test_edit_input_validation(write_tools: FileTools) -> None:
    with pytest.raises(ToolInputError, match="match_mode"):
        await write_tools.run(
            "edit", file_path="f", old_string="a", new_string="b", match_mode="fuzzy"
        )
    with pytest.raises(ToolInputError, match="expected_replacements"):
        await write_tools.run(
            "edit", file_path="f", old_string="a", new_string="b", expected_replacements=-1
        )
    with pytest.raises(ToolInputError, match='missing required field "new_string"'):
        await write_tools.run("edit", file_path="f", old_string="a")


@pytest.mark.asyncio
async def test_write_is_atomic_keeps_mode_and_follows_links(write_tools: FileTools) -> None:
    root = write_tools.root
    root.mkdir(exist_ok=True)
    script = root / "run.sh"
    script.write_text("echo 1\n")
    os.chmod(script, 0o750)
    os.symlink("run.sh", root / "alias.sh")
    await write_tools.json("write", file_path="alias.sh", content="echo 2\n")
    assert (root / "alias.sh").is_symlink()
    assert script.read_text() == "echo 2\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    await write_tools.json("edit", file_path="run.sh", old_string="2", new_string="3")
    assert script.read_text() == "echo 3\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(p.name for p in root.iterdir()) == ["alias.sh", "run.sh"]  # no temp files


def test_unified_diff_on_reordered_files_is_still_a_correct_diff() -> None:
    """Large regions with few common unique lines go through the patience split (bounded)."""
    old = [f"line {i}" for i in range(20_000)]
    shuffled = list(old)
    random.Random(3).shuffle(shuffled)
    for new in (old[::-1], shuffled, old[10_000:] + old[:10_000], ["same"] * 3000 + old[:5]):
        before, after = "\n".join(old), "\n".join(new)
        assert apply_unified(before, unified_diff("f", before, after)) == new


@pytest.mark.asyncio
async def test_edit_not_found_finds_near_misses_without_equal_lines(write_tools: FileTools) -> None:
    path = write_tools.root / "calc.py"
    body = "".join(f"total_{i} = add(first_{i}, second_{i})\n" for i in range(3000))
    path.write_text(body.replace("total_1500 = add(first_1500, second_1500)", "total_1500 = 0"))
    text = await write_tools.error(
        "edit",
        file_path="calc.py",
        old_string="total_1501 = add(first_1501, second)\ntotal_1502 = add(first_1502, second)",
        new_string="x",
    )
    assert "Closest candidate: lines 1502-1503" in text
    assert " 1502  total_1501 = add(first_1501, second_1501)" in text
    assert 'First difference at line 1502: the file has "total_1501 = add(first_1501, ' in text


def test_the_cached_full_diff_of_an_env_file_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tok-FAKE-diff-0123456789abcdef"
    monkeypatch.setenv("SERVICE_TOKEN", token)
    before = "".join(f"OPTION_{i}=off\n" for i in range(300))
    after = before.replace("=off", f"={token}")
    diff = unified_diff(".env", before, after)
    store, read_back = make_store(tmp_path / "cache")
    payload = diff_payload(diff, tool_name="edit", store=store)
    assert payload["diff_truncated"] is True
    cached = read_back(payload["diff_cache_id"])
    assert token not in cached
    assert cached == diff.replace(token, "[REDACTED]")


@pytest.mark.asyncio
async def test_edit_refuses_a_file_too_big_to_hold_and_points_at_the_shell(
    write_tools: FileTools,
) -> None:
    """A 300 MB file took 17.9 s and 1.3 GB to report no match; now the size is checked first."""
    from jupyter_codelia.standard_tools.files import EDIT_MAX_BYTES

    huge = write_tools.root / "huge.log"
    with huge.open("wb") as handle:
        handle.truncate(EDIT_MAX_BYTES + 1)  # sparse: nothing is written or read
    text = await write_tools.error("edit", file_path="huge.log", old_string="a", new_string="b")
    assert text == (
        f"Error executing tool: huge.log is {EDIT_MAX_BYTES + 1:,} bytes: edit changes files up "
        f"to {EDIT_MAX_BYTES:,} bytes (it holds the file and its diff in memory). Change it with "
        "the shell instead (for example sed -i 's/old/new/' FILE, or a Python script that "
        "streams it line by line); find the lines first with grep."
    )
    assert huge.stat().st_size == EDIT_MAX_BYTES + 1


@pytest.mark.asyncio
async def test_edit_of_a_big_file_searches_exactly_and_says_so(
    write_tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_codelia.standard_tools import files

    monkeypatch.setattr(files, "EDIT_LENIENT_MAX_BYTES", 100)
    path = write_tools.root / "big.py"
    path.write_text("".join(f"    value_{i} = {i}\n" for i in range(20)))
    text = await write_tools.error(
        "edit", file_path="big.py", old_string="value_3 = 3\nvalue_4 = 4", new_string="x"
    )
    assert text.startswith(
        "Error executing tool: String not found in big.py (searched exactly: the file has 340 "
        "characters, and whitespace-tolerant matching and the closest-lines hint run up to 100)."
    )
    value = await write_tools.json(
        "edit", file_path="big.py", old_string="value_3 = 3", new_string="three = 3"
    )
    assert value["match_mode"] == "exact" and "+    three = 3" in value["diff"]
