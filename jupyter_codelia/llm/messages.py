"""Provider-neutral message, content-part and tool-definition types.

These are the data that cross every boundary: tools return content parts, the agent keeps a
history of messages, providers serialise them, sessions persist them. All are pydantic models
serialised with ``model_dump(mode="json", exclude_none=True)``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator


class _Data(BaseModel):
    model_config = ConfigDict(extra="ignore")

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict without unset/None keys (the wire form)."""
        return self.model_dump(mode="json", exclude_none=True)


# --- content parts ---------------------------------------------------------------------------

ImageMediaType = Literal["image/png", "image/jpeg", "image/webp", "image/gif"]


class TextPart(_Data):
    """Text; ``citations`` are the provider's source references for it, kept verbatim (the
    API wants them back unchanged when the turn is replayed)."""

    type: Literal["text"] = "text"
    text: str
    citations: list[dict[str, Any]] | None = None
    context: str | None = None
    """Set on a context block the agent added to a prompt (its kind, e.g. ``notebook_outline``;
    see :func:`context_block`); None on text a person or a model wrote. Providers send the text
    as any other; titles, transcripts and offline scripts leave context blocks out."""


class ImageUrl(_Data):
    url: str
    detail: Literal["auto", "low", "high"] | None = None
    media_type: ImageMediaType | None = None


class ImagePart(_Data):
    type: Literal["image_url"] = "image_url"
    image_url: ImageUrl

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        media_type: ImageMediaType,
        detail: Literal["auto", "low", "high"] | None = None,
    ) -> ImagePart:
        import base64

        url = f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
        return cls(image_url=ImageUrl(url=url, media_type=media_type, detail=detail))

    def data_bytes(self) -> bytes | None:
        """The decoded bytes of a ``data:`` URL, or None for a remote URL."""
        import base64

        url = self.image_url.url
        if not url.startswith("data:") or ";base64," not in url:
            return None
        return base64.b64decode(url.split(";base64,", 1)[1])


class DocumentSource(_Data):
    """A PDF: base64 ``data`` or a ``url`` the provider fetches (exactly one of them)."""

    data: str | None = None
    url: str | None = None
    media_type: Literal["application/pdf"] = "application/pdf"

    @model_validator(mode="after")
    def _one_source(self) -> DocumentSource:
        if (self.data is None) == (self.url is None):
            raise ValueError("a document source needs exactly one of data (base64) or url")
        return self


class DocumentPart(_Data):
    type: Literal["document"] = "document"
    source: DocumentSource

    @classmethod
    def from_bytes(cls, data: bytes) -> DocumentPart:
        """A PDF document part holding ``data`` as base64."""
        import base64

        return cls(source=DocumentSource(data=base64.b64encode(data).decode("ascii")))


class OtherPart(_Data):
    type: Literal["other"] = "other"
    provider: str
    kind: str
    payload: Any = None


ContentPart = Annotated[
    TextPart | ImagePart | DocumentPart | OtherPart, Field(discriminator="type")
]
content_parts_adapter: TypeAdapter[list[ContentPart]] = TypeAdapter(list[ContentPart])


def is_content_part(value: Any) -> bool:
    """Shape check used by result coercion."""
    if isinstance(value, (TextPart, ImagePart, DocumentPart, OtherPart)):
        return True
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if kind == "text":
        return isinstance(value.get("text"), str)
    if kind == "image_url":
        image = value.get("image_url")
        return isinstance(image, dict) and isinstance(image.get("url"), str)
    if kind == "document":
        source = value.get("source")
        return (
            isinstance(source, dict)
            and (isinstance(source.get("data"), str) or isinstance(source.get("url"), str))
            and source.get("media_type", "application/pdf") == "application/pdf"
        )
    if kind == "other":
        return isinstance(value.get("provider"), str) and isinstance(value.get("kind"), str)
    return False


def part_placeholder(part: TextPart | ImagePart | DocumentPart | OtherPart) -> str:
    """The text projection of one part: its text, or ``[image]``-style placeholders."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ImagePart):
        return "[image]"
    if isinstance(part, DocumentPart):
        return "[document]"
    return f"[other:{part.provider}/{part.kind}]"


_CONTEXT_KIND = re.compile(r"[a-z][a-z0-9_-]*")


def context_block(kind: str, body: str) -> TextPart:
    """A context block for a user message: ``body`` between ``<kind>`` tags, marked as context.

    The model reads the tags; code that has the message reads :attr:`TextPart.context`, and code
    that sees only a provider request (an offline script) reads the block's envelope with
    :func:`context_kind`.
    """
    if not _CONTEXT_KIND.fullmatch(kind):
        raise ValueError(f"a context kind is lowercase letters, digits, '_' or '-', got {kind!r}")
    return TextPart(text=f"<{kind}>\n{body}\n</{kind}>", context=kind)


def context_kind(text: str) -> str | None:
    """The kind of a block that is exactly a :func:`context_block` envelope, else None.

    For readers of a provider request, where a text block is plain text: a context block is one
    whole block ``<kind>\\n...\\n</kind>``, never a tag inside what the person typed.
    """
    if not text.startswith("<"):
        return None
    kind, closing, _ = text[1:].partition(">\n")
    if not closing or not _CONTEXT_KIND.fullmatch(kind):
        return None
    return kind if text.endswith(f"\n</{kind}>") else None


def prompt_text(content: str | list[Any] | None) -> str:
    """What the person wrote in a user message: its text parts without context blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart) and p.context is None)


