"""The ``view_image`` tool.

The format is sniffed from the content with Pillow (the extension is only a hint), and an image
whose long edge exceeds 1568 px (what the model sees at most) or whose size exceeds ``max_bytes``
is downsized and re-encoded; the text part then says so, with the original and new size.
"""

from __future__ import annotations

import asyncio
import io
import os
import warnings
from typing import Literal

from pydantic import BaseModel, Field

from .._text import describe_exc
from ..errors import CodeliaError
from ..llm.messages import ImageMediaType, ImagePart, TextPart
from ..tools import DependencyKey, FunctionTool, PartsResult, ToolContext, define_tool
from ._fileio import resolve_in_sandbox
from ._sandbox import Sandbox

MAX_LONG_EDGE = 1568
DEFAULT_MAX_BYTES = 5 * 1024 * 1024
MAX_MAX_BYTES = 10 * 1024 * 1024
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
    "on the long edge or than max_bytes (default 5 MB) are downsized. detail is passed to the "
    "model (auto, low or high). Read-only."
)


class ViewImageInput(BaseModel):
    file_path: str = Field(description="Path of the image, relative to the working directory.")
    detail: Literal["auto", "low", "high"] = Field("auto", description="Image detail hint.")
    max_bytes: int = Field(
        DEFAULT_MAX_BYTES, gt=0, le=MAX_MAX_BYTES, description="Largest encoded size to send."
    )


class UnsupportedImageError(CodeliaError, ValueError):
    pass


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
        _, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> PartsResult | str:
            shown = params.file_path
            try:
                if path.is_dir():
                    return f"Path is a directory: {shown}"
                if not path.exists():
                    return f"File not found: {shown}"
                size = path.stat().st_size
                if size > MAX_INPUT_BYTES:
                    return f"Image too large: {shown} ({size} bytes > {MAX_INPUT_BYTES} bytes)"
                data = path.read_bytes()
                sniffed = _sniff(data)
                if sniffed is None:
                    return (
                        f"Unsupported image type: {shown} (the content is not a PNG, JPEG, WebP or "
                        "GIF image)"
                    )
                fmt, (width, height) = sniffed
                if width * height > MAX_PIXELS:
                    return (
                        f"Image too large: {shown} ({width}x{height} = {width * height} pixels > "
                        f"{MAX_PIXELS} pixels)"
                    )
                media_type = _FORMATS[fmt]
                notes: list[str] = []
                extension_type = _EXTENSIONS.get(os.path.splitext(shown)[1].lower())
                if extension_type is not None and extension_type != media_type:
                    notes.append(
                        f"The file content is {fmt} although the extension suggests "
                        f"{extension_type.split('/')[1].upper()}."
                    )
                shrunk = shrink_image(data, fmt, params.max_bytes)
                if shrunk is not None:
                    new_data, new_type, (ow, oh), (nw, nh) = shrunk
                    if not new_data:
                        return (
                            f"Image too large: {shown} "
                            f"({len(data)} bytes > {params.max_bytes} bytes)"
                        )
                    notes.append(
                        f"Downsized from {ow}x{oh} px ({len(data)} bytes, {media_type}) to "
                        f"{nw}x{nh} px ({len(new_data)} bytes, {new_type}) to fit the "
                        f"{MAX_LONG_EDGE} px / {params.max_bytes}-byte limits."
                    )
                    data, media_type = new_data, new_type
            except Exception as exc:
                from PIL import Image

                if isinstance(exc, Image.DecompressionBombError):
                    return f"Image too large: {shown} ({exc})"
                return f"Error loading image: {describe_exc(exc)}"
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
    )
