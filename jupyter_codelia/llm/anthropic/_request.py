"""Messages, tools and tool choice → an Anthropic Messages API request.

Pure functions over plain dicts: no SDK import, so the serialization is cheap to test and the
request a test server records can be compared with what these functions built.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..._text import compact_json
from .._request_parts import BlockCache, system_text
from ..messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    OtherPart,
    ReasoningMessage,
    ToolMessage,
)

Block = dict[str, Any]
ApiMessage = dict[str, Any]

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
_IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
_REPLAYED_REASONING_TYPES = frozenset({"thinking", "redacted_thinking"})


# --- content parts → blocks ------------------------------------------------------------------


def _text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def _image_block(part: ImagePart) -> Block:
    url = part.image_url.url
    if not url.startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    if ";base64," not in url:
        return _text_block(url)
    header, data = url.split(";base64,", 1)
    url_media_type = header[len("data:") :]
    media_type = part.image_url.media_type
    if media_type is None and url_media_type in _IMAGE_MEDIA_TYPES:
        media_type = url_media_type  # type: ignore[assignment]
    if media_type is None:
        return _text_block(url)
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _document_block(part: DocumentPart) -> Block:
    source = part.source
    if source.url is not None:
        return {"type": "document", "source": {"type": "url", "url": source.url}}
    return {
        "type": "document",
        "source": {"type": "base64", "media_type": source.media_type, "data": source.data},
    }


def _other_block(part: OtherPart) -> Block:
    payload = part.payload
    # A block the API sent (server-tool calls and results, blocks newer than this code) goes
    # back exactly as received: it may carry encrypted content the API needs to continue.
    if (
        part.provider == "anthropic"
        and isinstance(payload, dict)
        and payload.get("type") == part.kind
    ):
        return payload
    label = f"[other:{part.provider}/{part.kind}]"
    if payload not in (None, "", {}, []):
        label += " " + compact_json(payload)
    return _text_block(label)


def part_to_block(part: Any) -> Block:
    """One content part → one Anthropic content block."""
    kind = getattr(part, "type", None)  # not isinstance: see to_anthropic_messages
    if kind == "text":
        block = _text_block(part.text)
        if part.citations:
            block["citations"] = part.citations
        return block
    if kind == "image_url":
        return _image_block(part)
    if kind == "document":
        return _document_block(part)
    if kind == "other":
        return _other_block(part)
    raise TypeError(f"not a content part: {type(part).__name__}")


def _content_blocks(content: str | Sequence[Any] | None) -> list[Block]:
    if content is None:
        return []
    if isinstance(content, str):
        return [_text_block(content)]
    return [part_to_block(part) for part in content]


def _never_empty(blocks: list[Block]) -> list[Block]:
    return blocks if blocks else [_text_block("")]


# --- messages --------------------------------------------------------------------------------


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's raw JSON arguments → the ``input`` object Anthropic expects."""
    if arguments.strip() == "":
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"value": arguments}
    return value if isinstance(value, dict) else {"value": value}


def _tool_result_block(message: ToolMessage) -> Block:
    content: str | list[Block]
    if isinstance(message.content, str):
        content = message.content
    else:
        content = _never_empty(_content_blocks(message.content))
    block: Block = {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": content}
    if message.is_error:
        block["is_error"] = True
    return block


def _assistant_blocks(message: AssistantMessage) -> list[Block]:
    blocks = [
        b
        for b in _content_blocks(message.content)
        if not (b.get("type") == "text" and b.get("text") == "")
    ]
    for call in message.tool_calls or []:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                # A cut-off call's arguments are unfinished JSON: what was sent is not replayable.
                "input": {} if call.cut_off else tool_input(call.function.arguments),
            }
        )
    return blocks


def _replayable_reasoning(message: ReasoningMessage) -> Block | None:
    raw = message.raw_item
    if isinstance(raw, dict) and raw.get("type") in _REPLAYED_REASONING_TYPES:
        return dict(raw)
    return None


def system_cache_allowed(messages: Sequence[Any]) -> bool:
    """False when a system message opted out of prompt caching (``cache=False``)."""
    return not any(getattr(m, "role", None) == "system" and m.cache is False for m in messages)


def _user_blocks(message: Any) -> list[Block]:
    return _never_empty(_content_blocks(message.content))


