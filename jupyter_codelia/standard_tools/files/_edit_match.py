"""How ``edit`` finds ``old_string`` and explains a miss.

Strategies: ``exact`` (non-overlapping occurrences), ``line_trimmed`` (whole lines equal after
stripping whitespace and ``\\r``), ``block_anchor`` (first and last lines anchor a window, best
similarity wins) and ``auto`` (the first of those with a match). When nothing matches,
:func:`explain_no_match` names the closest lines of the file and what differs (whitespace, line
endings, case), so the model can fix its ``old_string`` instead of guessing.
"""

from __future__ import annotations

import difflib
import heapq
import math
import operator
import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from ..._text import compact_json, line_prefix

MatchMode = Literal["exact", "line_trimmed", "block_anchor", "auto"]

_WORD = re.compile(r"\w+")
_MAX_SHOWN_LINES = 12
_MAX_SHOWN_CHARS = 200
_CANDIDATE_WINDOWS = 12
_LONG_CANDIDATE_WINDOWS = 3
_FUZZY_LINE_LIMIT = 50_000
_CHAR_RATIO_LIMIT = 2_000
_FUZZY_NEEDLE_LINES = 3
_FUZZY_CANDIDATES = 20
_VOTE_BUDGET = 50_000  # votes cast when looking for the closest window
_BLOCK_ANCHOR_BUDGET = 2_000_000  # lines compared when scoring block-anchor windows


@dataclass(frozen=True)
class Match:
    start: int
    end: int


def find_exact(content: str, needle: str) -> list[Match]:
    matches: list[Match] = []
    pos = content.find(needle)
    while pos != -1:
        matches.append(Match(pos, pos + len(needle)))
        pos = content.find(needle, pos + len(needle))
    return matches


def _needle_lines(needle: str) -> list[str]:
    lines = needle.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return [line.strip() for line in lines]


class _Lines:
    """The file's lines with their offsets and trimmed forms, computed once per search."""

    def __init__(self, content: str) -> None:
        self.raw = content.split("\n")
        self.trimmed = [line.strip() for line in self.raw]
        self.starts: list[int] = []
        offset = 0
        for line in self.raw:
            self.starts.append(offset)
            offset += len(line) + 1

    def span(self, first: int, count: int) -> Match:
        last = first + count - 1
        return Match(self.starts[first], self.starts[last] + len(self.raw[last]))


def find_line_trimmed(content: str, needle: str, lines: _Lines | None = None) -> list[Match]:
    wanted = _needle_lines(needle)
    file_lines = lines or _Lines(content)
    trimmed, count = file_lines.trimmed, len(wanted)
    # Candidates come from the needle line that is rarest in the file, found by list.index (C
    # speed): scanning from every line that equals the first one is quadratic on a repetitive
    # file.
    frequency = Counter(trimmed)
    key = min(range(count), key=lambda k: frequency[wanted[k]])
    matches: list[Match] = []
    free = 0  # matches do not overlap: the first line a new one may start at
    position = key
    while True:
        try:
            position = trimmed.index(wanted[key], position)
        except ValueError:
            return matches
        start = position - key
        if (
            start >= free
            and start + count <= len(trimmed)
            and trimmed[start : start + count] == wanted
        ):
            matches.append(file_lines.span(start, count))
            free = start + count
        position += 1


def find_block_anchor(content: str, needle: str, lines: _Lines | None = None) -> list[Match]:
    wanted = _needle_lines(needle)
    count = len(wanted)
    if count < 3:
        return []
    file_lines = lines or _Lines(content)
    trimmed = file_lines.trimmed
    best_score = -1.0
    best: list[int] = []
    # Anchors that occur thousands of times (a repetitive file) anchor nothing: scoring every
    # window would take seconds, so past the budget there is no block-anchor match.
    candidates = _BLOCK_ANCHOR_BUDGET // count
    for index in range(len(trimmed) - count + 1):
        if trimmed[index] != wanted[0] or trimmed[index + count - 1] != wanted[-1]:
            continue
        candidates -= 1
        if candidates < 0:
            return []
        same = sum(map(operator.eq, trimmed[index : index + count], wanted))
        score = same / count
        if score > best_score:
            best_score, best = score, [index]
        elif score == best_score:
            best.append(index)
    return [file_lines.span(index, count) for index in best]


