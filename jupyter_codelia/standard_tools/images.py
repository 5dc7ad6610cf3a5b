"""Images for the model: the ``view_image`` tool and the downscaler every image source shares.

The format is sniffed from the content with Pillow (the extension is only a hint), and an image
whose long edge exceeds 1568 px (what the model sees at most) or whose size exceeds the
provider's limit is downsized and re-encoded; the text says so, with the original and new size.
The Messages API refuses an image whose base64 form is over 5 MiB (3.75 MiB of bytes) and a
request over 32 MB, so :func:`model_images` - used by ``view_image``, the notebook tools, the
``python`` tool's figures and MCP results - also caps how many images one tool result attaches
and their total size, and says what it left out.
"""

from __future__ import annotations

import asyncio
import io
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from .._text import describe_exc
from ..errors import CodeliaError
from ..llm.messages import ImageMediaType, ImagePart, TextPart
from ..tools import DependencyKey, FunctionTool, PartsResult, ToolContext, ToolRisk, define_tool
from ._fdpath import Walker
from ._fileio import locate, path_arg, resolve_in_sandbox
from ._sandbox import Sandbox

MAX_LONG_EDGE = 1568
# The Messages API limit is 5 MiB of base64 per image: 3/4 of that in bytes.
PROVIDER_IMAGE_BYTES = 5 * 1024 * 1024 * 3 // 4
DEFAULT_MAX_BYTES = PROVIDER_IMAGE_BYTES
MAX_MAX_BYTES = 10 * 1024 * 1024
# One tool result attaches at most this many images, of at most this many bytes together
# (16 MiB of base64: half a 32 MB request, leaving room for the rest of the conversation).
MAX_IMAGES_PER_RESULT = 8
MAX_RESULT_IMAGE_BYTES = 12 * 1024 * 1024
# Files above this are refused before decoding (a decode of such a file costs seconds and
# hundreds of MB); it is far above any photo a model needs to look at.
MAX_INPUT_BYTES = 64 * 1024 * 1024
# Pillow's own decompression-bomb threshold: decoding more pixels costs too much memory.
MAX_PIXELS = 89_478_485

_FORMATS: dict[str, ImageMediaType] = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "GIF": "image/gif",
}
_EXTENSIONS: dict[str, ImageMediaType] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
}

VIEW_IMAGE_DESCRIPTION = (
    "Load a local PNG, JPEG, WebP or GIF image so you can look at it. Images larger than 1568 px "
    "on the long edge or than max_bytes (default 3.75 MiB: 5 MiB once base64-encoded, the API's "
    "limit) are downsized. detail is passed to the "
    "model (auto, low or high). Read-only."
)


class ViewImageInput(BaseModel):
    file_path: str = Field(description="Path of the image, relative to the working directory.")
    detail: Literal["auto", "low", "high"] = Field("auto", description="Image detail hint.")
    max_bytes: int = Field(
        DEFAULT_MAX_BYTES, gt=0, le=MAX_MAX_BYTES, description="Largest encoded size to send."
    )


class UnsupportedImageError(CodeliaError, ValueError):
    """The bytes are not a PNG, JPEG, WebP or GIF image (or are corrupt)."""


class ImageTooLargeError(CodeliaError, ValueError):
    """An image too large to decode or to bring under the byte limit."""


@dataclass(frozen=True)
class ModelImage:
    """An image as the model gets it; ``note`` says how it was changed (None: unchanged)."""

    data: bytes
    media_type: ImageMediaType
    original_type: ImageMediaType
    note: str | None = None