def _tool_result_blocks(message: ToolMessage) -> list[Block]:
    return [_tool_result_block(message)]


def _uncached(message: Any, convert: Callable[[Any], list[Block]]) -> list[Block]:
    return convert(message)


class MessagesCache:
    """The previous request's ``messages`` array, reused for the next history's unchanged start.

    A conversation grows by appending, so the next history usually starts with the same message
    objects as the last one. Its API form up to a *seam* is reused and only the rest is
    converted. A seam is a point in the history where the conversion starts afresh: tool results
    are flushed, no thinking is pending, and the last turn so far is a user turn, which neither
    the assistant-turn merge nor the orphan drop changes because of what follows it. History
    messages are never edited in place (they are replaced), so identity says "unchanged".
    """

    def __init__(self) -> None:
        self.blocks = BlockCache()
        self._inputs: list[Any] = []
        self._options = (False, False)  # replay_thinking, collapse
        # Final turns as (role, content) before breakpoints, which edit a request.
        self._turns: list[tuple[str, str | list[Block]]] = []
        # (messages before the seam, turns before the seam), in history order.
        self._seams: list[tuple[int, int]] = []

    def reusable(self, messages: Sequence[Any], options: tuple[bool, bool]) -> tuple[int, int]:
        """The last seam within the unchanged start of ``messages``: (messages, turns)."""
        if options != self._options:
            return 0, 0
        same = 0
        for new, old in zip(messages, self._inputs, strict=False):
            if new is not old:
                break
            same += 1
        for seam in reversed(self._seams):
            if seam[0] <= same:
                return seam
        return 0, 0

    def prefix(self, turns: int) -> list[ApiMessage]:
        """Fresh copies of the first ``turns`` turns (their blocks are shared, never edited)."""
        return [
            {"role": role, "content": content if type(content) is str else list(content)}
            for role, content in self._turns[:turns]
        ]

    def remember(
        self,
        messages: Sequence[Any],
        options: tuple[bool, bool],
        seam: tuple[int, int],
        rest: list[ApiMessage],
        rest_seams: list[tuple[int, int]],
    ) -> None:
        start, turns = seam
        self._inputs = list(messages)
        self._options = options
        del self._turns[turns:]
        self._turns.extend(
            (turn["role"], content if type(content := turn["content"]) is str else list(content))
            for turn in rest
        )
        self._seams = [s for s in self._seams if s[0] <= start]
        self._seams.extend((start + index, turns + position) for index, position in rest_seams)


def to_anthropic_messages(
    messages: Sequence[Any],
    *,
    replay_thinking: bool = False,
    collapse: bool = False,
    cache: MessagesCache | None = None,
) -> list[ApiMessage]:
    """History → the ``messages`` array (system messages excluded; see :func:`system_text`).

    ``replay_thinking``: put thinking blocks kept in ``ReasoningMessage.raw_item`` back at the
    start of the assistant turn they preceded, as extended thinking with tool use requires.
    ``collapse``: send a turn that is one plain text block as a string (see
    :func:`collapse_plain_text`).
    ``cache``: reuse the conversion of the history's start that the last request also had.
    """
    if cache is None:
        result = _convert(messages, replay_thinking, _uncached, None)
        return collapse_plain_text(result) if collapse else result
    options = (replay_thinking, collapse)
    seam = cache.reusable(messages, options)
    rest_seams: list[tuple[int, int]] = []
    rest = _convert(messages[seam[0] :], replay_thinking, cache.blocks.blocks, rest_seams)
    cache.blocks.sweep()
    if collapse:
        collapse_plain_text(rest)
    result = cache.prefix(seam[1])
    cache.remember(messages, options, seam, rest, rest_seams)
    result.extend(rest)
    return result


