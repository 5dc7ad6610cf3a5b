"""The file tools under hostile conditions: non-UTF-8 and CRLF files, hard links, symlink swaps
racing the tools, files changed mid-patch, and SIGKILL at every step of a patch."""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import signal
import threading
from pathlib import Path

import pytest
from _file_tools_helpers import FileTools

from jupyter_codelia.llm.messages import FunctionCall, ToolCall
from jupyter_codelia.standard_tools._sandbox import Sandbox
from jupyter_codelia.standard_tools.patch import plan_patch
from jupyter_codelia.standard_tools.patch._parse import parse_patch
from jupyter_codelia.standard_tools.patch._write import JOURNAL_DIR, recover_journals, write_planned
from jupyter_codelia.tools import ToolContext, execute_tool_call

E = "Error executing tool: "


@pytest.fixture
def tools(tmp_path: Path) -> FileTools:
    root = tmp_path / "work"
    root.mkdir()
    return FileTools(root)


def patch_of(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".codelia-" in p.name)


# --- encodings and line endings -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_non_utf8_file_is_refused_by_every_writer_and_labelled_by_read(
    tools: FileTools,
) -> None:
    latin = tools.root / "latin1.txt"
    original = "caf\xe9 au lait\nsecond\n".encode("latin-1")
    latin.write_bytes(original)
    refusal = (
        "latin1.txt is not valid UTF-8 (first invalid byte at offset 3): refusing to rewrite "
        "it, which would replace its undecodable bytes with U+FFFD."
    )
    patch = patch_of("*** Update File: latin1.txt", "@@", "-second", "+2nd")
    assert refusal in await tools.error("apply_patch", patch=patch)
    edited = await tools.error(
        "edit", file_path="latin1.txt", old_string="second", new_string="2nd"
    )
    assert refusal in edited
    written = await tools.text("write", file_path="latin1.txt", content="new\n")
    assert written.startswith("Error writing file: NotUtf8Error: ") and refusal in written
    assert latin.read_bytes() == original
    shown = await tools.text("read", file_path="latin1.txt")
    assert "    1  caf\ufffd au lait" in shown
    assert (
        "[not UTF-8: the first invalid byte is at offset 3; invalid bytes are shown as U+FFFD"
        in shown
    )
    line = await tools.text("read_line", file_path="latin1.txt", line_number=1)
    assert line.startswith("line_number=1 line_length=12 char_range=0..11\ncaf\ufffd au lait")
    assert "[not UTF-8: the first invalid byte is at offset 3;" in line
    # Deleting it rewrites nothing, so it is allowed.
    await tools.json("apply_patch", patch=patch_of("*** Delete File: latin1.txt"))
    assert not latin.exists()


@pytest.mark.asyncio
async def test_crlf_file_stays_crlf_after_appending_past_an_unterminated_last_line(
    tools: FileTools,
) -> None:
    crlf = tools.root / "win.txt"
    crlf.write_bytes(b"one\r\ntwo\r\nthree")
    await tools.json("apply_patch", patch=patch_of("*** Update File: win.txt", "@@", "+four"))
    # codex gives the appended line the file's CRLF too: it is a whole line.
    assert crlf.read_bytes() == b"one\r\ntwo\r\nthree\r\nfour\r\n"
    patch = patch_of("*** Update File: win.txt", "@@", " one", "-two", "+2", "+2b")
    await tools.json("apply_patch", patch=patch)
    assert crlf.read_bytes() == b"one\r\n2\r\n2b\r\nthree\r\nfour\r\n"
    crlf.write_bytes(b"one\r\n2\r\n2b\r\nthree\r\nfour")
    end = patch_of("*** Update File: win.txt", "@@", " four", "+five", "*** End of File")
    await tools.json("apply_patch", patch=end)
    assert crlf.read_bytes() == b"one\r\n2\r\n2b\r\nthree\r\nfour\r\nfive\r\n"


# --- hard links and the reading rule ------------------------------------------------------------


