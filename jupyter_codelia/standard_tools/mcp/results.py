"""MCP results → our content parts, so the cache, trimming and both panels treat them as ours.

* text stays text; ``structuredContent`` without text becomes its JSON;
* images are decoded and, when larger than the model accepts, downscaled through
  ``view_image``'s own code path (``images.fit_image``, with its per-result image caps),
  saying so in a text part;
* embedded and read resources: text as text, blobs decoded when they are text (a ``text/*``,
  JSON, XML, YAML, CSV or script type, or UTF-8 without control bytes), images and PDFs as such,
  anything else described (type, size, compression) instead of dropped or passed as gibberish;
* resource links become a line naming the URI, which ``mcp_read_resource`` reads;
* audio and unknown blocks are described by kind and size.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from ..._text import compact_json, describe_exc
from ...llm.messages import DocumentPart, DocumentSource, ImagePart, TextPart
from ..images import (
    MAX_IMAGES_PER_RESULT,
    MAX_RESULT_IMAGE_BYTES,
    ImageTooLargeError,
    UnsupportedImageError,
    fit_image,
)

_IMAGE_FORMATS: dict[str, str] = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/webp": "WEBP",
    "image/gif": "GIF",
}
_TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-javascript",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/graphql",
    "application/ld+json",
    "application/csv",
    "application/x-ndjson",
)
_TEXT_SUFFIXES = ("+json", "+xml", "+yaml")
_COMPRESSED = {
    b"\x1f\x8b": "gzip-compressed",
    b"PK\x03\x04": "a ZIP archive",
    b"BZh": "bzip2-compressed",
    b"\xfd7zXZ": "xz-compressed",
    b"(\xb5/\xfd": "zstd-compressed",
}


def is_text_type(mime: str) -> bool:
    mime = mime.split(";", 1)[0].strip().lower()
    return mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(_TEXT_SUFFIXES)


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _as_text(raw: bytes, mime: str) -> str | None:
    """``raw`` as text when its type says so, or when it is clean UTF-8 without a declared type."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        if not is_text_type(mime):
            return None
        return raw.decode("utf-8", errors="replace")
    if is_text_type(mime):
        return text
    generic = mime in ("", "application/octet-stream")
    controls = sum(1 for ch in text[:4096] if ord(ch) < 32 and ch not in "\t\n\r\f")
    return text if generic and controls == 0 else None


def describe_binary(what: str, mime: str, raw: bytes | None) -> str:
    """An honest line about data the model cannot read (type, size, what it looks like)."""
    if raw is None:
        return f"[{what}: {mime or 'unknown type'}; its base64 data is malformed, not shown]"
    kind = next((name for magic, name in _COMPRESSED.items() if raw.startswith(magic)), "binary")
    return f"[{what}: {mime or 'unknown type'}, {len(raw)} bytes of {kind} data, not shown]"


def image_parts(raw: bytes, mime: str, what: str) -> list[Any]:
    """An image the model can take, through ``view_image``'s fitting (``images.fit_image``): as
    it is, or downscaled with a note, or a line saying why it is not attached."""
    if mime not in _IMAGE_FORMATS:
        return [TextPart(text=describe_binary(what, mime, raw))]
    try:
        fitted = fit_image(raw)
    except (UnsupportedImageError, ImageTooLargeError) as exc:
        return [TextPart(text=f"[{what}: {mime}, {len(raw)} bytes; not attached: {exc}]")]
    except Exception as exc:  # Pillow's errors for truncated or corrupt data
        reason = describe_exc(exc)
        return [TextPart(text=f"[{what}: {mime}, {len(raw)} bytes; not readable ({reason})]")]
    image = ImagePart.from_bytes(fitted.data, fitted.media_type)
    return [TextPart(text=f"[{what}: {fitted.note}]"), image] if fitted.note else [image]


def capped_images(parts: list[Any]) -> list[Any]:
    """At most ``MAX_IMAGES_PER_RESULT`` images of ``MAX_RESULT_IMAGE_BYTES`` together, as for
    every tool; the rest become one line saying what was left out."""
    kept: list[Any] = []
    count = total = left_out = 0
    for part in parts:
        if isinstance(part, ImagePart):
            size = len(part.data_bytes() or b"")
            if count >= MAX_IMAGES_PER_RESULT or total + size > MAX_RESULT_IMAGE_BYTES:
                left_out += 1
                continue
            count, total = count + 1, total + size
        kept.append(part)
    if left_out:
        kept.append(
            TextPart(
                text=f"[{left_out} more image(s) not attached: one result attaches at most "
                f"{MAX_IMAGES_PER_RESULT} images of {MAX_RESULT_IMAGE_BYTES // (1024 * 1024)} "
                "MiB together]"
            )
        )
    return kept


def _base64_image(data: str, mime: str, what: str) -> list[Any]:
    raw = _decoded(data)
    if raw is None:
        return [TextPart(text=describe_binary(what, mime, None))]
    return image_parts(raw, mime, what)


def resource_parts(resource: Any) -> list[Any]:
    """One embedded or read resource (text or blob contents) → parts."""
    uri = resource.uri
    mime = (resource.mime_type or "").lower()
    text = getattr(resource, "text", None)
    if text is not None:
        return [TextPart(text=f"[resource {uri}]\n{text}")]
    blob = getattr(resource, "blob", "") or ""
    what = f"resource {uri}"
    if mime in _IMAGE_FORMATS:
        return _base64_image(blob, mime, what)
    if mime == "application/pdf":
        return [DocumentPart(source=DocumentSource(data=blob))]
    raw = _decoded(blob)
    decoded = _as_text(raw, mime) if raw is not None else None
    if decoded is not None:
        return [TextPart(text=f"[resource {uri}]\n{decoded}")]
    return [TextPart(text=describe_binary(what, mime, raw))]


def block_parts(block: Any) -> list[Any]:
    kind = block.type
    if kind == "text":
        return [TextPart(text=block.text)]
    if kind == "image":
        return _base64_image(block.data, (block.mime_type or "").lower(), "image")
    if kind == "resource":
        return resource_parts(block.resource)
    if kind == "resource_link":
        about = f" ({block.mime_type})" if getattr(block, "mime_type", None) else ""
        return [
            TextPart(
                text=f"[resource link {block.uri}{about}] {block.name} "
                "(read it with mcp_read_resource)"
            )
        ]
    mime = getattr(block, "mime_type", None) or ""
    raw = _decoded(getattr(block, "data", "") or "")
    return [TextPart(text=describe_binary(str(kind), mime, raw))]


def content_parts(result: Any) -> list[Any]:
    """An MCP ``CallToolResult``'s content → our content parts (same order)."""
    parts = capped_images([part for block in result.content for part in block_parts(block)])
    if not parts and result.structured_content is not None:
        parts.append(TextPart(text=compact_json(result.structured_content)))
    return parts


def joined_text(parts: Iterable[Any]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))
