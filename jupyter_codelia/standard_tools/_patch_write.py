"""Writing a validated patch all-or-nothing.

New contents go to temp files beside their targets (same filesystem, so renames are atomic);
then, in patch order, replaced and deleted files are renamed aside as backups and the temp files
renamed into place. Every step registers its undo: on any failure the steps are undone in
reverse, so the tree is exactly as before; on success the backups are deleted.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .._text import describe_exc

Action = Literal["add", "delete", "update", "move"]


@dataclass
class Planned:
    """One validated section: the action, its paths as given and resolved, new content, diff."""

    action: Action
    path: str
    source: Path
    target: Path | None = None
    move_to: str | None = None
    content: str | None = None
    diff: str = ""


@dataclass
class _Transaction:
    """Steps done so far, each with its undo; ``rollback`` runs them backwards."""

    undo: list[Callable[[], None]] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    token: str = field(default_factory=lambda: secrets.token_hex(4))

    def sibling(self, path: Path, suffix: str) -> Path:
        return path.parent / f".{path.name}.codelia-{self.token}.{suffix}"

    def make_parents(self, path: Path) -> None:
        missing: list[Path] = []
        parent = path.parent
        while not parent.exists() and not parent.is_symlink():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            directory.mkdir()
            self.undo.append(directory.rmdir)

    def stage(self, target: Path, content: str, mode_from: Path | None) -> Path:
        """Write ``content`` to a temp file beside ``target`` (same filesystem: atomic rename)."""
        self.make_parents(target)
        temp = self.sibling(target, "tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.undo.append(lambda: temp.unlink(missing_ok=True))
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8", errors="surrogatepass"))
        if mode_from is not None:
            os.chmod(temp, stat.S_IMODE(os.stat(mode_from).st_mode))
        return temp

    def set_aside(self, path: Path) -> None:
        """Rename ``path`` to a backup that rollback restores and success deletes."""
        backup = self.sibling(path, "bak")
        os.rename(path, backup)
        self.undo.append(lambda: os.replace(backup, path))
        self.backups.append(backup)

    def place(self, temp: Path, target: Path) -> None:
        if target.exists() or target.is_symlink():
            raise FileExistsError(f"[Errno 17] File exists: '{target}'")
        os.replace(temp, target)
        self.undo.append(lambda: target.unlink(missing_ok=True))

    def rollback(self) -> list[str]:
        problems: list[str] = []
        for step in reversed(self.undo):
            try:
                step()
            except Exception as exc:
                problems.append(describe_exc(exc))
        return problems

    def finish(self) -> None:
        for backup in self.backups:
            try:
                os.unlink(backup)
            except OSError:
                pass


def write_planned(planned: Sequence[Planned]) -> None:
    """Apply the planned changes all-or-nothing; raises ``OSError("Error applying patch: ...")``."""
    txn = _Transaction()
    try:
        staged: list[Path | None] = []
        for item in planned:
            if item.content is None or item.target is None:
                staged.append(None)
                continue
            real_target = (
                Path(os.path.realpath(item.target)) if item.action == "update" else item.target
            )
            mode_from = item.source if item.action in ("update", "move") else None
            staged.append(txn.stage(real_target, item.content, mode_from))
        for item, temp in zip(planned, staged, strict=True):
            if item.action == "delete":
                txn.set_aside(item.source)
            elif item.action == "add":
                assert temp is not None
                assert item.target is not None
                txn.place(temp, item.target)
            elif item.action == "update":
                assert temp is not None
                real = Path(os.path.realpath(item.source))
                txn.set_aside(real)
                os.replace(temp, real)
            else:
                assert temp is not None
                assert item.target is not None
                txn.place(temp, item.target)
                txn.set_aside(item.source)
    except Exception as exc:
        problems = txn.rollback()
        if problems:
            raise OSError(
                f"Error applying patch: {describe_exc(exc)}; rollback was incomplete: "
                + "; ".join(problems)
            ) from None
        raise OSError(f"Error applying patch: {describe_exc(exc)} (no file was changed)") from None
    txn.finish()