@pytest.mark.asyncio
async def test_writers_replace_only_this_name_of_a_hard_linked_file(
    tools: FileTools, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("shared\nline\n")
    inside = tools.root / "linked.txt"
    os.link(outside, inside)
    # Landlock's rule: reachable by a path inside the root means inside, so reading works.
    assert "    1  shared" in await tools.text("read", file_path="linked.txt")
    await tools.json("write", file_path="linked.txt", content="written\n")
    assert inside.read_text() == "written\n"
    assert outside.read_text() == "shared\nline\n"
    os.unlink(inside)
    os.link(outside, inside)
    await tools.json("edit", file_path="linked.txt", old_string="line", new_string="edited")
    assert inside.read_text() == "shared\nedited\n" and outside.read_text() == "shared\nline\n"
    os.unlink(inside)
    os.link(outside, inside)
    await tools.json(
        "apply_patch", patch=patch_of("*** Update File: linked.txt", "@@", "-line", "+patched")
    )
    assert inside.read_text() == "shared\npatched\n" and outside.read_text() == "shared\nline\n"
    assert os.stat(outside).st_nlink == 1


@pytest.mark.asyncio
async def test_symlinks_are_followed_only_inside_the_root(tools: FileTools, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (tools.root / "real").mkdir()
    (tools.root / "real" / "f.txt").write_text("inside\n")
    os.symlink(tools.root / "real", tools.root / "alias")  # absolute, inside
    os.symlink("../real/f.txt", tools.root / "real" / "rel.txt")
    assert "inside" in await tools.text("read", file_path="alias/f.txt")
    assert "inside" in await tools.text("read", file_path="real/rel.txt")
    os.symlink(tmp_path / "secret.txt", tools.root / "out.txt")
    error = await tools.error("read", file_path="out.txt")
    assert error.startswith(E + "Security error: SecurityError: Path escapes sandbox: out.txt")


# --- races ---------------------------------------------------------------------------------------

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchanger() -> ctypes._CFuncPtr:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = libc.renameat2
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    return renameat2


def snapshot(root: Path) -> dict[str, tuple[int, bytes | None]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_ino, None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.asyncio
async def test_swapping_a_directory_and_a_symlink_never_lets_a_tool_outside(
    tools: FileTools, tmp_path: Path
) -> None:
    """A thread exchanges ``d`` (a real directory) and ``link`` (a symlink to a directory outside)
    with renameat2(RENAME_EXCHANGE) as fast as it can while each tool runs 1,000 times on
    ``d/...``: nothing outside may be read, created, changed or deleted."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("f.txt", "p.txt"):
        (outside / name).write_text("OUTSIDE\n")
    (outside / "secret.txt").write_text("OUTSIDE SECRET\n")
    inside = tools.root / "d"
    inside.mkdir()
    (inside / "f.txt").write_text("inside\n")
    (inside / "p.txt").write_text("inside\n")
    (inside / "secret.txt").write_text("inside\n")
    os.symlink(outside, tools.root / "link")
    before = snapshot(outside)
    renameat2 = _exchanger()
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        a, b = bytes(inside), bytes(tools.root / "link")
        while not stop.is_set():
            if renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE) == 0:
                swaps += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    calls = {
        "read": {"file_path": "d/secret.txt"},
        "write": {"file_path": "d/w.txt", "content": "written\n"},
        "edit": {"file_path": "d/f.txt", "old_string": "", "new_string": "inside\n"},
        "apply_patch": {"patch": patch_of("*** Update File: d/p.txt", "@@", "-inside", "+inside")},
    }
    try:
        for name, args in calls.items():
            for _ in range(1000):
                # Refusals and lost races are fine (the model sees an error); leaks are not.
                call = ToolCall(
                    id="call_race", function=FunctionCall(name=name, arguments=json.dumps(args))
                )
                done = await execute_tool_call(call, list(tools.tools.values()), ToolContext())
                assert "OUTSIDE" not in str(done.message.content)
    finally:
        stop.set()
        thread.join()
    assert swaps > 0
    assert snapshot(outside) == before
    assert leftovers(tools.root) == []


# --- re-validation and crash safety -------------------------------------------------------------


def test_a_file_changed_after_planning_fails_the_whole_patch(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    sandbox = Sandbox(root)
    sections = parse_patch(
        patch_of(
            "*** Update File: a.txt",
            "@@",
            "-a",
            "+A",
            "*** Update File: b.txt",
            "@@",
            "-b",
            "+B",
            "*** Add File: c.txt",
            "+c",
        )
    )
    planned = plan_patch(sections, sandbox)
    (root / "b.txt").write_text("b\n")  # same content, another file (new inode via rename)
    os.replace(root / "b.txt", root / "b2.txt")
    (root / "b.txt").write_text("changed\n")
    with pytest.raises(OSError) as caught:
        write_planned(planned, sandbox)
    assert str(caught.value) == (
        "Error applying patch: PatchConflictError: b.txt changed while the patch was being "
        "applied; read it again and retry (no file was changed)"
    )
    assert (root / "a.txt").read_text() == "a\n"
    assert (root / "b.txt").read_text() == "changed\n"
    assert not (root / "c.txt").exists()
    assert leftovers(root) == [] and not (root / JOURNAL_DIR).exists()


_FILES = {f"f{k}.txt": f"old {k}\n" for k in range(4)}
_NEW = {
    "f0.txt": "new 0\n",  # updated
    "f1.txt": None,  # deleted
    "f2.txt": None,  # moved to sub/moved.txt
    "f3.txt": "new 3\n",
    "sub/moved.txt": "new 2\n",
    "added.txt": "added\n",
}
_PATCH = patch_of(
    "*** Update File: f0.txt",
    "@@",
    "-old 0",
    "+new 0",
    "*** Delete File: f1.txt",
    "*** Update File: f2.txt",
    "*** Move to: sub/moved.txt",
    "@@",
    "-old 2",
    "+new 2",
    "*** Update File: f3.txt",
    "@@",
    "-old 3",
    "+new 3",
    "*** Add File: added.txt",
    "+added",
)


def _state(root: Path) -> dict[str, str | None]:
    names = set(_FILES) | set(_NEW)
    return {n: (root / n).read_text() if (root / n).exists() else None for n in sorted(names)}


def _run_killed_at(root: Path, kill_at: int) -> int:
    """Fork a child that applies _PATCH and SIGKILLs itself at its ``kill_at``-th file-system
    call; returns how many calls a whole run made (when it was not killed)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: count the calls that change the disk, die at the chosen one
        os.close(read_end)
        count = 0

        def counting(function):  # type: ignore[no-untyped-def]
            def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
                nonlocal count
                count += 1
                if count == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return function(*args, **kwargs)

            return wrapper

        for name in (
            "open",
            "rename",
            "replace",
            "link",
            "unlink",
            "pwrite",
            "mkdir",
            "rmdir",
            "fsync",
        ):
            setattr(os, name, counting(getattr(os, name)))
        try:
            sandbox = Sandbox(root)
            write_planned(plan_patch(parse_patch(_PATCH), sandbox), sandbox)
        finally:
            os.write(write_end, str(count).encode())
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as handle:
        made = handle.read()
    return int(made) if made else -1


def test_sigkill_at_every_step_leaves_files_wholly_old_or_new_and_recovery_completes(
    tmp_path: Path,
) -> None:
    old = {n: _FILES.get(n) for n in sorted(set(_FILES) | set(_NEW))}
    new = {n: _NEW.get(n, _FILES.get(n)) for n in old}
    new.update({n: v for n, v in _NEW.items()})
    total = None
    kill_at = 1
    outcomes = set()
    while total is None or kill_at <= total:
        root = tmp_path / f"run{kill_at}"
        root.mkdir()
        for name, text in _FILES.items():
            (root / name).write_text(text)
        made = _run_killed_at(root, kill_at)
        if made >= 0:  # the run completed before reaching kill_at: every step was covered
            total = made
            assert _state(root) == new
            break
        state = _state(root)
        for name, text in state.items():
            assert text in (old[name], new[name]), (kill_at, name, text)
        recover_journals(Sandbox(root))
        recovered = _state(root)
        assert recovered in (old, new), (kill_at, recovered)
        outcomes.add("new" if recovered == new else "old")
        assert leftovers(root) == [], (kill_at, leftovers(root))
        assert not (root / JOURNAL_DIR).exists()
        kill_at += 1
        assert kill_at < 500, "the patch should take far fewer file-system calls"
    assert outcomes == {"old", "new"}, outcomes


# --- big and repetitive files ------------------------------------------------------------------


@pytest.mark.timeout(15)  # a hang guard with a wide margin (it answers in well under a second)
@pytest.mark.asyncio
async def test_edit_closest_match_search_is_bounded_on_repetitive_files(tools: FileTools) -> None:
    """300 lines of old_string against 100,000 identical lines used to cost tens of seconds of
    voting and quadratic line matching; the search is now bounded and still names a window."""
    line = "    value = compute(item, flag=0)"
    (tools.root / "rep.py").write_text((line + "\n") * 100_000)
    wanted = [line] * 300
    wanted[150] = "    something that is not in the file"
    error = await tools.error(
        "edit", file_path="rep.py", old_string="\n".join(wanted), new_string="x"
    )
    assert error.startswith(E + "String not found in rep.py\nClosest candidate: lines ")
    assert "(99% similar)" in error
    assert "First difference at line" in error


def _write_big(path: Path, row: bytes, size: int) -> tuple[int, str]:
    """Write ``size // len(row)`` rows and an unterminated last line; (rows, sha256)."""
    count = size // len(row)
    with open(path, "wb") as handle:
        block = row * 10_000
        for _ in range(count // 10_000):
            handle.write(block)
        handle.write(row * (count % 10_000))
        handle.write(b"last line without newline")
    return count, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.asyncio
async def test_read_streams_a_big_file_in_bounded_memory(tools: FileTools) -> None:
    """64 MiB of lines: the window near the end, the line count and the whole-file hash are
    right, and Python never holds more than a few read blocks (tracemalloc's peak)."""
    import tracemalloc

    big = tools.root / "big.log"
    row = b"0123456789 " * 9 + b"tail\n"  # 104 bytes
    count, digest = _write_big(big, row, 64 << 20)
    tracemalloc.start()
    try:
        shown = await tools.text("read", file_path="big.log", offset=count - 2, limit=50)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak
    assert shown.splitlines()[:3] == [
        f"{count - 1:>5}  " + row.decode().rstrip("\n"),
        f"{count:>5}  " + row.decode().rstrip("\n"),
        f"{count + 1:>5}  last line without newline",
    ]
    assert shown.endswith(f"[read_metadata] content_sha256={digest}")
    far = await tools.text("read", file_path="big.log", offset=count + 1)
    assert far == "Offset exceeds output length: big.log"


def _write_long_line(path: Path) -> None:
    with open(path, "wb") as handle:
        handle.write(b"short first line\r\n")
        # 3,000,000 clusters of e + combining acute (3 bytes each): the line spans blocks, and
        # a block boundary falls inside clusters.
        handle.write("e\u0301".encode() * 3_000_000 + b"END\r\n")
        handle.write(b"third\n")


@pytest.mark.asyncio
async def test_read_line_windows_a_long_line_without_holding_it(tools: FileTools) -> None:
    import tracemalloc

    _write_long_line(tools.root / "long.txt")
    tracemalloc.start()
    try:
        shown = await tools.text(
            "read_line", file_path="long.txt", line_number=2, char_offset=2_999_998, char_limit=4
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak
    head, rest = shown.split("\n", 1)
    assert head == "line_number=2 line_length=3000003 char_range=2999998..3000001"
    assert rest.startswith("e\u0301e\u0301EN\n\nUse char_offset=3000002 to continue.")
    assert "[read_metadata] content_sha256=" in rest
    third = await tools.text("read_line", file_path="long.txt", line_number=3)
    assert third.startswith("line_number=3 line_length=5 char_range=0..4\nthird\n")
    assert await tools.text("read_line", file_path="long.txt", line_number=5) == (
        "Line number out of range: 5 (total 4)"
    )


@pytest.mark.asyncio
async def test_read_of_a_file_over_the_hash_limit_says_the_hash_was_not_computed(
    tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tools.root / "mid.txt").write_text("a\nb\nc\n")
    monkeypatch.setenv("CODELIA_READ_HASH_MAX_BYTES", "4")
    shown = await tools.text("read", file_path="mid.txt", offset=1, limit=1)
    assert shown == (
        "    2  b\n\nOutput has more lines. Use offset to read beyond line 2.\n\n"
        "[read_metadata] content_sha256 not computed: the file is larger than 4 bytes "
        "(CODELIA_READ_HASH_MAX_BYTES)"
    )


@pytest.mark.asyncio
async def test_hostile_paths_through_the_fd_walk(tools: FileTools, tmp_path: Path) -> None:
    root = tools.root
    (root / "sub").mkdir()
    os.mkfifo(root / "pipe")  # opening it for reading must not block the tool
    assert (await tools.text("read", file_path="pipe")).startswith(
        "Error reading file: OSError: [Errno 22] Not a regular file"
    )
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    assert (await tools.text("read", file_path="loop_a")).startswith(
        "Error reading file: OSError: [Errno 40] Too many levels of symbolic links"
    )
    # A relative symlink climbing out through '..' is refused when used, even deep inside.
    os.symlink("../../", root / "sub" / "up")
    (tmp_path / "outside.txt").write_text("OUTSIDE\n")
    error = await tools.error("read", file_path="sub/up/outside.txt")
    assert error.startswith(E + "Security error: SecurityError: Path escapes sandbox: ")
    written = await tools.error("write", file_path="sub/up/planted.txt", content="x")
    assert written.startswith(E + "Security error: ")
    assert not (tmp_path / "planted.txt").exists()
    # A dangling symlink inside the root is written through, creating its target inside.
    os.symlink("sub/target.txt", root / "dangling")
    await tools.json("write", file_path="dangling", content="made\n")
    assert (root / "sub" / "target.txt").read_text() == "made\n"
    assert (root / "dangling").is_symlink()


@pytest.mark.asyncio
async def test_write_and_edit_recover_a_killed_patch_first(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    for name, text in _FILES.items():
        (root / name).write_text(text)
    # Killed right after its first rename: f0 is new, the rest old, the journal says roll back.
    assert _run_killed_at_first_rename(root) == -1
    tools = FileTools(root)
    await tools.json("write", file_path="other.txt", content="x\n")
    assert _state(root) == {n: _FILES.get(n) for n in _state(root)}
    assert leftovers(root) == [] and not (root / JOURNAL_DIR).exists()


def _run_killed_at_first_rename(root: Path) -> int:
    for kill_at in range(1, 200):
        scratch = root.parent / f"probe{kill_at}"
        scratch.mkdir()
        for name, text in _FILES.items():
            (scratch / name).write_text(text)
        _run_killed_at(scratch, kill_at)
        changed = (scratch / "f0.txt").read_text() == _NEW["f0.txt"]
        shutil.rmtree(scratch)
        if changed:
            return _run_killed_at(root, kill_at)
    raise AssertionError("the patch never renamed f0.txt")


@pytest.mark.asyncio
async def test_a_planted_journal_symlink_is_refused(tools: FileTools, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tools.root / JOURNAL_DIR)
    (tools.root / "a.txt").write_text("a\n")
    error = await tools.error(
        "apply_patch", patch=patch_of("*** Update File: a.txt", "@@", "-a", "+b")
    )
    assert error.startswith(
        E + "Error applying patch: cannot write the patch journal .codelia-journal/: "
    )
    assert error.endswith("(no file was changed)")
    assert (tools.root / "a.txt").read_text() == "a\n"
    assert list(elsewhere.iterdir()) == []
    assert recover_journals(tools.sandbox) == []


@pytest.mark.asyncio
async def test_edit_keeps_a_crlf_file_crlf_also_past_its_last_line(tools: FileTools) -> None:
    crlf = tools.root / "win.txt"
    crlf.write_bytes(b"one\r\ntwo")
    await tools.json("edit", file_path="win.txt", old_string="two", new_string="two\nthree")
    assert crlf.read_bytes() == b"one\r\ntwo\r\nthree"
    await tools.json("edit", file_path="win.txt", old_string="", new_string="a\nb\n")
    assert crlf.read_bytes() == b"a\r\nb\r\n"


def test_a_source_removed_or_a_target_created_after_planning_fails_the_patch(
    tmp_path: Path,
) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    sandbox = Sandbox(root)
    removed = plan_patch(
        parse_patch(patch_of("*** Add File: new.txt", "+n", "*** Delete File: a.txt")), sandbox
    )
    (root / "a.txt").unlink()
    with pytest.raises(OSError) as caught:
        write_planned(removed, sandbox)
    assert str(caught.value) == (
        "Error applying patch: PatchConflictError: a.txt was removed while the patch was being "
        "applied (no file was changed)"
    )
    assert sorted(p.name for p in root.iterdir()) == []
    (root / "a.txt").write_text("a\n")
    raced = plan_patch(
        parse_patch(
            patch_of("*** Update File: a.txt", "@@", "-a", "+A", "*** Add File: n.txt", "+n")
        ),
        sandbox,
    )
    (root / "n.txt").write_text("someone else's\n")  # created after the plan: never overwritten
    with pytest.raises(OSError) as caught:
        write_planned(raced, sandbox)
    assert str(caught.value) == (
        "Error applying patch: FileExistsError: [Errno 17] File exists: 'n.txt' "
        "(no file was changed)"
    )
    assert (root / "a.txt").read_text() == "a\n"
    assert (root / "n.txt").read_text() == "someone else's\n"
    assert leftovers(root) == [] and not (root / JOURNAL_DIR).exists()


@pytest.mark.parametrize(
    ("tail", "bad"),
    [
        (b"ok\n" + b"x" * 10 + b"\xff\n", 3 + 10),  # a bad byte after a split sequence
        (b"ok\n", None),  # the split sequence is valid and nothing else is wrong
        (b"ok\n\xe2\x82", 3),  # a sequence cut short by the end of the file
    ],
)
def test_utf8_check_across_read_blocks(tmp_path: Path, tail: bytes, bad: int | None) -> None:
    """The first invalid byte is found at its file offset when blocks split sequences."""
    from jupyter_codelia.standard_tools.files._filescan import BLOCK, LineWindow, scan_file

    head = b"a" * (BLOCK - 1) + "\u00e9".encode()  # c3 | a9: the block boundary splits it
    data = head + b"b" * BLOCK + tail  # then one whole all-ASCII block
    path = tmp_path / "mixed.txt"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        facts = scan_file(fd, 0, 1, LineWindow(10, 1000), hash_limit=len(data))
    finally:
        os.close(fd)
    expected = None if bad is None else len(head) + BLOCK + bad
    assert facts.bad_offset == expected
    assert facts.sha256 == hashlib.sha256(data).hexdigest()
    assert facts.total == data.count(b"\n") + 1


def test_patched_pieces_survive_short_writes_and_batches_of_writev(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path's result is written as many pieces with ``writev``: a kernel that takes
    only part of a call (here at most 5 bytes, forced) and more pieces than one call may carry
    (here 3) still give the whole text, in order."""
    from jupyter_codelia.standard_tools.patch import _write as _patch_write

    real_writev = os.writev

    def short_writev(fd: int, buffers: list[memoryview]) -> int:
        return real_writev(fd, [memoryview(buffers[0])[:5]])

    monkeypatch.setattr(_patch_write.os, "writev", short_writev)
    monkeypatch.setattr(_patch_write, "_IOV_MAX", 3)
    root = tmp_path / "work"
    root.mkdir()
    lines = [f"line {i} \u00e9" for i in range(60)]
    (root / "f.txt").write_text("".join(line + "\n" for line in lines))
    patch = patch_of(
        "*** Update File: f.txt",
        *(f"@@\n-{lines[i]}\n+changed {i}" for i in range(0, 60, 7)),
    )
    sandbox = Sandbox(root)
    planned = plan_patch(parse_patch(patch), sandbox)
    assert planned[0].content is not None and len(planned[0].content) > 10  # pieces, not one
    write_planned(planned, sandbox)
    expected = [f"changed {i}" if i % 7 == 0 else line for i, line in enumerate(lines)]
    assert (root / "f.txt").read_text() == "".join(line + "\n" for line in expected)
    assert leftovers(root) == []
