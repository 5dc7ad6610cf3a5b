"""Provider-neutral pieces of request building: the system text and a per-message cache.

Every provider turns our history into its own request on every call; on long conversations
the conversion, not the network, is the client-side cost, so each provider keeps its
per-message conversions in a :class:`BlockCache`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# One converted piece of a request (a content block, an API message): a plain JSON dict.
Block = dict[str, Any]


def system_text(messages: Sequence[Any]) -> str | None:
    """All system messages' text joined with a blank line, or None when there is none."""
    texts: list[str] = []
    for message in messages:
        if getattr(message, "role", None) == "system":
            if isinstance(message.content, str):
                texts.append(message.content)
            else:
                texts.append("".join(part.text for part in message.content))
    return "\n\n".join(texts) if texts else None


class BlockCache:
    """Content blocks of each history message, converted once per message object.

    History messages are immutable once appended, so on a long conversation a request costs a
    lookup per message instead of a conversion. Callers get fresh lists: later passes edit them.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Any, list[Block]]] = {}
        self._seen: dict[int, tuple[Any, list[Block]]] = {}

    def blocks(self, message: Any, convert: Any) -> list[Block]:
        key = id(message)
        hit = self._entries.get(key)
        if hit is None or hit[0] is not message:
            hit = (message, convert(message))
        self._seen[key] = hit
        return list(hit[1])

    def sweep(self) -> None:
        """Forget messages not seen since the last sweep (they left the history)."""
        self._entries, self._seen = self._seen, {}


__all__ = ["BlockCache", "system_text"]
