"""Grapheme-cluster helpers for character positions inside cached lines.

Positions in ``tool_output_cache_line`` count user-perceived characters (extended grapheme
clusters, ``\\X`` of the ``regex`` module). Pure-ASCII text inside one line has one cluster per
character (a line never contains ``\\n``, so ``\\r\\n`` cannot occur), which gives a fast path.
"""

from __future__ import annotations

import codecs
import functools
import os
from collections.abc import Iterator

import regex

_CLUSTER = regex.compile(r"\X", regex.DOTALL)
WINDOW_BYTES = 64 * 1024


# Characters that can join a neighbour into one cluster (combining marks, ZWJ, emoji modifiers,
# regional indicators, Hangul jamo and syllables, prepended marks). Text without any of them has
# one cluster per code point. \X costs about 1 s per million characters, so long texts check
# this first; the set is built once per process, on first use (about half a second).
_JOINING_CLASS = (
    r"[\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}\p{GCB=Prepend}\p{GCB=Regional_Indicator}"
    r"\p{GCB=L}\p{GCB=V}\p{GCB=T}\p{GCB=LV}\p{GCB=LVT}]"
)
_FAST_CHECK_MIN_CHARS = 4096


@functools.cache
def _joining_chars() -> frozenset[str]:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    return frozenset(regex.findall(_JOINING_CLASS, every))


def _one_per_code_point(text: str) -> bool:
    if text.isascii():
        return True  # inside a line there is no "\r\n" pair
    return len(text) >= _FAST_CHECK_MIN_CHARS and _joining_chars().isdisjoint(text)


def clusters(text: str) -> list[str]:
    """The grapheme clusters of ``text`` (text from one line, without line breaks)."""
    if _one_per_code_point(text):
        return list(text)
    found: list[str] = _CLUSTER.findall(text)
    return found


def count_with_last(text: str) -> tuple[int, int]:
    """Number of clusters in ``text`` and the UTF-8 size of the last one."""
    if _one_per_code_point(text):
        return len(text), len(text[-1].encode("utf-8", errors="surrogatepass")) if text else 0
    found = _CLUSTER.findall(text)
    return len(found), len(found[-1].encode("utf-8", errors="surrogatepass")) if found else 0


def pread(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset`` (``os.pread`` where it exists; each open entry owns
    its descriptor, so seek-and-read is safe elsewhere)."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)  # pragma: no cover - platforms without pread
    return os.read(fd, size)  # pragma: no cover


def utf8_decoder() -> codecs.IncrementalDecoder:
    """An incremental UTF-8 decoder matching how the store encodes (lone surrogates kept)."""
    return codecs.getincrementaldecoder("utf-8")(errors="surrogatepass")


def iter_cluster_windows(
    fd: int, start: int, end: int, window: int = WINDOW_BYTES
) -> Iterator[list[str]]:
    """Clusters of the bytes ``[start, end)`` of ``fd``, one list per window of about ``window``
    bytes. ``start`` must be a cluster boundary; the last cluster of each window is carried into
    the next one, because a cluster can continue past the window's end."""
    decoder = utf8_decoder()
    carry = ""
    pos = start
    while pos < end:
        data = pread(fd, min(window, end - pos), pos)
        if not data:
            break
        pos += len(data)
        final = pos >= end
        found = clusters(carry + decoder.decode(data, final=final))
        carry = found.pop() if not final and found else ""
        if found:
            yield found
    if carry:
        yield [carry]
