"""The path sandbox of the local file tools.

A :class:`Sandbox` owns one root directory; :meth:`Sandbox.resolve` turns a model-supplied path
into an absolute path and refuses anything that would leave the root: ``..``, absolute paths
elsewhere, ``~`` (expanded like a shell would, then checked), symlinks whose target is outside
(symlinks ARE resolved for the check, unlike the reference's lexical-only rule), NUL bytes and
over-long paths. ``full-access`` mode lifts the guard. It is a logical guard, not OS isolation.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from .._approval import APPROVAL_MODES, ApprovalMode
from ..errors import CodeliaError
from ..tools import DependencyKey

# Linux PATH_MAX and NAME_MAX: longer paths cannot be opened anyway, and refusing them early
# gives the model a readable reason instead of an OSError.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
_SHOWN_TARGET_CHARS = 200


class SecurityError(CodeliaError):
    """A path was refused by the sandbox; the message starts with ``Path escapes sandbox:``."""


def _shown(target: str) -> str:
    """The target as shown in an error: control characters escaped, very long ones clipped."""
    text = target if target.isprintable() else repr(target)[1:-1]
    if len(text) > _SHOWN_TARGET_CHARS:
        text = f"{text[:_SHOWN_TARGET_CHARS]}...({len(target)} chars)"
    return text


def _is_inside(path: str, root: str) -> bool:
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


class Sandbox:
    """A directory the file tools may touch; relative paths resolve against ``working_dir``.

    ``root`` is created when missing. ``working_dir`` (default: the root) must itself be inside
    the sandbox. ``session_id`` is a random 8-hex-digit id (fallback scope for todos).
    """

    __slots__ = ("_real_root", "approval_mode", "root_dir", "session_id", "working_dir")

    def __init__(
        self,
        root: Path | str,
        *,
        approval_mode: ApprovalMode = "minimal",
        working_dir: Path | str | None = None,
    ) -> None:
        if approval_mode not in APPROVAL_MODES:
            raise ValueError(
                "approval_mode must be 'minimal', 'trusted' or 'full-access', "
                f"got {approval_mode!r}"
            )
        root_path = Path(os.path.normpath(os.path.abspath(os.path.expanduser(os.fspath(root)))))
        root_path.mkdir(parents=True, exist_ok=True)
        self.root_dir: Path = root_path
        self._real_root = os.path.realpath(root_path)
        self.approval_mode: ApprovalMode = approval_mode
        self.session_id: str = secrets.token_hex(4)
        self.working_dir: Path = root_path
        if working_dir is not None:
            self.working_dir = self.resolve(os.fspath(working_dir))

    def __repr__(self) -> str:
        return f"Sandbox(root={str(self.root_dir)!r}, approval_mode={self.approval_mode!r})"

    @property
    def root(self) -> Path:
        """Alias of ``root_dir``."""
        return self.root_dir

    @property
    def full_access(self) -> bool:
        return self.approval_mode == "full-access"

    def resolve(self, target: str) -> Path:
        """The absolute path for ``target``; raises :class:`SecurityError` when it escapes.

        The returned path is normalized but keeps symlinks in place (so deleting a link deletes
        the link); the escape check follows them.
        """
        if not isinstance(target, str):
            raise SecurityError(
                f"Path escapes sandbox: {target!r} -> a path must be a string, "
                f"got {type(target).__name__}"
            )
        if "\x00" in target:
            raise SecurityError(
                f"Path escapes sandbox: {_shown(target)} -> refused: the path contains a NUL byte"
            )
        encoded = target.encode("utf-8", errors="surrogatepass")
        if len(encoded) > MAX_PATH_BYTES:
            raise SecurityError(
                f"Path escapes sandbox: {_shown(target)} -> refused: the path is "
                f"{len(encoded)} bytes long (limit {MAX_PATH_BYTES})"
            )
        for name in target.split("/"):
            name_bytes = len(name.encode("utf-8", errors="surrogatepass"))
            if name_bytes > MAX_NAME_BYTES:
                raise SecurityError(
                    f"Path escapes sandbox: {_shown(target)} -> refused: a path component is "
                    f"{name_bytes} bytes long (limit {MAX_NAME_BYTES})"
                )
        expanded = os.path.expanduser(target) if target.startswith("~") else target
        joined = expanded if os.path.isabs(expanded) else os.path.join(self.working_dir, expanded)
        lexical = os.path.normpath(joined)
        if lexical.startswith("//"):  # POSIX keeps a leading '//' in normpath
            lexical = "/" + lexical.lstrip("/")
        if self.full_access:
            return Path(lexical)
        # The root itself may be reached through a symlink (``/tmp`` on macOS): a path spelled
        # with the real root is inside too.
        if not (_is_inside(lexical, str(self.root_dir)) or _is_inside(lexical, self._real_root)):
            raise SecurityError(f"Path escapes sandbox: {_shown(target)} -> {lexical}")
        real = os.path.realpath(lexical)
        if not _is_inside(real, self._real_root):
            raise SecurityError(
                f"Path escapes sandbox: {_shown(target)} -> {real} (through a symlink)"
            )
        return Path(lexical)

    def display(self, path: Path | str) -> str:
        """``path`` as the tools show it: relative to the working directory when it is inside
        the sandbox (so it can be passed back to ``read``), else absolute."""
        text = os.fspath(path)
        if _is_inside(text, str(self.root_dir)):
            return os.path.relpath(text, self.working_dir)
        return text


def _default_sandbox() -> Sandbox:
    return Sandbox(Path.cwd())


SANDBOX_KEY: DependencyKey[Sandbox] = DependencyKey("sandbox-context", _default_sandbox)


def sandbox_key(sandbox: Sandbox) -> DependencyKey[Sandbox]:
    """A key with the id of :data:`SANDBOX_KEY` whose default is ``sandbox``.

    Tools resolve the sandbox through this key, so a ``ToolContext(overrides={"sandbox-context":
    ...})`` still replaces it.
    """
    return DependencyKey(SANDBOX_KEY.id, lambda: sandbox)
