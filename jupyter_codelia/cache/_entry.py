"""On-disk metadata of one cached output and an open, validated handle on it.

An entry ``<ref>`` is ``<ref>.json`` (metadata, atomically replaced) pointing at one
*generation* of data files ``<ref>.<gen>.txt`` (UTF-8 text projection), ``<ref>.<gen>.idx``
(line index) and, for typed results, ``<ref>.<gen>.parts.json``. A reader therefore never mixes
two versions of an entry that another process is overwriting.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ._index import LineIndex


class EntryMeta(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: int = 1
    ref_id: str
    tool_name: str
    created_at: datetime
    size_bytes: int
    line_count: int
    has_parts: bool = False
    is_error: bool = False
    streamed: bool = False
    has_crlf: bool = False
    generation: str
    # Bytes dropped from the middle because the output passed the per-entry limit.
    dropped_bytes: int = 0
    # The call id the entry was saved for: the ref id differs when another entry had it.
    tool_call_id: str = ""
    # Who wrote it, so the cache browser can put the current kernel's/session's entries first.
    session_id: str | None = None
    kernel_id: str | None = None
    notebook: str | None = None


class CacheEntry(BaseModel):
    """One cached output as the cache browser lists it."""

    model_config = ConfigDict(frozen=True)

    ref_id: str
    tool_name: str
    created_at: datetime
    last_used_at: datetime
    size_bytes: int
    line_count: int
    has_parts: bool
    is_error: bool
    disk_bytes: int
    session_id: str | None = None
    kernel_id: str | None = None
    notebook: str | None = None


@dataclass
class EntryOrigin:
    """Who writes into a store: recorded in every entry it commits."""

    session_id: str | None = None
    kernel_id: str | None = None
    notebook: str | None = None


def data_path(root: Path, ref_id: str, generation: str, suffix: str) -> Path:
    return root / f"{ref_id}.{generation}.{suffix}"


@dataclass
class OpenEntry:
    """A validated entry with its text file open; close it (or use ``with``) when done."""

    ref_id: str
    meta: EntryMeta
    fd: int
    index: LineIndex
    text_path: Path

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OpenEntry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
