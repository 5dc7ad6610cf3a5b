"""The ``view_image`` tool: content sniffing, downsizing, parts and error texts."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from _file_tools_helpers import FileTools
from PIL import Image

from jupyter_codelia.llm.messages import ImagePart, TextPart
from jupyter_codelia.tools import ToolInputError


@pytest.fixture
def image_tools(tmp_path: Path) -> FileTools:
    return FileTools(tmp_path)


def noise(width: int, height: int, mode: str = "RGB", seed: int = 1) -> Image.Image:
    rng = np.random.default_rng(seed)
    channels = len(mode)
    array = rng.integers(0, 256, size=(height, width, channels), dtype=np.uint8)
    return Image.fromarray(array, mode)


def save(image: Image.Image, path: Path, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


async def view(tools: FileTools, **args: object) -> tuple[str, ImagePart]:
    result = await tools.run("view_image", **args)
    assert result.type == "parts", result
    text, image = result.parts
    assert isinstance(text, TextPart)
    assert isinstance(image, ImagePart)
    return text.text, image


def decoded(part: ImagePart) -> Image.Image:
    data = part.data_bytes()
    assert data is not None
    return Image.open(io.BytesIO(data))


@pytest.mark.asyncio
async def test_small_png_is_sent_unchanged(image_tools: FileTools) -> None:
    data = save(noise(64, 32), image_tools.root / "small.png", "PNG")
    text, image = await view(image_tools, file_path="small.png", detail="high")
    assert text == "Image loaded: small.png\n"
    assert image.image_url.media_type == "image/png"
    assert image.image_url.detail == "high"
    assert image.image_url.url.startswith("data:image/png;base64,")
    assert image.data_bytes() == data


@pytest.mark.asyncio
async def test_large_photo_is_downsized(image_tools: FileTools) -> None:
    original = save(noise(4000, 3000), image_tools.root / "photo.jpg", "JPEG", quality=90)
    text, image = await view(image_tools, file_path="photo.jpg")
    assert image.image_url.detail == "auto"
    assert image.image_url.media_type == "image/jpeg"
    result = decoded(image)
    assert result.size == (1568, 1176)
    sent = image.data_bytes()
    assert sent is not None
    assert len(sent) <= 5 * 1024 * 1024
    assert text == (
        "Image loaded: photo.jpg\n"
        f"Downsized from 4000x3000 px ({len(original)} bytes, image/jpeg) to 1568x1176 px "
        f"({len(sent)} bytes, image/jpeg) to fit the 1568 px / 3932160-byte limits.\n"
    )


@pytest.mark.asyncio
async def test_max_bytes_forces_a_smaller_encoding(image_tools: FileTools) -> None:
    original = save(noise(900, 700), image_tools.root / "big.png", "PNG")
    assert len(original) > 1_000_000
    text, image = await view(image_tools, file_path="big.png", max_bytes=150_000)
    sent = image.data_bytes()
    assert sent is not None
    assert len(sent) <= 150_000
    assert image.image_url.media_type == "image/jpeg"  # noise without alpha: JPEG compresses it
    assert text.startswith(
        f"Image loaded: big.png\nDownsized from 900x700 px ({len(original)} bytes"
    )
    assert "150000-byte limits" in text


@pytest.mark.asyncio
async def test_large_png_with_alpha_stays_png(image_tools: FileTools) -> None:
    image_data = np.zeros((2000, 2400, 4), dtype=np.uint8)
    image_data[..., 0] = 200
    image_data[::2, :, 3] = 255
    save(Image.fromarray(image_data, "RGBA"), image_tools.root / "alpha.png", "PNG")
    _, image = await view(image_tools, file_path="alpha.png")
    assert image.image_url.media_type == "image/png"
    result = decoded(image)
    assert result.size == (1568, 1307)
    assert result.mode == "RGBA"


@pytest.mark.asyncio
async def test_format_is_sniffed_not_taken_from_the_extension(image_tools: FileTools) -> None:
    data = save(noise(40, 40), image_tools.root / "actually_png.jpg", "PNG")
    text, image = await view(image_tools, file_path="actually_png.jpg")
    assert image.image_url.media_type == "image/png"
    assert image.data_bytes() == data
    assert text == (
        "Image loaded: actually_png.jpg\n"
        "The file content is PNG although the extension suggests JPEG.\n"
    )
    save(noise(40, 40), image_tools.root / "no_extension", "WEBP")
    text, image = await view(image_tools, file_path="no_extension")
    assert image.image_url.media_type == "image/webp"
    assert text == "Image loaded: no_extension\n"


@pytest.mark.asyncio
async def test_animated_gif_and_webp(image_tools: FileTools) -> None:
    frames = [noise(30, 30, seed=i).convert("P") for i in range(3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], duration=100)
    (image_tools.root / "anim.gif").write_bytes(buffer.getvalue())
    _, image = await view(image_tools, file_path="anim.gif")
    assert image.image_url.media_type == "image/gif"
    assert image.data_bytes() == buffer.getvalue()
    frames = [noise(2000, 100, seed=i).convert("P") for i in range(2)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:])
    (image_tools.root / "wide.gif").write_bytes(buffer.getvalue())
    text, image = await view(image_tools, file_path="wide.gif")
    assert image.image_url.media_type == "image/png"  # the first frame, downsized
    assert decoded(image).size == (1568, 78)
    assert "Downsized from 2000x100 px" in text


@pytest.mark.asyncio
async def test_error_texts(image_tools: FileTools) -> None:
    root = image_tools.root
    (root / "fake.png").write_text("just text, not an image\n")
    (root / "folder.png").mkdir()
    assert await image_tools.text("view_image", file_path="fake.png") == (
        "Unsupported image type: fake.png (the content is not a PNG, JPEG, WebP or GIF image)"
    )
    save(noise(20, 20), root / "pic.bmp", "BMP")
    assert (await image_tools.text("view_image", file_path="pic.bmp")).startswith(
        "Unsupported image type: pic.bmp"
    )
    assert await image_tools.text("view_image", file_path="folder.png") == (
        "Path is a directory: folder.png"
    )
    assert await image_tools.text("view_image", file_path="nope.png") == "File not found: nope.png"
    data = save(noise(50, 50), root / "cut.png", "PNG")
    (root / "cut.png").write_bytes(data[: len(data) // 2])
    assert (await image_tools.text("view_image", file_path="cut.png")).startswith(
        "Error loading image: "
    )
    sparse(root / "huge.png", 65 * 1024 * 1024)
    assert await image_tools.text("view_image", file_path="huge.png") == (
        "Image too large: huge.png (68157440 bytes > 67108864 bytes)"
    )


def sparse(path: Path, size: int) -> None:
    """A file of ``size`` bytes that costs no disk space."""
    with open(path, "wb") as handle:
        handle.truncate(size)


def png_header_only(width: int, height: int) -> bytes:
    """A tiny PNG that claims enormous dimensions (a decompression bomb)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )


