"""The text formats of the three retrieval operations.

Each function renders from an open entry using only its line index and bounded reads, so the
cost does not grow with the size of the cached output.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from .._text import clip_utf8, clip_utf8_tail, compact_json, line_prefix, utf8_len
from ._entry import OpenEntry
from ._graphemes import clusters, iter_cluster_windows
from ._index import LineSpan, iter_spans, read_text
from ._limits import DEFAULT_CHAR_LIMIT, MAX_CHAR_LIMIT, CacheLimits


def line_call(ref_id: str, line_number: int, char_offset: int = 0, char_limit: int = 10000) -> str:
    """The literal ``tool_output_cache_line({...})`` call the continuation hints show."""
    args = {
        "ref_id": ref_id,
        "line_number": line_number,
        "char_offset": char_offset,
        "char_limit": char_limit,
    }
    return f"tool_output_cache_line({compact_json(args)})"


def render_read(entry: OpenEntry, offset: int, limit: int | None, limits: CacheLimits) -> str:
    index, fd = entry.index, entry.fd
    count = index.line_count
    if offset >= count:
        return "Offset exceeds output length."
    stop = count if limit is None else min(count, offset + limit)
    max_len, max_bytes = limits.max_line_length, limits.max_read_bytes
    # Enough bytes to see max_len + 1 clusters (or to overflow the byte budget anyway).
    cap = max(max_bytes, 4 * (max_len + 1)) + 4
    kept: list[str] = []
    used = 0
    clipped: list[int] = []
    truncated_by_bytes = False
    for span in iter_spans(index, fd, offset):
        if span.line >= stop:
            break
        number = span.line + 1
        length = span.end - span.start
        take = min(length, cap)
        while True:  # read just enough of the line to know whether it has > max_len clusters
            found = clusters(read_text(fd, span.start, span.start + take))
            if len(found) > max_len or take >= length:
                break
            take = min(length, take * 2)
        line = "".join(found)
        if len(found) > max_len:
            line = "".join(found[:max_len]) + "..."
            if number not in clipped:
                clipped.append(number)
        prefix = line_prefix(number)
        size = utf8_len(prefix) + utf8_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            if not kept:
                budget = max_bytes - utf8_len(prefix)
                piece = (
                    clip_utf8(line, budget - 3) + "..." if budget > 3 else clip_utf8(line, budget)
                )
                if piece:
                    kept.append(prefix + piece)
                if number not in clipped:
                    clipped.append(number)
            truncated_by_bytes = True
            break
        kept.append(prefix + line)
        used += size
    out = "\n".join(kept)
    if truncated_by_bytes or count > offset + len(kept):
        reason = (
            f"[output truncated at {max_bytes} bytes]"
            if truncated_by_bytes
            else "Output has more lines."
        )
        out += f"\n\n{reason} Use offset to read beyond line {offset + len(kept)}."
    if clipped:
        listed = "many" if len(clipped) > 3 else ", ".join(str(n) for n in clipped)
        out += f"\n\n[truncated lines: {listed}]"
        out += f"\n\nFor full long-line content, use {line_call(entry.ref_id, clipped[0])}."
    return out


def _line_span(entry: OpenEntry, line: int) -> LineSpan:
    return next(iter_spans(entry.index, entry.fd, line))


def line_length(entry: OpenEntry, span: LineSpan) -> int:
    """Grapheme count of a line, counted from its last checkpoint (bounded work)."""
    offset, col = entry.index.last_checkpoint_in_line(span.line)
    if offset < span.start:
        offset, col = span.start, 0
    windows = iter_cluster_windows(entry.fd, offset, span.end, entry.index.stride)
    return col + sum(len(w) for w in windows)


def render_line(
    entry: OpenEntry, line_number: int, char_offset: int, char_limit: int = DEFAULT_CHAR_LIMIT
) -> str:
    count = entry.index.line_count
    if line_number > count:
        return f"Line number out of range: {line_number} (total {count})"
    char_limit = min(max(char_limit, 1), MAX_CHAR_LIMIT)
    span = _line_span(entry, line_number - 1)
    length = line_length(entry, span)
    if char_offset > length:
        return f"char_offset out of range: {char_offset} (line length {length})"
    start, col = entry.index.checkpoint_before_col(span.line, char_offset)
    if start < span.start:
        start, col = span.start, 0
    skip = char_offset - col
    taken: list[str] = []
    for window in iter_cluster_windows(entry.fd, start, span.end, entry.index.stride):
        if skip >= len(window):
            skip -= len(window)
            continue
        taken.extend(window[skip : skip + char_limit - len(taken)])
        skip = 0
        if len(taken) >= char_limit:
            break
    end = char_offset + len(taken)
    out = "\n".join(
        [
            f"ref_id={entry.ref_id}",
            f"line_number={line_number}",
            f"line_length={length}",
            f"char_range={char_offset}..{max(end - 1, char_offset - 1)}",
            "".join(taken),
        ]
    )
    if end < length:
        out += f"\n\nUse char_offset={end} to continue."
        out += "\n" + line_call(entry.ref_id, line_number, end, char_limit)
    return out


def render_grep(
    entry: OpenEntry,
    pattern: str,
    matches: Iterator[int],
    *,
    before: int,
    after: int,
    max_matches: int,
    limits: CacheLimits,
) -> str:
    count = entry.index.line_count
    header = f"ref:{entry.ref_id}\n"
    results: list[str] = []
    used = 0
    more = False
    last = -1
    for line in matches:
        if len(results) >= max_matches:
            more = True
            break
        last = line
        first = max(0, line - before)
        spans = list(
            islice(iter_spans(entry.index, entry.fd, first), min(count, line + after + 1) - first)
        )
        size = utf8_len(header) + sum(len(line_prefix(s.line + 1)) + s.end - s.start for s in spans)
        size += len(spans) - 1 + (2 if results else 0)
        if used + size > limits.max_grep_bytes:
            if not results:
                return "\n".join(
                    [
                        f"MATCH_TOO_LARGE_TO_RENDER: match at line {line + 1} exceeded "
                        f"{limits.max_grep_bytes} bytes.",
                        f"ref_id={entry.ref_id}",
                        "Reduce grep context (before/after) or read the matched line directly:",
                        line_call(entry.ref_id, line + 1),
                    ]
                )
            more = True
            break
        body = "\n".join(
            line_prefix(s.line + 1) + read_text(entry.fd, s.start, s.end) for s in spans
        )
        results.append(header + body)
        used += size
    if not results:
        return f"No matches for: {pattern}"
    # Reference quirk kept for parity: reaching the limit with any line left counts as "more".
    if len(results) >= max_matches and last + 1 < count:
        more = True
    return "\n\n".join(results) + ("\n... (truncated)" if more else "")


def render_tail(entry: OpenEntry, tail_lines: int, limits: CacheLimits) -> str:
    """The last ``tail_lines`` lines as plain text, at most ``max_read_bytes`` from the end."""
    count = entry.index.line_count
    first = max(0, count - max(tail_lines, 0))
    if tail_lines <= 0:
        return ""
    pieces: list[str] = []
    budget = limits.max_read_bytes
    for span in iter_spans(entry.index, entry.fd, first):
        start = max(span.start, span.end - budget)  # a huge line only needs its end
        pieces.append(read_text(entry.fd, start, span.end))
    return clip_utf8_tail("\n".join(pieces), budget)
