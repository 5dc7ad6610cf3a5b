"""Text file IO, the content-hash guard and sandbox lookup shared by the local file tools.

Files are read as UTF-8 with ``errors="replace"`` and no newline translation. The hash guard
refuses an edit of a file that changed since the model last read it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field

from .._text import describe_exc
from ..errors import CodeliaError
from ..tools import DependencyKey, ToolContext
from ._sandbox import Sandbox

HASH_MESSAGE = "expected_hash must be a lowercase 64-character SHA-256 hash"
_HEX = frozenset("0123456789abcdef")


def _check_hash(value: str) -> str:
    if len(value) != 64 or not set(value) <= _HEX:
        raise ValueError(HASH_MESSAGE)
    return value


ExpectedHash = Annotated[
    str | None,
    AfterValidator(lambda v: None if v is None else _check_hash(v)),
    Field(
        default=None,
        description=(
            "Current full-content SHA-256 from read/read_line metadata ([read_metadata] "
            "content_sha256=...); the call fails if the file changed since. Omit when unavailable."
        ),
        json_schema_extra={"pattern": "^[a-f0-9]{64}$"},
    ),
]


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 with replacement characters, newlines untouched, BOM kept."""
    with open(path, "rb") as handle:  # one decode of the whole file: faster than a text stream
        return handle.read().decode("utf-8", errors="replace")


def write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 without newline translation, creating parent directories.

    The write is atomic: the text goes to a temp file beside the target, which then replaces it
    (a reader - or a crash - never sees half a file). A symlink is written through, and an
    existing file keeps its permission bits.
    """
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    temp = target.parent / f".{target.name}.codelia-{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", errors="surrogatepass"))
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def content_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def metadata_footer(text: str) -> str:
    return f"\n\n[read_metadata] content_sha256={content_sha256(text)}"


def check_expected_hash(
    file_path: str, expected: str | None, *, exists: bool, content: str
) -> None:
    """Raise ``ValueError`` with the model-facing text when the guard fails (no-op without one)."""
    if expected is None:
        return
    if not exists:
        raise ValueError(f"Expected hash provided but file not found: {file_path}")
    if content_sha256(content) != expected:
        raise ValueError(
            f"Hash mismatch for {file_path}. The file changed since it was read; read it again "
            "and retry with the new content_sha256."
        )


class SandboxPathError(CodeliaError):
    """A sandbox lookup or path check failed; the message is ``Security error: <describe_exc>``."""


async def resolve_in_sandbox(
    ctx: ToolContext, key: DependencyKey[Sandbox], target: str
) -> tuple[Sandbox, Path]:
    """Resolve the sandbox through ``key`` and ``target`` inside it."""
    try:
        sandbox = await ctx.resolve(key)
        return sandbox, sandbox.resolve(target)
    except Exception as exc:
        raise SandboxPathError(f"Security error: {describe_exc(exc)}") from None


def is_crlf_text(text: str) -> bool:
    """True when ``text`` has line breaks and every one of them is ``\\r\\n``."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf == text.count("\n")