def _convert(
    messages: Sequence[Any],
    replay_thinking: bool,
    blocks_of: Callable[[Any, Callable[[Any], list[Block]]], list[Block]],
    seams: list[tuple[int, int]] | None,
) -> list[ApiMessage]:
    """The conversion proper; appends to ``seams`` (message index, turn index) when given."""
    result: list[ApiMessage] = []
    tool_results: list[Block] = []
    pending_reasoning: list[Block] = []
    # ids of the turns that hold tool_use / tool_result blocks: the pairing passes look only
    # at those (and their neighbours), not at every block of a long history.
    tooly: set[int] = set()
    # (message index, the user turn just before it): seams, once the passes keep that turn.
    seam_turns: list[tuple[int, ApiMessage]] = []

    def flush_tool_results() -> None:
        if tool_results:
            turn = {"role": "user", "content": list(tool_results)}
            tooly.add(id(turn))
            result.append(turn)
            tool_results.clear()

    def at_seam() -> bool:
        # Nothing carries over into the next message and the last turn is a user turn.
        return (
            not tool_results
            and not pending_reasoning
            and bool(result)
            and result[-1]["role"] == "user"
        )

    for index, message in enumerate(messages):
        # Dispatch on ``role``: isinstance on pydantic models goes through ABCMeta, which
        # costs more than the rest of the loop on long histories.
        role = getattr(message, "role", None)
        if role not in _MESSAGE_ROLES:
            raise TypeError(f"not a message: {type(message).__name__}")
        if role == "tool":
            tool_results.extend(blocks_of(message, _tool_result_blocks))
            continue
        if role == "reasoning":
            block = _replayable_reasoning(message) if replay_thinking else None
            if block is not None:
                flush_tool_results()
                pending_reasoning.append(block)
            continue
        flush_tool_results()
        if seams is not None and role in ("user", "assistant") and at_seam():
            seam_turns.append((index, result[-1]))
        if role == "user":
            pending_reasoning.clear()  # thinking never precedes a user turn
            result.append({"role": "user", "content": blocks_of(message, _user_blocks)})
        elif role == "assistant":
            blocks = [*pending_reasoning, *blocks_of(message, _assistant_blocks)]
            pending_reasoning = []
            if blocks:
                turn = {"role": "assistant", "content": blocks}
                if message.tool_calls:
                    tooly.add(id(turn))
                result.append(turn)
    if seams is not None and at_seam():
        seam_turns.append((len(messages), result[-1]))
    flush_tool_results()
    final = _drop_orphans(_merge_assistant_turns(result, tooly), tooly)
    if seams is not None and seam_turns:
        # A tool-result turn the orphan drop emptied is gone: no seam there.
        position = {id(turn): at for at, turn in enumerate(final)}
        seams.extend(
            (index, position[id(turn)] + 1) for index, turn in seam_turns if id(turn) in position
        )
    return final


_MESSAGE_ROLES = frozenset({"system", "user", "assistant", "tool", "reasoning"})


def _has_tool_use(message: ApiMessage) -> bool:
    return any(block.get("type") == "tool_use" for block in message["content"])


def _merge_assistant_turns(messages: list[ApiMessage], tooly: set[int]) -> list[ApiMessage]:
    """Join consecutive assistant messages into one turn (one reply's blocks — or a paused
    reply and its continuation — go back together, in their order)."""
    merged: list[ApiMessage] = []
    for message in messages:
        previous = merged[-1] if merged else None
        if previous is not None and previous["role"] == "assistant" == message["role"]:
            previous["content"] = previous["content"] + message["content"]
            if id(message) in tooly:
                tooly.add(id(previous))
        else:
            merged.append(message)  # built fresh by to_anthropic_messages: no copy needed
    return merged


def _is_empty(message: ApiMessage) -> bool:
    # A turn of nothing but thinking blocks has nothing left to say once its calls are gone.
    return all(b.get("type") in _REPLAYED_REASONING_TYPES for b in message["content"])


def _drop_orphans(messages: list[ApiMessage], tooly: set[int]) -> list[ApiMessage]:
    """Keep only tool_use / tool_result pairs that meet in adjacent messages.

    ``tooly``: ids of the messages that may hold tool_use / tool_result blocks.
    """
    dropped: set[int] = set()
    marked = [i for i, m in enumerate(messages) if id(m) in tooly]
    for index in marked:
        message = messages[index]
        if message["role"] != "assistant" or not _has_tool_use(message):
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered: set[str] = set()
        if following is not None and following["role"] == "user":
            answered = {
                b["tool_use_id"] for b in following["content"] if b.get("type") == "tool_result"
            }
        used = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        message["content"] = [
            b for b in message["content"] if b.get("type") != "tool_use" or b["id"] in answered
        ]
        if _is_empty(message):
            dropped.add(index)
        if following is not None and following["role"] == "user":
            following["content"] = [
                b
                for b in following["content"]
                if b.get("type") != "tool_result" or b["tool_use_id"] in used
            ]
            if not following["content"]:
                dropped.add(index + 1)
    # A tool_result with no tool_use right before it is an orphan too.
    for index in marked:
        message = messages[index]
        if message["role"] != "user" or index in dropped:
            continue
        previous = messages[index - 1] if index > 0 else None
        if previous is not None and previous["role"] == "assistant" and _has_tool_use(previous):
            continue
        kept = [b for b in message["content"] if b.get("type") != "tool_result"]
        if len(kept) != len(message["content"]):
            message["content"] = kept
            if not kept:
                dropped.add(index)
    if not dropped:
        return messages
    return [m for i, m in enumerate(messages) if i not in dropped]


