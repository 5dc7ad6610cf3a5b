"""The store id: one random id per home directory, so two processes can tell whether they see
the same store.

The side panel reads past sessions from the kernel's store. When the Jupyter server sees that
very store too (same machine, or the same shared volume), it serves them from disk without a
round trip through the kernel. A path cannot decide that (``/home/jovyan/...`` exists on every
host, often on different disks), so the home holds ``store-id``: whoever first needs it creates
it, and everyone who reads the same id reads the same files.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from contextlib import suppress
from pathlib import Path

STORE_ID_FILE = "store-id"

# Sessions hold code, data and conversation: private to the user by default.
_PRIVATE_DIR = 0o700


def read_store_id(home: Path) -> str | None:
    """The id of the store at ``home``, or None if no process has created one there yet."""
    try:
        text = (home / STORE_ID_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None  # damaged: ensure_store_id replaces it


def ensure_store_id(home: Path) -> str:
    """The id of the store at ``home``, created (atomically, once) when missing or damaged.

    The id file appears complete or not at all: it is written to a temp file and hard-linked
    into place, and a link fails when the name exists, also over NFS, so racing kernels on
    several hosts all end up with the first one's id.
    """
    existing = read_store_id(home)
    if existing is not None:
        return existing
    home.mkdir(parents=True, exist_ok=True, mode=_PRIVATE_DIR)
    target = home / STORE_ID_FILE
    if target.exists():
        # Another process may have linked its complete id in since the first read: use it.
        # Only a file that still reads as no id is damaged, and replaced, or every kernel
        # would make its own.
        again = read_store_id(home)
        if again is not None:
            return again
        with suppress(FileNotFoundError):
            target.unlink()
    fd, tmp_name = tempfile.mkstemp(dir=home, prefix=".store-id.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(f"{uuid.uuid4()}\n")
        try:
            os.link(tmp_name, target)
        except FileExistsError:
            pass  # another process won the race; its id is the store's
        except OSError:
            # Filesystems without hard links (some FUSE/SMB mounts): a rename is still atomic,
            # only a simultaneous first start on two hosts could pick two ids (both then
            # converge on the last one written).
            if not target.exists():
                os.replace(tmp_name, target)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(tmp_name)
    created = read_store_id(home)
    if created is None:
        raise OSError(f"cannot create the store id file {target}")
    return created
