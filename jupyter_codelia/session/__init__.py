"""Run logs and resumable session snapshots.

``SessionStore`` writes one append-only JSONL log per run and one atomically replaced snapshot
per session under ``$JUPYTER_CODELIA_HOME`` (default ``<jupyter data dir>/codelia``), with every
record redacted of secrets. ``read_jsonl`` reads any of those logs tolerantly.
"""

from ._identity import STORE_ID_FILE, ensure_store_id, read_store_id
from ._jsonl import read_jsonl
from ._models import (
    InvalidSessionIdError,
    SessionConflictError,
    SessionLoadError,
    SessionNotFound,
    SessionState,
    SessionSummary,
)
from ._runlog import RunLog
from ._store import HOME_ENV, SessionStore, default_home

__all__ = [
    "HOME_ENV",
    "STORE_ID_FILE",
    "InvalidSessionIdError",
    "RunLog",
    "SessionConflictError",
    "SessionLoadError",
    "SessionNotFound",
    "SessionState",
    "SessionStore",
    "SessionSummary",
    "default_home",
    "ensure_store_id",
    "read_jsonl",
    "read_store_id",
]