def text_projection(content: str | list[Any] | None) -> str:
    """Concatenated text of a message's content, non-text parts as placeholders."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part_placeholder(p) if not isinstance(p, dict) else "[content]" for p in content)


def answer_text(content: str | list[Any] | None) -> str:
    """The text a reader should see: text parts only (provider blocks such as server-tool
    calls and their results are kept for replay, not shown as placeholders)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart))


def citations_of(content: str | list[Any] | None) -> list[dict[str, Any]]:
    """All citations attached to the text parts of ``content``, in order."""
    if not isinstance(content, list):
        return []
    return [c for p in content if isinstance(p, TextPart) for c in p.citations or []]


def has_non_text_part(content: str | list[Any] | None) -> bool:
    return isinstance(content, list) and any(not isinstance(p, TextPart) for p in content)


# --- tool calls and definitions --------------------------------------------------------------


class FunctionCall(_Data):
    name: str
    arguments: str


class ToolCall(_Data):
    """A call the model asked for. ``cut_off``: the reply hit its output limit while the
    arguments were still being written, so ``function.arguments`` is unfinished JSON and the
    call must not run."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall
    provider_meta: Any = None
    cut_off: bool | None = None


class FunctionToolDefinition(_Data):
    type: Literal["function"] = "function"
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = False


class ToolOutputRef(_Data):
    id: str
    byte_size: int | None = None
    line_count: int | None = None


# --- messages --------------------------------------------------------------------------------


class SystemMessage(_Data):
    role: Literal["system"] = "system"
    content: str | list[TextPart]
    name: str | None = None
    cache: bool | None = None


class UserMessage(_Data):
    role: Literal["user"] = "user"
    content: str | list[ContentPart]
    name: str | None = None


class AssistantMessage(_Data):
    role: Literal["assistant"] = "assistant"
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    refusal: str | None = None


class ToolMessage(_Data):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    tool_name: str
    content: str | list[ContentPart]
    is_error: bool | None = None
    output_ref: ToolOutputRef | None = None
    trimmed: bool | None = None


class ReasoningMessage(_Data):
    role: Literal["reasoning"] = "reasoning"
    content: str | None = None
    raw_item: Any = None


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage | ReasoningMessage,
    Field(discriminator="role"),
]
messages_adapter: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def dump_messages(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.dump() for m in messages]


def load_messages(data: list[Any]) -> list[Any]:
    return messages_adapter.validate_python(data)


# --- usage and completions -------------------------------------------------------------------


class ChatInvokeUsage(_Data):
    model: str
    input_tokens: int = 0
    input_cached_tokens: int | None = None
    input_cache_creation_tokens: int | None = None
    input_image_tokens: int | None = None
    output_tokens: int = 0
    total_tokens: int = 0
    web_search_requests: int | None = None
    web_fetch_requests: int | None = None


StopKind = Literal[
    "end", "tool_calls", "output_limit", "context_window", "content_filter", "refusal", "pause"
]
"""Why a reply ended, in the same words for every provider: ``end`` (finished), ``tool_calls``
(stopped to have tools run), ``output_limit`` (cut off by the output-token limit: Anthropic's
``max_tokens``, Chat Completions' ``length``, the Responses API's ``max_output_tokens``),
``context_window`` (the conversation filled the model's window), ``content_filter`` (a safety
filter stopped it), ``refusal`` (the model declined), ``pause`` (the API paused a long turn,
to be resumed)."""


class ChatInvokeCompletion(_Data):
    """One model reply. ``stop_kind`` is why it ended (:data:`StopKind`; None when the provider
    gave a reason we do not know), ``stop_reason`` the provider's own word for it."""

    messages: list[Message]
    usage: ChatInvokeUsage | None = None
    stop_reason: str | None = None
    stop_kind: StopKind | None = None
    provider_meta: Any = None


__all__ = [
    "AssistantMessage",
    "ChatInvokeCompletion",
    "ChatInvokeUsage",
    "ContentPart",
    "DocumentPart",
    "DocumentSource",
    "FunctionCall",
    "FunctionToolDefinition",
    "ImagePart",
    "ImageUrl",
    "Message",
    "OtherPart",
    "ReasoningMessage",
    "StopKind",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolMessage",
    "ToolOutputRef",
    "UserMessage",
    "answer_text",
    "citations_of",
    "content_parts_adapter",
    "context_block",
    "context_kind",
    "dump_messages",
    "has_non_text_part",
    "is_content_part",
    "load_messages",
    "messages_adapter",
    "part_placeholder",
    "prompt_text",
    "text_projection",
]
