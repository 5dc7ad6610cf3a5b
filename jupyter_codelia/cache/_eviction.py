"""Bounded disk: size accounting and least-recently-used eviction of whole entries.

A small shared file (``.usage``: total bytes and commits since the last scan) lets most commits
skip the directory scan; a scan runs when the total passes the cap (then evicts the least
recently used entries, by the mtime of their metadata, down to 90% of the cap) and every
``RESCAN_EVERY`` commits to correct drift. Evicted refs leave a ``<ref>.evicted`` note so a later
read can say what happened. Every function here runs under the store lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from pydantic import ValidationError

from .._private import write_private
from ._entry import EntryMeta, data_path
from ._writer import unlink

logger = logging.getLogger("jupyter_codelia.cache")

TOMBSTONE = ".evicted"
MAX_TOMBSTONES = 10_000
USAGE = ".usage"  # "<total bytes> <commits since the last full scan>"
RESCAN_EVERY = 200
EVICT_TO_RATIO = 0.9
STALE_TEMP_SECONDS = 24 * 3600


def previous_version(root: Path, ref_id: str) -> tuple[list[Path], int]:
    """Data files of the version of ``ref_id`` a commit replaces, and the bytes it frees
    (its metadata included: the new metadata file replaces it)."""
    meta_path = root / f"{ref_id}.json"
    try:
        freed = meta_path.stat().st_size
        generation = EntryMeta.model_validate_json(meta_path.read_bytes()).generation
    except (OSError, ValidationError):
        return [], 0  # nothing there, or unreadable: the next full scan cleans up
    paths = []
    for suffix in ("txt", "idx", "parts.json"):
        path = data_path(root, ref_id, generation, suffix)
        with contextlib.suppress(FileNotFoundError):
            freed += path.stat().st_size
            paths.append(path)
    return paths, freed


def account(
    root: Path, max_bytes: int, delta: int, *, keep: str | None, keep_generation: str | None
) -> None:
    """Track the total size in a small shared file so most commits need no directory scan;
    scan (and evict) when the total passes the cap, and every so often to correct drift
    (crashed writers, files removed by hand)."""
    usage_path = root / USAGE
    try:
        total, commits = (int(v) for v in usage_path.read_text().split())
    except (OSError, ValueError):
        total, commits = -1, RESCAN_EVERY
    total += delta
    if total < 0 or total > max_bytes or commits + 1 >= RESCAN_EVERY:
        total = collect(root, max_bytes, keep=keep, keep_generation=keep_generation)
        commits = 0
    else:
        commits += 1
    write_private(usage_path, f"{total} {commits}".encode())


def collect(
    root: Path, max_bytes: int, *, keep: str | None = None, keep_generation: str | None = None
) -> int:
    """Scan the directory, drop stale files, and when over the cap evict least recently used
    entries down to 90% of it (so the next scans are far apart). Returns the new total.

    Runs under the store lock."""
    groups: dict[str, Group] = {}
    tombstones: list[tuple[float, Path]] = []
    now = time.time()
    for item in os.scandir(root):
        name = item.name
        try:
            stat = item.stat()
        except FileNotFoundError:
            continue
        if name.startswith("."):
            if name.startswith(".tmp-") and now - stat.st_mtime > STALE_TEMP_SECONDS:
                unlink(Path(item.path))  # left by a process that died mid-write
            continue
        if name.endswith(TOMBSTONE):
            tombstones.append((stat.st_mtime, Path(item.path)))
            continue
        ref, _, rest = name.partition(".")
        if ref == keep and rest != "json" and not rest.startswith(f"{keep_generation}."):
            unlink(Path(item.path))  # the previous version of the entry just rewritten
            continue
        group = groups.setdefault(ref, Group())
        group.size += stat.st_size
        group.paths.append(Path(item.path))
        if rest == "json":
            group.has_meta = True
            group.used = stat.st_mtime
        elif not group.has_meta:
            group.used = max(group.used, stat.st_mtime)
    if len(tombstones) > MAX_TOMBSTONES:  # keep "was evicted" notes for recent refs only
        for _, path in sorted(tombstones)[: len(tombstones) - MAX_TOMBSTONES]:
            unlink(path)
    total = sum(g.size for g in groups.values())
    if total <= max_bytes:
        return total
    low_water = int(max_bytes * EVICT_TO_RATIO)
    for ref, group in sorted(groups.items(), key=lambda item: item[1].used):
        if total <= low_water:
            break
        if ref == keep:
            continue
        if group.has_meta:
            write_private(root / f"{ref}{TOMBSTONE}", b"")
        group.paths.sort(key=lambda p: not p.name.endswith(".json"))  # metadata first
        for path in group.paths:
            unlink(path)
        total -= group.size
        logger.info("evicted cached output %s (%d bytes)", ref, group.size)
    return total


class Group:
    __slots__ = ("has_meta", "paths", "size", "used")

    def __init__(self) -> None:
        self.size = 0
        self.used = 0.0
        self.has_meta = False
        self.paths: list[Path] = []
