"""Shell-command text analysis for the permission policy.

This is not a shell parser: it finds the commands a shell line would run well enough to match them
against allow/deny rules, and errs towards "ask the user" whenever the text is not plain.
Segmentation splits on control and redirect operators outside quotes and after no backslash; the
words after a redirect operator are its target, not a command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

# Longest first, so "2>>" wins over "2>" and ">", "||" over "|". Beyond the usual operators, a lone
# "&", a newline and sub-shell / command-substitution brackets also start a new command: without
# them "ls & rm -rf x" or "ls $(rm -rf x)" would pass as a plain "ls".
_OPERATORS = (
    "2>>",
    "&>>",
    "2>&",
    "|&",
    "||",
    "&&",
    ">>",
    "2>",
    "&>",
    ">&",
    "$(",
    "|",
    ">",
    "<",
    ";",
    "&",
    "\n",
    "(",
    ")",
    "`",
)
_INPUT_REDIRECTS = frozenset({"<"})
_OUTPUT_REDIRECTS = frozenset({">", ">>", "2>", "2>>", "&>", "&>>", ">&", "2>&"})
# Text after ")" continues the enclosing command's arguments ("ls $(pwd)/src"): not a command.
_NOT_FOLLOWED_BY_COMMAND = _INPUT_REDIRECTS | _OUTPUT_REDIRECTS | {")"}

_WHITESPACE = re.compile(r"\s+")
_UNSAFE_PATH = re.compile(r"[\"'`$&|;<>(){}\[\]*?!~\\]")
_HARMLESS_OUTPUT_TARGET = re.compile(r"^(/dev/null|&?-|&?[0-9]+)$")


def normalize_command(text: str) -> str:
    """Trim and collapse every whitespace run to one space."""
    return _WHITESPACE.sub(" ", text).strip()


@dataclass
class ShellSplit:
    """The pieces of one shell line in order: commands and files that output is redirected to."""

    items: list[tuple[Literal["command", "output"], str]] = field(default_factory=list)
    # "$(...)" or a backtick inside double quotes runs a command we do not see as a segment.
    hidden_substitution: bool = False

    @property
    def commands(self) -> list[str]:
        return [text for kind, text in self.items if kind == "command"]


def _operator_at(text: str, index: int) -> str | None:
    for op in _OPERATORS:
        if text.startswith(op, index):
            return op
    return None


def analyse_shell(command: str) -> ShellSplit:
    """Split ``command`` into normalized command segments and output-redirect targets."""
    result = ShellSplit()
    pieces: list[tuple[str, str | None]] = []  # (text, operator before it)
    buffer: list[str] = []
    previous_op: str | None = None
    in_single = in_double = False
    index = 0
    while index < len(command):
        char = command[index]
        if char == "\\" and not in_single:
            buffer.append(command[index : index + 2])
            index += 2
            continue
        if char == "'" and not in_double:
            in_single = not in_single
        elif char == '"' and not in_single:
            in_double = not in_double
        elif in_double and (char == "`" or command.startswith("$(", index)):
            result.hidden_substitution = True
        elif not in_single and not in_double:
            op = _operator_at(command, index)
            if op is not None:
                pieces.append(("".join(buffer), previous_op))
                buffer, previous_op = [], op
                index += len(op)
                continue
        buffer.append(char)
        index += 1
    pieces.append(("".join(buffer), previous_op))

    for text, op in pieces:
        normalized = normalize_command(text)
        if not normalized:
            continue
        if op in _OUTPUT_REDIRECTS:
            # Only the first word is the target; later words are arguments of the command.
            result.items.append(("output", normalized.split(" ", 1)[0]))
        elif op not in _NOT_FOLLOWED_BY_COMMAND:
            result.items.append(("command", normalized))
    return result


def split_shell_segments(command: str) -> list[str]:
    """The commands of a shell line, normalized, without redirect targets."""
    return analyse_shell(command).commands


def is_harmless_output_target(target: str) -> bool:
    """``/dev/null`` and file-descriptor duplications (``2>&1``) write no file."""
    return bool(_HARMLESS_OUTPUT_TARGET.match(target))


def shell_words(segment: str) -> list[str] | None:
    """Split a segment into words, removing quotes and escapes; None if quotes are unbalanced."""
    words: list[str] = []
    buffer: list[str] = []
    has_word = in_single = in_double = escaping = False
    for char in segment:
        if escaping:
            buffer.append(char)
            escaping = False
        elif char == "\\" and not in_single:
            escaping = has_word = True
        elif char == "'" and not in_double:
            in_single, has_word = not in_single, True
        elif char == '"' and not in_single:
            in_double, has_word = not in_double, True
        elif char.isspace() and not in_single and not in_double:
            if has_word:
                words.append("".join(buffer))
                buffer, has_word = [], False
        else:
            buffer.append(char)
            has_word = True
    if escaping or in_single or in_double:
        return None
    if has_word:
        words.append("".join(buffer))
    return words


def glob_matches(pattern: str, text: str) -> bool:
    """Whole-text match: ``*`` is any run, ``?`` any one character, nothing else is special."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, flags=re.DOTALL) is not None


def words_start_with(segment: str, prefix: str) -> bool:
    """True when the segment's first words are exactly the words of ``prefix``."""
    wanted = normalize_command(prefix).split(" ")
    if wanted == [""]:
        return False
    return segment.split(" ")[: len(wanted)] == wanted


def is_cd_segment(segment: str) -> bool:
    return segment == "cd" or segment.startswith("cd ")


def resolve_inside(target: str, cwd: PurePosixPath, root: PurePosixPath) -> PurePosixPath | None:
    """``target`` resolved against ``cwd`` if it is a plain path staying under ``root``, else None.

    Plain means no quoting, globbing, ``~``, variables or other shell syntax; ``..`` is resolved
    lexically, which is what ``cd`` does with a logical working directory.
    """
    if not target or target == "-" or _UNSAFE_PATH.search(target):
        return None
    parts: list[str] = []
    for part in (cwd / target).parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    resolved = PurePosixPath("/", *parts)
    if resolved == root or root in resolved.parents:
        return resolved
    return None


def resolve_cd(segment: str, cwd: PurePosixPath, root: PurePosixPath) -> PurePosixPath | None:
    """The new working directory of ``cd <one safe target>`` if it stays under ``root``."""
    words = segment.split(" ")
    if len(words) != 2 or words[0] != "cd":
        return None
    return resolve_inside(words[1], cwd, root)
