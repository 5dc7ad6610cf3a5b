"""Whether a store lives on storage shared between hosts, which changes how SQLite may use it.

SQLite's write-ahead log keeps its index in shared memory (``index.db-shm``), which only works
when every process using the database runs on one host. Kernels on several hosts writing one
store over NFS, SMB or a FUSE mount must use the rollback journal instead, which locks through
the filesystem's own (POSIX) locks. This module decides which applies to a directory: the
``JUPYTER_CODELIA_SHARED_STORE`` environment variable (``1``/``0``) when set, else the type of
the filesystem the directory is mounted on (Linux ``/proc/self/mountinfo``).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import CodeliaError

SHARED_STORE_ENV = "JUPYTER_CODELIA_SHARED_STORE"

# Filesystems that several hosts mount at once; "fuse.*" (sshfs, s3fs, gcsfuse, juicefs, ...)
# counts as shared too.
_NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "beegfs",
        "afs",
        "9p",
        "fuse",
        "fuseblk",
    }
)
_MOUNTINFO = Path("/proc/self/mountinfo")


class SharedStoreSettingError(CodeliaError, ValueError):
    """``JUPYTER_CODELIA_SHARED_STORE`` holds something other than a yes/no value."""


def shared_between_hosts(directory: Path, *, mountinfo: Path = _MOUNTINFO) -> bool:
    """Whether processes on other hosts may open the store at ``directory`` too."""
    configured = os.environ.get(SHARED_STORE_ENV, "").strip().lower()
    if configured in ("1", "true", "yes", "on"):
        return True
    if configured in ("0", "false", "no", "off"):
        return False
    if configured:
        raise SharedStoreSettingError(
            f"${SHARED_STORE_ENV} must be 1 (the store is shared between hosts) or 0 (one "
            f"host), got {configured!r}; unset it to detect this from the filesystem type"
        )
    fs_type = filesystem_type(directory, mountinfo=mountinfo)
    return fs_type is not None and (fs_type in _NETWORK_FILESYSTEMS or fs_type.startswith("fuse."))


def filesystem_type(directory: Path, *, mountinfo: Path = _MOUNTINFO) -> str | None:
    """The type of the filesystem holding ``directory`` (None where mounts cannot be read)."""
    try:
        lines = mountinfo.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    # Symlinks resolved as far as the path exists (the home may not be created yet).
    target = str(Path(os.path.abspath(directory)).resolve())
    best: tuple[int, str] | None = None
    for line in lines:
        fields, _, tail = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not tail:
            continue
        mount_point = _unescape(parts[4])
        if _is_within(target, mount_point) and (best is None or len(mount_point) >= best[0]):
            best = (len(mount_point), tail.split()[0])
    return best[1] if best else None


def _is_within(path: str, mount_point: str) -> bool:
    return (
        mount_point == "/" or path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
    )


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal (\040 ...).
    return field.encode("latin-1").decode("unicode_escape") if "\\" in field else field