def find_matches(content: str, needle: str, mode: MatchMode) -> tuple[list[Match], str]:
    """The matches of ``needle`` and the strategy that produced them."""
    if mode == "exact":
        return find_exact(content, needle), "exact"
    if mode == "auto":
        found = find_exact(content, needle)
        if found:
            return found, "exact"  # without splitting the file into lines at all
    lines = _Lines(content)
    if mode == "line_trimmed":
        return find_line_trimmed(content, needle, lines), "line_trimmed"
    if mode == "block_anchor":
        return find_block_anchor(content, needle, lines), "block_anchor"
    found = find_line_trimmed(content, needle, lines)
    if found:
        return found, "line_trimmed"
    found = find_block_anchor(content, needle, lines)
    return found, "block_anchor" if found else "auto"


def _closest_window(trimmed: list[str], wanted: list[str]) -> tuple[int, float] | None:
    """Start line and similarity of the file window that looks most like ``wanted``."""
    count = len(wanted)
    if not trimmed:
        return None
    positions: dict[str, list[int]] = {}
    for offset, line in enumerate(wanted):
        if line:
            positions.setdefault(line, []).append(offset)
    votes: dict[int, int] = {}
    last_start = max(0, len(trimmed) - count)
    # Where each needle line occurs in the file; then votes from the rarest lines first (they
    # say most about where the block is), within a fixed budget of votes: a repetitive file
    # with a long old_string would otherwise cost len(file) * len(old_string) steps.
    occurrences: dict[str, list[int]] = {line: [] for line in positions}
    for index, line in enumerate(trimmed):
        found = occurrences.get(line)
        if found is not None:
            found.append(index)
    budget = _VOTE_BUDGET
    for line in sorted(occurrences, key=lambda key: len(occurrences[key])):
        indexes = occurrences[line]
        for offset in positions[line]:
            if budget <= 0:
                break
            step = max(1, len(indexes) // budget)  # evenly spread when over the budget
            for index in indexes[::step]:
                start = min(max(index - offset, 0), last_start)
                votes[start] = votes.get(start, 0) + 1
            budget -= len(indexes) // step
    if not votes and len(trimmed) <= _FUZZY_LINE_LIMIT:
        # No line is equal even after trimming: find lines sharing most words with the first
        # few needle lines (Jaccard similarity of lowercased \w+ tokens: cheap, robust to edits).
        fuzzy = [(offset, line) for offset, line in enumerate(wanted) if line][:_FUZZY_NEEDLE_LINES]
        file_words = [frozenset(_WORD.findall(line.lower())) for line in trimmed]
        for offset, line in fuzzy:
            words = frozenset(_WORD.findall(line.lower()))
            if not words:
                continue
            scored: list[tuple[float, int]] = []
            for index, candidate in enumerate(file_words):
                shared = len(words & candidate)
                if shared:
                    score = shared / len(words | candidate)
                    if score >= 0.5:
                        scored.append((score, -index))
            for _, negative_index in heapq.nlargest(_FUZZY_CANDIDATES, scored):
                start = min(max(-negative_index - offset, 0), last_start)
                votes[start] = votes.get(start, 0) + 1
    if not votes:
        return None
    target = "\n".join(wanted)
    best: tuple[int, float] | None = None
    by_chars = len(target) <= _CHAR_RATIO_LIMIT
    # Line-level matching is quadratic on repeated lines: fewer windows for a long old_string.
    windows = _CANDIDATE_WINDOWS if by_chars else _LONG_CANDIDATE_WINDOWS
    for start in heapq.nlargest(windows, votes, key=lambda s: (votes[s], -s)):
        if by_chars:
            # autojunk off: it would junk every common letter and see no similarity
            window = "\n".join(trimmed[start : start + count])
            ratio = difflib.SequenceMatcher(None, target, window, autojunk=False).ratio()
        else:  # a long old_string: compare whole lines (character matching is quadratic)
            ratio = difflib.SequenceMatcher(
                None, wanted, trimmed[start : start + count], autojunk=False
            ).ratio()
        if best is None or ratio > best[1] or (ratio == best[1] and start < best[0]):
            best = (start, ratio)
    if best is None or best[1] < 0.3:
        return None
    return best


def _shown_line(line: str) -> str:
    line = line.rstrip("\r")
    if len(line) > _MAX_SHOWN_CHARS:
        return line[:_MAX_SHOWN_CHARS] + "..."
    return line


def explain_no_match(content: str, needle: str, mode: MatchMode) -> str:
    """Sentences that follow ``String not found in <p>``, each on its own line."""
    lines = _Lines(content)
    wanted = _needle_lines(needle)
    notes: list[str] = []
    crlf_file = "\r\n" in content
    if mode == "exact":
        trimmed_hits = find_line_trimmed(content, needle, lines)
        if trimmed_hits:
            first = content.count("\n", 0, trimmed_hits[0].start) + 1
            reason = (
                "line endings (the file uses CRLF) and/or leading/trailing whitespace"
                if crlf_file and "\r\n" not in needle
                else "leading/trailing whitespace"
            )
            notes.append(
                f"old_string matches at line {first} when {reason} are ignored: retry with "
                'match_mode "auto" or "line_trimmed".'
            )
    found = _closest_window(lines.trimmed, wanted)
    if found is None:
        notes.append(
            "No lines of the file resemble old_string. Read the file again (it may have "
            "changed) and copy old_string from the current content."
        )
        return "\n".join(notes)
    start, ratio = found
    count = min(len(wanted), len(lines.raw) - start)
    shown = [
        line_prefix(start + k + 1) + _shown_line(lines.raw[start + k])
        for k in range(min(count, _MAX_SHOWN_LINES))
    ]
    if count > _MAX_SHOWN_LINES:
        shown.append(f"... ({count - _MAX_SHOWN_LINES} more lines)")
    end_line = start + count
    notes.append(
        f"Closest candidate: lines {start + 1}-{end_line} ({math.floor(ratio * 100)}% similar):"
    )
    notes.append("\n".join(shown))
    window = lines.trimmed[start : start + count]
    if window == wanted:
        if crlf_file:
            notes.append(
                "These lines equal old_string once line endings (CRLF in the file) and "
                'leading/trailing whitespace are ignored: use match_mode "auto" or "line_trimmed".'
            )
        else:
            notes.append(
                "These lines equal old_string once leading/trailing whitespace is ignored: use "
                'match_mode "auto" or "line_trimmed".'
            )
    elif ["".join(x.split()) for x in window] == ["".join(x.split()) for x in wanted]:
        notes.append(
            "They differ from old_string only in whitespace inside the lines (spaces vs tabs or "
            "spacing): copy the exact text from the file."
        )
    elif [x.casefold() for x in window] == [x.casefold() for x in wanted]:
        notes.append("They differ from old_string only in letter case.")
    else:
        for k, (have, want) in enumerate(zip(window, wanted, strict=False)):
            if have != want:
                notes.append(
                    f"First difference at line {start + k + 1}: the file has "
                    f"{compact_json(_shown_line(have))}, old_string has "
                    f"{compact_json(_shown_line(want))}."
                )
                break
        else:
            if len(window) < len(wanted):
                notes.append("old_string has more lines than remain in the file.")
    if crlf_file and "\r\n" not in needle:
        notes.append("Note: the file uses CRLF (\\r\\n) line endings; old_string uses \\n.")
    elif "\r\n" in needle and not crlf_file:
        notes.append("Note: old_string uses CRLF (\\r\\n) line endings; the file uses \\n.")
    return "\n".join(notes)