def fit_image(data: bytes, *, max_bytes: int = PROVIDER_IMAGE_BYTES) -> ModelImage:
    """``data`` sniffed, verified and, when over 1568 px or ``max_bytes``, downsized.

    Raises :class:`UnsupportedImageError` or :class:`ImageTooLargeError` with a message for
    the model, and Pillow's own error for a corrupt image. CPU-bound (a big PNG decodes for a
    second): call it off the event loop.
    """
    from PIL import Image

    if len(data) > MAX_INPUT_BYTES:
        raise ImageTooLargeError(f"{len(data)} bytes > {MAX_INPUT_BYTES} bytes")
    try:
        sniffed = _sniff(data)
        if sniffed is None:
            raise UnsupportedImageError("the content is not a PNG, JPEG, WebP or GIF image")
        fmt, (width, height) = sniffed
        if width * height > MAX_PIXELS:
            raise ImageTooLargeError(
                f"{width}x{height} = {width * height} pixels > {MAX_PIXELS} pixels"
            )
        media_type = _FORMATS[fmt]
        shrunk = shrink_image(data, fmt, max_bytes)
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(str(exc)) from None
    if shrunk is None:
        return ModelImage(data, media_type, media_type)
    new_data, new_type, (ow, oh), (nw, nh) = shrunk
    if not new_data:
        raise ImageTooLargeError(f"{len(data)} bytes > {max_bytes} bytes")
    note = (
        f"Downsized from {ow}x{oh} px ({len(data)} bytes, {media_type}) to {nw}x{nh} px "
        f"({len(new_data)} bytes, {new_type}) to fit the {MAX_LONG_EDGE} px / "
        f"{max_bytes}-byte limits."
    )
    return ModelImage(new_data, new_type, media_type, note)


def model_images(
    images: Sequence[bytes], *, what: str = "image"
) -> tuple[list[ImagePart], list[str]]:
    """The image parts one tool result attaches, and notes for its text.

    Each image is fitted (:func:`fit_image`); at most :data:`MAX_IMAGES_PER_RESULT` are
    attached, of at most :data:`MAX_RESULT_IMAGE_BYTES` together, and the notes say what was
    downsized and what was left out (``what`` names them: "figure", "image").
    """
    parts: list[ImagePart] = []
    notes: list[str] = []
    total = 0
    left_out = 0
    for number, data in enumerate(images, start=1):
        if len(parts) >= MAX_IMAGES_PER_RESULT:
            left_out = len(images) - number + 1
            break
        try:
            fitted = fit_image(data)
        except (UnsupportedImageError, ImageTooLargeError) as exc:
            notes.append(f"{what} {number} not attached: {exc}")
            continue
        except Exception as exc:  # Pillow's errors for truncated or corrupt data
            reason = describe_exc(exc)
            notes.append(f"{what} {number} not attached: it cannot be decoded ({reason})")
            continue
        if total + len(fitted.data) > MAX_RESULT_IMAGE_BYTES:
            left_out = len(images) - number + 1
            break
        total += len(fitted.data)
        parts.append(ImagePart.from_bytes(fitted.data, fitted.media_type))
        if fitted.note:
            notes.append(f"{what} {number}: {fitted.note}")
    if left_out:
        notes.append(
            f"{left_out} more {what}(s) not attached: one result attaches at most "
            f"{MAX_IMAGES_PER_RESULT} images of {MAX_RESULT_IMAGE_BYTES // (1024 * 1024)} MiB "
            "together. Ask for fewer at a time."
        )
    return parts, notes


def _encode(image: object, fmt: str, quality: int) -> bytes:
    from PIL import Image

    assert isinstance(image, Image.Image)
    buffer = io.BytesIO()
    if fmt == "JPEG":
        image.convert("RGB").save(buffer, "JPEG", quality=quality, optimize=True)
    elif fmt == "WEBP":
        image.save(buffer, "WEBP", quality=quality)
    else:
        image.save(buffer, "PNG", optimize=quality < 90)
    return buffer.getvalue()


