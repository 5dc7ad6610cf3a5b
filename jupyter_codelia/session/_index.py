"""The SQLite index that keeps listing sessions and finding their run logs cheap.

Owns ``<sessions>/index.db``: one row per session (the list summary) and one row per run log
(its session and path). The snapshot files and run-log headers stay the source of truth; the
index is derived from them. Each process reconciles the index with the files when it first opens
it (rows added for files it lacks, rows dropped for files that are gone), so a missing, stale or
corrupted index never loses a session: a crash between writing a snapshot and indexing it, a
deleted ``index.db`` or a copied home all heal on the next open.

Why SQLite rather than a summary file per session: ``list_sessions(limit=20)`` over 10,000
sessions is one indexed query instead of 10,000 file reads, SQLite already serializes writers
across processes (two kernels may share the home), and it ships with Python.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from .._private import make_private_dirs, make_private_file, open_private
from ._models import SessionSummary
from ._sharing import shared_between_hosts

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
    session_id TEXT,
    started_at TEXT NOT NULL,
    path TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id, started_at);
"""

# Busy writers in other processes are waited for, not reported.
_BUSY_TIMEOUT_S = 30.0

T = TypeVar("T")

# Indexes this process has reconciled with their files (see SessionIndex._connect).
_reconciled: set[str] = set()


@dataclass(frozen=True)
class RunRow:
    run_id: str
    session_id: str | None
    started_at: str
    path: str  # relative to the sessions directory, "/"-separated


class IndexSource(Protocol):
    """The files the index is derived from (implemented by the store)."""

    def session_ids(self) -> set[str]:
        """Ids of every snapshot on disk."""

    def run_paths(self) -> set[str]:
        """Every run log on disk, relative to the sessions directory."""

    def summaries(self, session_ids: set[str]) -> list[SessionSummary]:
        """Summaries of the readable snapshots among ``session_ids``, oldest save first."""

    def run_rows(self, paths: set[str]) -> list[RunRow]:
        """Rows for the run logs among ``paths`` whose header is readable."""


class SessionIndex:
    """Thread-safe access to the index, reconciled with ``source`` on first use."""

    def __init__(self, path: Path, source: IndexSource) -> None:
        self.path = path
        self._source = source
        self._connection: sqlite3.Connection | None = None
        # (device, inode) of the file the connection has open.
        self._identity: tuple[int, int] | None = None
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
            self._disconnect()

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

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
            self._identity = None

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None and self._identity != _file_identity(self.path):
            # The file was deleted or replaced (a removed home, another process setting a
            # damaged index aside): an open connection would keep using the orphaned copy.
            self._disconnect()
        if self._connection is None:
            make_private_dirs(self.path.parent)
            # SQLite creates the database 0644 and gives its -wal/-shm files the database's
            # mode, so the file is created 0600 first.
            os.close(open_private(self.path, os.O_RDWR | os.O_CREAT))
            db = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            try:
                if shared_between_hosts(self.path.parent):
                    # WAL's shared-memory index cannot span hosts: lock through the
                    # filesystem with the rollback journal (see _sharing).
                    _set_journal_mode(db, "delete")
                    db.execute("PRAGMA synchronous = FULL")
                else:
                    # WAL + NORMAL: a commit needs no fsync, and readers never block the writer.
                    _set_journal_mode(db, "wal")
                    db.execute("PRAGMA synchronous = NORMAL")
                    for suffix in ("-wal", "-shm"):
                        make_private_file(self.path.with_name(self.path.name + suffix))
                version = int(db.execute("PRAGMA user_version").fetchone()[0])
                if version not in (0, _SCHEMA_VERSION):
                    # Another release's layout: the index is derived data, so start it afresh.
                    db.executescript("DROP TABLE IF EXISTS sessions; DROP TABLE IF EXISTS runs;")
                db.executescript(_SCHEMA)
                key = str(self.path.resolve())
                # Once per process and index is enough (stores are often short-lived, e.g. one
                # per server request); a new or replaced index (version 0) is always filled.
                if version != _SCHEMA_VERSION or key not in _reconciled:
                    self._reconcile(db)
                    _reconciled.add(key)
            except BaseException:
                db.close()
                raise
            self._connection = db
            self._identity = _file_identity(self.path)
        return self._connection

    def _reconcile(self, db: sqlite3.Connection) -> None:
        # Under the write lock, other processes cannot index a file between our listing of the
        # files and our reading of the rows; they always write the file before its row, so a
        # row whose file is missing was deleted, never "not yet written".
        db.execute("BEGIN IMMEDIATE")
        try:
            on_disk = self._source.session_ids()
            indexed = {row[0] for row in db.execute("SELECT session_id FROM sessions")}
            for summary in self._source.summaries(on_disk - indexed):
                _replace_session(db, summary)
            db.executemany(
                "DELETE FROM sessions WHERE session_id = ?", [(i,) for i in indexed - on_disk]
            )
            runs_on_disk = self._source.run_paths()
            runs_indexed = {row[0] for row in db.execute("SELECT path FROM runs")}
            for run in self._source.run_rows(runs_on_disk - runs_indexed):
                _replace_run(db, run)
            db.executemany(
                "DELETE FROM runs WHERE path = ?", [(p,) for p in runs_indexed - runs_on_disk]
            )
            db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _set_aside_corrupted(self) -> None:
        self._disconnect()
        for suffix in ("", "-journal", "-wal", "-shm"):
            damaged = self.path.with_name(self.path.name + suffix)
            if damaged.exists():
                damaged.replace(damaged.with_name(damaged.name + ".corrupt"))


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


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


def _set_journal_mode(db: sqlite3.Connection, mode: str) -> None:
    """Switch the journal mode, waiting out another process that is switching it too.

    Changing the mode takes an exclusive lock, and SQLite answers "database is locked" at once,
    without its busy handler, while another connection opens the same new database; so retry
    until the busy timeout is used up.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    while True:
        current = str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        if current == mode:
            return
        try:
            db.execute(f"PRAGMA journal_mode = {mode.upper()}")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
