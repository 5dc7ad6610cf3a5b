"""Text conventions shared by every subsystem.

Compact JSON, UTF-8 byte counts, line splitting, the line-number prefix, JavaScript-style
rounding and exception rendering are used by tools, the cache, the agent and the front ends; they
live here once so every output format agrees.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_LINE_SPLIT = re.compile(r"\r?\n")


def compact_json(value: Any) -> str:
    """JSON with no spaces and raw non-ASCII, key order preserved."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def utf8_len(text: str) -> int:
    """Length of ``text`` in UTF-8 bytes."""
    return len(text.encode("utf-8", errors="surrogatepass"))


def split_lines(text: str) -> list[str]:
    """Split on ``\\r?\\n``; a trailing newline yields a final empty line, ``""`` one empty line."""
    return _LINE_SPLIT.split(text)


def line_prefix(number: int) -> str:
    """The ``read``-style line-number prefix: number right-aligned in width 5, two spaces."""
    return f"{number:>5}  "


def js_round(value: float) -> int:
    """Round halves up, as JavaScript's ``Math.round`` does."""
    return math.floor(value + 0.5)


def describe_exc(exc: BaseException) -> str:
    """``"<ClassName>: <message>"``, the rendering tools embed in their error texts."""
    return f"{type(exc).__name__}: {exc}"


def clip_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` that fits in ``max_bytes`` UTF-8 bytes (whole code points)."""
    if max_bytes <= 0:
        return ""
    encoded = text.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= max_bytes:
        return text
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def clip_utf8_tail(text: str, max_bytes: int) -> str:
    """The longest suffix of ``text`` that fits in ``max_bytes`` UTF-8 bytes (whole code points)."""
    if max_bytes <= 0:
        return ""
    encoded = text.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= max_bytes:
        return text
    return encoded[len(encoded) - max_bytes :].decode("utf-8", errors="ignore")


def clip_chars(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"
