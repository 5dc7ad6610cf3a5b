"""The ``read`` and ``read_line`` tools."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest
from _file_tools_helpers import FileTools

from jupyter_codelia.tools import ToolInputError


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def read_tools(tmp_path: Path) -> FileTools:
    return FileTools(tmp_path)


@pytest.mark.asyncio
async def test_read_numbers_lines_and_appends_the_hash(read_tools: FileTools) -> None:
    content = "alpha\nbeta\r\ngamma\n"
    (read_tools.root / "f.txt").write_bytes(content.encode())
    text = await read_tools.text("read", file_path="f.txt")
    assert text == (
        "    1  alpha\n    2  beta\n    3  gamma\n    4  "
        f"\n\n[read_metadata] content_sha256={sha(content)}"
    )


@pytest.mark.asyncio
async def test_read_window_and_more_lines_hint(read_tools: FileTools) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 11))
    (read_tools.root / "f.txt").write_text(content)
    text = await read_tools.text("read", file_path="f.txt", offset=2, limit=3)
    assert text == (
        "    3  line 3\n    4  line 4\n    5  line 5"
        "\n\nOutput has more lines. Use offset to read beyond line 5."
        f"\n\n[read_metadata] content_sha256={sha(content)}"
    )


@pytest.mark.asyncio
async def test_read_empty_file_is_one_empty_line(read_tools: FileTools) -> None:
    (read_tools.root / "empty.txt").write_text("")
    text = await read_tools.text("read", file_path="empty.txt")
    assert text == f"    1  \n\n[read_metadata] content_sha256={sha('')}"


@pytest.mark.asyncio
async def test_read_error_texts(read_tools: FileTools) -> None:
    (read_tools.root / "d").mkdir()
    (read_tools.root / "f.txt").write_text("one\n")
    assert await read_tools.text("read", file_path="missing.txt") == "File not found: missing.txt"
    assert await read_tools.text("read", file_path="d") == "Path is a directory: d"
    assert await read_tools.text("read", file_path="f.txt", offset=2) == (
        "Offset exceeds output length: f.txt"
    )


@pytest.mark.asyncio
async def test_read_failure_is_reported(read_tools: FileTools) -> None:
    # A UNIX socket exists and is not a directory, but open() fails on it (ENXIO).
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(read_tools.root / "sock"))
        text = await read_tools.text("read", file_path="sock")
        assert text.startswith("Error reading file: OSError: [Errno 6] No such device or address")
        text = await read_tools.text("read_line", file_path="sock", line_number=1)
        assert text.startswith("Error reading file: OSError: ")


@pytest.mark.asyncio
async def test_read_long_lines_are_clipped_with_a_read_line_hint(read_tools: FileTools) -> None:
    long_line = "x" * 1500
    content = f"short\n{long_line}\nend"
    (read_tools.root / "long file.txt").write_text(content)
    text = await read_tools.text("read", file_path="long file.txt")
    assert text == (
        f"    1  short\n    2  {'x' * 1000}...\n    3  end"
        "\n\n[truncated lines: 2]"
        '\n\nFor full long-line content, use read_line({"file_path":"long file.txt",'
        '"line_number":2,"char_offset":0,"char_limit":10000}).'
        f"\n\n[read_metadata] content_sha256={sha(content)}"
    )


@pytest.mark.asyncio
async def test_read_many_clipped_lines_say_many(read_tools: FileTools) -> None:
    content = "\n".join("y" * 1200 for _ in range(5))
    (read_tools.root / "f.txt").write_text(content)
    text = await read_tools.text("read", file_path="f.txt")
    assert "\n\n[truncated lines: many]" in text
    assert '"line_number":1,' in text


@pytest.mark.asyncio
async def test_read_byte_limit_and_env_overrides(
    read_tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = "".join(f"{i:04d}\n" for i in range(100))
    (read_tools.root / "f.txt").write_text(content)
    monkeypatch.setenv("CODELIA_READ_MAX_BYTES", "40")
    text = await read_tools.text("read", file_path="f.txt")
    # each numbered line is 11 bytes, +1 newline between lines: 3 lines = 35 bytes, 4 = 47
    assert text.startswith("    1  0000\n    2  0001\n    3  0002\n\n")
    assert "[output truncated at 40 bytes] Use offset to read beyond line 3." in text
    monkeypatch.setenv("CODELIA_READ_MAX_BYTES", "not a number")
    monkeypatch.setenv("CODELIA_READ_MAX_LINE_LENGTH", "2")
    text = await read_tools.text("read", file_path="f.txt", limit=1)
    assert text.startswith("    1  00...\n\nOutput has more lines.")


@pytest.mark.asyncio
async def test_read_first_line_over_byte_budget_is_clipped(
    read_tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODELIA_READ_MAX_BYTES", "20")
    (read_tools.root / "f.txt").write_text("abcdefghijklmnopqrstuvwxyz\nnext\n")
    text = await read_tools.text("read", file_path="f.txt")
    # budget 20 - 7 (prefix) = 13 bytes: 10 chars + "..."
    assert text.startswith("    1  abcdefghij...\n\n[output truncated at 20 bytes]")
    assert "[truncated lines: 1]" in text


@pytest.mark.asyncio
async def test_read_invalid_utf8_is_replaced_and_bom_kept(read_tools: FileTools) -> None:
    (read_tools.root / "bin.txt").write_bytes(b"\xef\xbb\xbfok\xff\n")
    text = await read_tools.text("read", file_path="bin.txt")
    assert text.startswith("    1  \ufeffok\ufffd\n")
    assert sha("\ufeffok\ufffd\n") in text


@pytest.mark.asyncio
async def test_read_input_validation(read_tools: FileTools) -> None:
    with pytest.raises(ToolInputError, match="offset"):
        await read_tools.run("read", file_path="f", offset=-1)
    with pytest.raises(ToolInputError, match="limit"):
        await read_tools.run("read", file_path="f", limit=0)
    with pytest.raises(ToolInputError, match='Unrecognized key: "path"'):
        await read_tools.run("read", file_path="f", path="x")


@pytest.mark.asyncio
async def test_read_line_pages_graphemes(read_tools: FileTools) -> None:
    content = "A" * 25000 + "\nsecond\n"
    (read_tools.root / "wide.txt").write_text(content)
    footer = f"\n\n[read_metadata] content_sha256={sha(content)}"
    text = await read_tools.text("read_line", file_path="wide.txt", line_number=1)
    assert text == (
        "line_number=1 line_length=25000 char_range=0..9999\n"
        + "A" * 10000
        + "\n\nUse char_offset=10000 to continue.\n"
        + 'read_line({"file_path":"wide.txt","line_number":1,"char_offset":10000,'
        + '"char_limit":10000})'
        + footer
    )
    text = await read_tools.text(
        "read_line", file_path="wide.txt", line_number=1, char_offset=20000
    )
    assert text == "line_number=1 line_length=25000 char_range=20000..24999\n" + "A" * 5000 + footer


@pytest.mark.asyncio
async def test_read_line_counts_grapheme_clusters(read_tools: FileTools) -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    content = f"e\u0301{family}xyz"
    (read_tools.root / "g.txt").write_text(content)
    text = await read_tools.text("read_line", file_path="g.txt", line_number=1, char_limit=2)
    assert text.startswith(f"line_number=1 line_length=5 char_range=0..1\ne\u0301{family}\n\n")
    assert "Use char_offset=2 to continue." in text


@pytest.mark.asyncio
async def test_read_line_error_texts(read_tools: FileTools) -> None:
    (read_tools.root / "f.txt").write_text("one\ntwo")
    (read_tools.root / "d").mkdir()
    assert await read_tools.text("read_line", file_path="f.txt", line_number=3) == (
        "Line number out of range: 3 (total 2)"
    )
    assert await read_tools.text("read_line", file_path="f.txt", line_number=1, char_offset=4) == (
        "char_offset out of range: 4 (line length 3)"
    )
    text = await read_tools.text("read_line", file_path="f.txt", line_number=1, char_offset=3)
    assert text.startswith("line_number=1 line_length=3 char_range=3..2\n\n\n[read_metadata]")
    assert await read_tools.text("read_line", file_path="nope", line_number=1) == (
        "File not found: nope"
    )
    assert await read_tools.text("read_line", file_path="d", line_number=1) == (
        "Path is a directory: d"
    )
    with pytest.raises(ToolInputError, match="char_limit"):
        await read_tools.run("read_line", file_path="f.txt", line_number=1, char_limit=100001)
    with pytest.raises(ToolInputError, match="line_number"):
        await read_tools.run("read_line", file_path="f.txt", line_number=0)


@pytest.mark.asyncio
async def test_read_attaches_a_pdf_as_a_document(read_tools: FileTools) -> None:
    import base64

    from jupyter_codelia.standard_tools.files import MAX_PDF_BYTES

    pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n"
    (read_tools.root / "paper.PDF").write_bytes(pdf)
    result = await read_tools.run("read", file_path="paper.PDF")
    assert result.type == "parts"
    note, document = result.parts
    assert note.text == f"paper.PDF ({len(pdf)} bytes) is attached as a PDF document."
    assert document.type == "document"
    assert base64.b64decode(document.source.data) == pdf
    # A file named .pdf that is no PDF is read as text; a huge one is refused with a way out.
    (read_tools.root / "notes.pdf").write_text("just text\n")
    assert (await read_tools.text("read", file_path="notes.pdf")).startswith("    1  just text")
    with (read_tools.root / "big.pdf").open("wb") as handle:
        handle.write(b"%PDF-1.7\n")
        handle.truncate(MAX_PDF_BYTES + 1)
    refused = await read_tools.text("read", file_path="big.pdf")
    assert refused == (
        f"big.pdf is a {MAX_PDF_BYTES + 1:,}-byte PDF, over the {MAX_PDF_BYTES:,}-byte limit for "
        "attaching it. Extract the pages you need to a smaller PDF or to text first "
        "(e.g. with pypdf in the python tool)."
    )