# --- tools -----------------------------------------------------------------------------------


def _hosted_search_tool(definition: Any) -> Block | None:
    provider = getattr(definition, "provider", None)
    if provider not in (None, "anthropic"):
        return None
    tool: Block = {"type": "web_search_20250305", "name": "web_search"}
    for field in ("allowed_domains", "blocked_domains", "max_uses"):
        value = getattr(definition, field, None)
        if value is not None:
            tool[field] = value
    location = getattr(definition, "user_location", None)
    if location is not None:
        fields = location if isinstance(location, dict) else location.model_dump(exclude_none=True)
        tool["user_location"] = {"type": "approximate", **fields}
    return tool


def to_anthropic_tools(definitions: Sequence[Any] | None, tool_choice: str | None) -> list[Block]:
    """Function (and hosted search) definitions → Anthropic tool params; [] means omit."""
    if not definitions or tool_choice == "none":
        return []
    tools: list[Block] = []
    for definition in definitions:
        if getattr(definition, "type", "function") == "hosted_search":
            hosted = _hosted_search_tool(definition)
            if hosted is not None:
                tools.append(hosted)
            continue
        tools.append(
            {
                "name": definition.name,
                "description": definition.description,
                "input_schema": definition.parameters,
            }
        )
    return tools


def to_anthropic_tool_choice(tool_choice: str | None) -> Block | None:
    if tool_choice is None or tool_choice == "none":
        return None
    if tool_choice == "auto":
        return {"type": "auto"}
    if tool_choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": tool_choice}


# --- prompt caching --------------------------------------------------------------------------


def add_cache_breakpoints(
    system: str | None,
    tools: list[Block],
    messages: list[ApiMessage],
    *,
    cache_system: bool = True,
) -> list[Block] | None:
    """Mark the system prompt, the last tool and the latest user turn's last block as cache
    breakpoints (in place for tools and messages); returns the system prompt as blocks."""
    system_blocks: list[Block] | None = None
    if system:
        system_blocks = [{"type": "text", "text": system}]
        if cache_system:
            system_blocks[0]["cache_control"] = dict(EPHEMERAL)
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(EPHEMERAL)}
    for message in reversed(messages):
        content = message["content"]
        if message["role"] == "user" and content:
            if isinstance(content, str):  # collapsed plain text: a breakpoint needs its block
                content = message["content"] = [_text_block(content)]
            last = content[-1]
            # The API refuses a cache_control on an empty text block; nothing to cache there.
            if not (last.get("type") == "text" and last.get("text") == ""):
                content[-1] = {**last, "cache_control": dict(EPHEMERAL)}
            break
    return system_blocks


def collapse_plain_text(messages: list[ApiMessage]) -> list[ApiMessage]:
    """Send a turn that is one plain text block as a string (in place).

    Equivalent for the API, and half the nodes for the SDK to copy and encode per request,
    which on long text histories is most of the client-side cost.
    """
    for message in messages:
        content = message["content"]
        if isinstance(content, list) and len(content) == 1:
            block = content[0]
            if len(block) == 2 and block.get("type") == "text" and block["text"]:
                message["content"] = block["text"]
    return messages


__all__ = [
    "BlockCache",
    "MessagesCache",
    "add_cache_breakpoints",
    "collapse_plain_text",
    "part_to_block",
    "system_cache_allowed",
    "system_text",
    "to_anthropic_messages",
    "to_anthropic_tool_choice",
    "to_anthropic_tools",
    "tool_input",
]
