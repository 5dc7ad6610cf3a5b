"""Grapheme-cluster helpers for character positions inside cached lines.

Positions in ``tool_output_cache_line`` count user-perceived characters (extended grapheme
clusters, ``\\X`` of the ``regex`` module). Pure-ASCII text inside one line has one cluster per
character (a line never contains ``\\n``, so ``\\r\\n`` cannot occur), which gives a fast path.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator

import regex

_CLUSTER = regex.compile(r"\X", regex.DOTALL)
WINDOW_BYTES = 64 * 1024


def clusters(text: str) -> list[str]:
    """The grapheme clusters of ``text`` (text from one line, without line breaks)."""
    if text.isascii():
        return list(text)
    return _CLUSTER.findall(text)


def count_clusters(text: str) -> int:
    return len(text) if text.isascii() else len(_CLUSTER.findall(text))


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
        data = os.pread(fd, min(window, end - pos), pos)
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
