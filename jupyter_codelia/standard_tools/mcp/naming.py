"""Model-facing names of MCP tools: ``<server>__<tool>``, safe, unique and stable.

Providers accept ``[A-Za-z0-9_-]{1,64}`` and refuse two tools of one name, while MCP tool names
may hold dots, slashes or spaces and run long. A name that sanitising left as it was keeps its
plain form; a name that sanitising or the 64-character cut changed gets a short suffix derived
from the server's own name when it would collide with another. The suffix depends on nothing
but that original name, so the mapping does not change when the server lists its tools in
another order or adds one, and a permission rule written for a name keeps matching.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from .config import TOOL_SEPARATOR

# Both Anthropic and OpenAI refuse tool names longer than this.
MAX_TOOL_NAME = 64
_TOOL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_SUFFIX_CHARS = 8


def tool_name(server: str, tool: str) -> str:
    """``<server>__<tool>`` with disallowed characters as ``_``, cut to 64 characters."""
    return f"{server}{TOOL_SEPARATOR}{_TOOL_NAME_CHARS.sub('_', tool)}"[:MAX_TOOL_NAME]


def _suffixed(server: str, tool: str, length: int = _SUFFIX_CHARS) -> str:
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:length]
    return f"{tool_name(server, tool)[: MAX_TOOL_NAME - length - 1]}_{digest}"


def unique_tool_names(
    tools: Iterable[tuple[str, str]], taken: Iterable[str] = ()
) -> dict[tuple[str, str], str]:
    """Each ``(server, tool)`` → its unique model-facing name (``taken``: names in use already).

    A tool whose plain name is its exact ``<server>__<tool>`` never moves; an altered one moves
    to its suffixed form only when another tool (or a ``taken`` name) has its plain name.
    """
    pairs = list(dict.fromkeys(tools))
    plain = {pair: tool_name(*pair) for pair in pairs}
    exact = {pair for pair in pairs if plain[pair] == f"{pair[0]}{TOOL_SEPARATOR}{pair[1]}"}
    count: dict[str, int] = {}
    for name in plain.values():
        count[name] = count.get(name, 0) + 1
    reserved = set(taken)
    names: dict[tuple[str, str], str] = {}
    used = set(reserved)
    for pair in pairs:  # the exact names first: they are never the ones that move
        if pair in exact and plain[pair] not in reserved:
            names[pair] = plain[pair]
            used.add(plain[pair])
    for pair in pairs:
        if pair in names:
            continue
        name = plain[pair]
        if count[name] > 1 or name in used:
            length = _SUFFIX_CHARS
            name = _suffixed(*pair, length)
            while name in used:  # a digest clash: longer digests until it is unique
                length += 4
                name = _suffixed(*pair, length)
        names[pair] = name
        used.add(name)
    return names
