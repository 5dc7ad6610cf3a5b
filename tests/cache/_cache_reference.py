"""A direct, in-memory transcription of the three retrieval formats, used as a test oracle.

It works on the whole text with ``split_lines`` exactly as the formats are described, so comparing
it with the indexed, streaming store checks the store's formats and its index at once.
"""

from __future__ import annotations

import re

import regex

from jupyter_codelia._text import clip_utf8, compact_json, line_prefix, split_lines, utf8_len

_CLUSTER = regex.compile(r"\X", regex.DOTALL)


def graphemes(text: str) -> list[str]:
    return _CLUSTER.findall(text)


def _line_call(ref_id: str, n: int, off: int = 0, limit: int = 10000) -> str:
    args = {"ref_id": ref_id, "line_number": n, "char_offset": off, "char_limit": limit}
    return f"tool_output_cache_line({compact_json(args)})"


def ref_read(
    text: str,
    ref_id: str,
    offset: int = 0,
    limit: int | None = None,
    *,
    max_line_length: int = 1000,
    max_read_bytes: int = 65536,
) -> str:
    lines = split_lines(text)
    if offset >= len(lines):
        return "Offset exceeds output length."
    end = len(lines) if limit is None else min(len(lines), offset + limit)
    kept: list[str] = []
    used = 0
    clipped: list[int] = []
    by_bytes = False
    for i in range(offset, end):
        n = i + 1
        line = lines[i]
        found = graphemes(line)
        if len(found) > max_line_length:
            line = "".join(found[:max_line_length]) + "..."
            clipped.append(n)
        prefix = line_prefix(n)
        size = utf8_len(prefix + line) + (1 if kept else 0)
        if used + size > max_read_bytes:
            if not kept:
                budget = max_read_bytes - utf8_len(prefix)
                if budget > 3:
                    piece = clip_utf8(line, budget - 3) + "..."
                else:
                    piece = clip_utf8(line, budget)
                if piece:
                    kept.append(prefix + piece)
                if n not in clipped:
                    clipped.append(n)
            by_bytes = True
            break
        kept.append(prefix + line)
        used += size
    out = "\n".join(kept)
    if by_bytes or len(lines) > offset + len(kept):
        reason = "Output has more lines."
        if by_bytes:
            reason = f"[output truncated at {max_read_bytes} bytes]"
        out += f"\n\n{reason} Use offset to read beyond line {offset + len(kept)}."
    if clipped:
        listed = "many" if len(clipped) > 3 else ", ".join(map(str, clipped))
        out += f"\n\n[truncated lines: {listed}]"
        out += f"\n\nFor full long-line content, use {_line_call(ref_id, clipped[0])}."
    return out


def ref_read_line(
    text: str, ref_id: str, line_number: int, char_offset: int = 0, char_limit: int = 10000
) -> str:
    lines = split_lines(text)
    if line_number > len(lines):
        return f"Line number out of range: {line_number} (total {len(lines)})"
    char_limit = min(max(char_limit, 1), 100000)
    found = graphemes(lines[line_number - 1])
    if char_offset > len(found):
        return f"char_offset out of range: {char_offset} (line length {len(found)})"
    segment = found[char_offset : char_offset + char_limit]
    end = char_offset + len(segment)
    out = "\n".join(
        [
            f"ref_id={ref_id}",
            f"line_number={line_number}",
            f"line_length={len(found)}",
            f"char_range={char_offset}..{max(end - 1, char_offset - 1)}",
            "".join(segment),
        ]
    )
    if end < len(found):
        out += f"\n\nUse char_offset={end} to continue."
        out += "\n" + _line_call(ref_id, line_number, end, char_limit)
    return out


def ref_grep(
    text: str,
    ref_id: str,
    pattern: str,
    *,
    regex: bool = False,
    before: int = 0,
    after: int = 0,
    max_matches: int = 50,
    max_grep_bytes: int = 65536,
) -> str:
    lines = split_lines(text)
    compiled = re.compile(pattern if regex else re.escape(pattern))
    results: list[str] = []
    used = 0
    more = False
    for i in range(len(lines)):
        if len(results) >= max_matches:
            more = True
            break
        if not compiled.search(lines[i]):
            continue
        lo, hi = max(0, i - before), min(len(lines), i + after + 1)
        rendered = f"ref:{ref_id}\n" + "\n".join(
            line_prefix(k + 1) + lines[k] for k in range(lo, hi)
        )
        size = utf8_len(rendered) + (2 if results else 0)
        if used + size > max_grep_bytes:
            if not results:
                return "\n".join(
                    [
                        f"MATCH_TOO_LARGE_TO_RENDER: match at line {i + 1} exceeded "
                        f"{max_grep_bytes} bytes.",
                        f"ref_id={ref_id}",
                        "Reduce grep context (before/after) or read the matched line directly:",
                        _line_call(ref_id, i + 1),
                    ]
                )
            more = True
            break
        results.append(rendered)
        used += size
    if not results:
        return f"No matches for: {pattern}"
    return "\n\n".join(results) + ("\n... (truncated)" if more else "")