@pytest.mark.asyncio
async def test_pixel_bombs_are_refused(image_tools: FileTools) -> None:
    root = image_tools.root
    (root / "bomb.png").write_bytes(png_header_only(12000, 10000))
    assert await image_tools.text("view_image", file_path="bomb.png") == (
        "Image too large: bomb.png (12000x10000 = 120000000 pixels > 89478485 pixels)"
    )
    (root / "bigger.png").write_bytes(png_header_only(30000, 30000))
    text = await image_tools.text("view_image", file_path="bigger.png")
    assert text.startswith("Image too large: bigger.png (Image size (900000000 pixels) exceeds")


@pytest.mark.asyncio
async def test_input_validation(image_tools: FileTools) -> None:
    with pytest.raises(ToolInputError, match="max_bytes"):
        await image_tools.run("view_image", file_path="x.png", max_bytes=10485761)
    with pytest.raises(ToolInputError, match="detail"):
        await image_tools.run("view_image", file_path="x.png", detail="medium")


def test_model_images_say_what_they_could_not_attach(tmp_path: Path) -> None:
    from jupyter_codelia.standard_tools.images import model_images

    good = save(noise(40, 30), tmp_path / "ok.png", "PNG")
    truncated = good[: len(good) // 2]
    parts, notes = model_images([b"plain text", truncated, good], what="output")
    assert len(parts) == 1 and decoded(parts[0]).size == (40, 30)
    assert notes[0] == ("output 1 not attached: the content is not a PNG, JPEG, WebP or GIF image")
    assert notes[1].startswith("output 2 not attached: it cannot be decoded (")
    assert len(notes) == 2
