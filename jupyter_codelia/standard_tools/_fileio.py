"""Text file IO, the content-hash guard and sandbox lookup shared by the local file tools.

All IO goes through :class:`~._fdpath.Entry` handles (a held directory fd plus a name), never
through a path string after its check. Files are UTF-8 with no newline translation; a file that
is not valid UTF-8 is never rewritten (:class:`NotUtf8Error`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from .._text import describe_exc
from ..errors import CodeliaError
from ..tools import DependencyKey, ToolContext
from ._fdpath import Entry, Walker
from ._sandbox import Sandbox, SecurityError

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

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


class NotUtf8Error(CodeliaError, ValueError):
    """A file that a tool would rewrite is not valid UTF-8; ``offset`` is its first bad byte."""

    def __init__(self, shown: str, offset: int) -> None:
        self.offset = offset
        super().__init__(
            f"{shown} is not valid UTF-8 (first invalid byte at offset {offset}): refusing to "
            "rewrite it, which would replace its undecodable bytes with U+FFFD. Change it with "
            "a tool that knows its encoding (for example the shell)."
        )


def string_arg(args: dict[str, Any], key: str) -> str:
    """A call's string argument as the approval card names it ("" when absent or no string)."""
    value = args.get(key)
    return value if isinstance(value, str) else ""


def path_arg(args: dict[str, Any]) -> str:
    """The ``file_path`` a call names, as its approval card shows it."""
    return string_arg(args, "file_path").strip() or "(unknown path)"


def read_utf8(entry: Entry) -> str:
    """The file as UTF-8 for a tool that rewrites it; raises :class:`NotUtf8Error` otherwise.

    Decoding with replacement characters and writing the result back would silently destroy
    every byte that is not UTF-8, so such a file is refused instead. Newlines and a BOM are
    kept as they are.
    """
    data = entry.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8Error(entry.shown, exc.start) from None


def write_text(entry: Entry, text: str) -> None:
    """Replace the file at ``entry`` with ``text`` (UTF-8, no newline translation), atomically.

    The text goes to a temp file created in the target's directory (through its fd), which then
    replaces the target by rename: a reader - or a crash - never sees half a file, an existing
    file keeps its permission bits, and other hard links of the old file keep the old content
    (only this name is replaced).
    """
    info = entry.lstat()
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", entry.shown)
    mode = stat.S_IMODE(info.st_mode) if info is not None else None
    temp = temp_name(entry.name, secrets.token_hex(4), "tmp")
    fd = os.open(temp, _NEW_FILE, 0o666, dir_fd=entry.dir_fd)  # umask applies
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", errors="surrogatepass"))
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(temp, entry.name, src_dir_fd=entry.dir_fd, dst_dir_fd=entry.dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=entry.dir_fd)
        raise


def temp_name(name: str, token: str, kind: str) -> str:
    """The name of a temp or backup file beside ``name`` (hidden, marked as ours)."""
    return f".{name}.codelia-{token}.{kind}"


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


def locate(
    walker: Walker, path: Path, shown: str, *, follow: bool = True, create_parents: bool = False
) -> Entry:
    """``walker.locate`` with a refusal worded like :func:`resolve_in_sandbox`'s."""
    try:
        return walker.locate(path, shown, follow=follow, create_parents=create_parents)
    except SecurityError as exc:
        raise SandboxPathError(f"Security error: {describe_exc(exc)}") from None


def is_crlf_text(text: str | bytes) -> bool:
    """True when ``text`` (or its UTF-8 bytes) has line breaks and every one of them is
    ``\\r\\n``."""
    if isinstance(text, bytes):
        crlf, lf = text.count(b"\r\n"), text.count(b"\n")
    else:
        crlf, lf = text.count("\r\n"), text.count("\n")
    return crlf > 0 and crlf == lf
