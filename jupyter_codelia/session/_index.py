"""The SQLite index that keeps listing sessions and finding their run logs cheap.

Owns ``<sessions>/index.db``: one row per session (the list summary) and one row per run log
(its session and path). The snapshot files and run-log headers stay the source of truth; the
index is derived from them, so a missing, half-built or corrupted index is rebuilt from the files
(the store supplies them) instead of losing sessions.

Why SQLite rather than a summary file per session: ``list_sessions(limit=20)`` over 10,000
sessions is one indexed query instead of 10,000 file reads, SQLite already serializes writers
across processes (two kernels may share the home), and it ships with Python.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ._models import SessionSummary

_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    updated_at TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    last_user_message TEXT,
    title TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    started_at TEXT NOT NULL,
    path TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id, started_at);
"""

# Busy writers in other processes are waited for, not reported.
_BUSY_TIMEOUT_S = 30.0

T = TypeVar("T")


@dataclass(frozen=True)
class RunRow:
    run_id: str
    session_id: str
    started_at: str
    path: str  # relative to the sessions directory, "/"-separated


@dataclass(frozen=True)
class IndexContents:
    """Everything the index holds, as recovered from the files."""

    sessions: list[SessionSummary]  # oldest save first
    runs: list[RunRow]


class SessionIndex:
    """Thread-safe access to the index; ``scan`` recovers its contents from the files."""

    def __init__(self, path: Path, scan: Callable[[], IndexContents]) -> None:
        self.path = path
        self._scan = scan
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def upsert_session(self, summary: SessionSummary) -> None:
        def write(db: sqlite3.Connection) -> None:
            _replace_session(db, summary)

        self._run(write)

    def add_run(self, row: RunRow) -> None:
        def write(db: sqlite3.Connection) -> None:
            _replace_run(db, row)

        self._run(write)

    def list_sessions(self, limit: int | None) -> list[SessionSummary]:
        def read(db: sqlite3.Connection) -> list[SessionSummary]:
            # REPLACE gives a re-saved row a new, larger rowid: the tie-break for equal times.
            sql = (
                "SELECT session_id, updated_at, message_count, last_user_message, title "
                "FROM sessions ORDER BY updated_at DESC, rowid DESC"
            )
            rows = db.execute(sql + " LIMIT ?", (limit,)) if limit is not None else db.execute(sql)
            return [
                SessionSummary(
                    session_id=row[0],
                    updated_at=row[1],
                    message_count=row[2],
                    last_user_message=row[3],
                    title=row[4],
                )
                for row in rows
            ]

        return self._run(read)

    def run_paths(self, session_id: str) -> list[str]:
        def read(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT path FROM runs WHERE session_id = ? ORDER BY started_at, rowid",
                (session_id,),
            )
            return [row[0] for row in rows]

        return self._run(read)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # --- internals -------------------------------------------------------------------------

    def _run(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return operation(self._connect())
            except sqlite3.DatabaseError as exc:
                if not _is_corruption(exc):
                    raise
            # The index is only a cache of the files: set the damaged one aside and rebuild.
            self._set_aside_corrupted()
            return operation(self._connect())

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            try:
                db.execute("PRAGMA synchronous = NORMAL")
                db.executescript(_SCHEMA)
                self._ensure_built(db)
            except BaseException:
                db.close()
                raise
            self._connection = db
        return self._connection

    def _ensure_built(self, db: sqlite3.Connection) -> None:
        # user_version is set in the same transaction as the rebuild, so a crash mid-rebuild
        # leaves version 0 and the next process rebuilds again.
        if _user_version(db) >= _SCHEMA_VERSION:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            if _user_version(db) < _SCHEMA_VERSION:  # another process may have just built it
                contents = self._scan()
                for summary in contents.sessions:
                    _replace_session(db, summary)
                for run in contents.runs:
                    _replace_run(db, run)
                db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _set_aside_corrupted(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        for suffix in ("", "-journal", "-wal", "-shm"):
            damaged = self.path.with_name(self.path.name + suffix)
            if damaged.exists():
                damaged.replace(damaged.with_name(damaged.name + ".corrupt"))


def _user_version(db: sqlite3.Connection) -> int:
    row = db.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def _replace_session(db: sqlite3.Connection, summary: SessionSummary) -> None:
    db.execute(
        "INSERT OR REPLACE INTO sessions "
        "(session_id, updated_at, message_count, last_user_message, title) "
        "VALUES (?, ?, ?, ?, ?)",
        (
            summary.session_id,
            summary.updated_at,
            summary.message_count,
            summary.last_user_message,
            summary.title,
        ),
    )


def _replace_run(db: sqlite3.Connection, row: RunRow) -> None:
    db.execute(
        "INSERT OR REPLACE INTO runs (run_id, session_id, started_at, path) VALUES (?, ?, ?, ?)",
        (row.run_id, row.session_id, row.started_at, row.path),
    )


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    # The subclasses (OperationalError: "database is locked", disk full; IntegrityError, ...)
    # are real errors to report. The plain class is "file is not a database" / "database disk
    # image is malformed".
    return type(exc) is sqlite3.DatabaseError