def shrink_image(
    data: bytes, fmt: str, max_bytes: int
) -> tuple[bytes, ImageMediaType, tuple[int, int], tuple[int, int]] | None:
    """(bytes, media type, original size, new size) when downsizing is needed, else None."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        original = opened.size
        if max(original) <= MAX_LONG_EDGE and len(data) <= max_bytes:
            return None
        if opened.format == "JPEG":
            opened.draft("RGB", (MAX_LONG_EDGE, MAX_LONG_EDGE))  # fast DCT-domain downscale
        image = opened.convert("RGBA" if _has_alpha(opened) else "RGB")
    scale = min(1.0, MAX_LONG_EDGE / max(original))
    has_alpha = image.mode == "RGBA"
    # Keep the source format when it can be re-encoded well; GIF frames become PNG.
    target = fmt if fmt in ("PNG", "JPEG", "WEBP") else "PNG"
    quality = 85
    for _ in range(12):
        size = (max(1, round(original[0] * scale)), max(1, round(original[1] * scale)))
        resized = image if size == image.size else image.resize(size, Image.Resampling.LANCZOS)
        encoded = _encode(resized, target, quality)
        if len(encoded) <= max_bytes:
            return encoded, _FORMATS[target], original, size
        if target == "PNG" and not has_alpha:
            target = "JPEG"  # photos compress far better as JPEG
        elif quality > 60 and target != "PNG":
            quality -= 15
        else:
            scale *= 0.75
    return None if len(data) <= max_bytes else (b"", _FORMATS[target], original, original)


def _format_name(media_type: ImageMediaType) -> str:
    return next(name for name, known in _FORMATS.items() if known == media_type)


def _has_alpha(image: object) -> bool:
    from PIL import Image

    assert isinstance(image, Image.Image)
    return image.mode in ("RGBA", "LA", "PA") or (
        image.mode == "P" and "transparency" in image.info
    )


def _sniff(data: bytes) -> tuple[str, tuple[int, int]] | None:
    """The Pillow format name and pixel size of ``data`` when it is a supported image.

    A recognized image is also verified (cheap: checksums and structure, no full decode), so a
    truncated or corrupt file fails here with Pillow's reason instead of reaching the model.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # Sizes between Pillow's warning and error thresholds are refused by the caller.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                fmt, size = image.format, image.size
    except (UnidentifiedImageError, ValueError):
        return None
    if fmt not in _FORMATS:
        return None
    if size[0] * size[1] <= MAX_PIXELS:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
    return fmt, size


def make_view_image_tool(key: DependencyKey[Sandbox]) -> FunctionTool:
    async def view_image(params: ViewImageInput, ctx: ToolContext) -> PartsResult | str:
        sandbox, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> PartsResult | str:
            shown = params.file_path
            try:
                # Through the directory fds (a path swapped after the check cannot redirect it).
                with Walker(sandbox) as walker:
                    try:
                        fd = locate(walker, path, shown).open_read()
                    except IsADirectoryError:
                        return f"Path is a directory: {shown}"
                    except (FileNotFoundError, NotADirectoryError):
                        return f"File not found: {shown}"
                with os.fdopen(fd, "rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    if size > MAX_INPUT_BYTES:
                        return f"Image too large: {shown} ({size} bytes > {MAX_INPUT_BYTES} bytes)"
                    data = handle.read()
                fitted = fit_image(data, max_bytes=params.max_bytes)
            except UnsupportedImageError as exc:
                return f"Unsupported image type: {shown} ({exc})"
            except ImageTooLargeError as exc:
                return f"Image too large: {shown} ({exc})"
            except Exception as exc:
                return f"Error loading image: {describe_exc(exc)}"
            notes: list[str] = []
            extension_type = _EXTENSIONS.get(os.path.splitext(shown)[1].lower())
            if extension_type is not None and extension_type != fitted.original_type:
                notes.append(
                    f"The file content is {_format_name(fitted.original_type)} although the "
                    f"extension suggests {_format_name(extension_type)}."
                )
            if fitted.note:
                notes.append(fitted.note)
            data, media_type = fitted.data, fitted.media_type
            text = f"Image loaded: {shown}\n" + "".join(note + "\n" for note in notes)
            return PartsResult(
                parts=[
                    TextPart(text=text),
                    ImagePart.from_bytes(data, media_type, detail=params.detail),
                ]
            )

        return await asyncio.to_thread(work)

    return define_tool(
        name="view_image",
        description=VIEW_IMAGE_DESCRIPTION,
        input=ViewImageInput,
        execute=view_image,
        risk=ToolRisk(kind="read_only", describe=lambda args: f"view_image {path_arg(args)}"),
    )
