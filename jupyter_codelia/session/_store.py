"""The session store: run logs, resume snapshots and their index on disk.

Layout under ``<home>/sessions``::

    YYYY/MM/DD/<run_id>.jsonl   one append-only run log per run (UTC date of started_at)
    state/<session_id>.json     the resume snapshot, replaced atomically on every save
    state/.tmp/                 snapshot temp files; any found under the lock are crash leftovers
    index.db                    SQLite index for listing sessions and finding their runs
    .lock                       cross-process lock serializing snapshot writes

Snapshots and run-log headers are the truth; the index is derived from them and reconciled
with them (see ``_index``). Everything written is redacted first.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from .._private import PRIVATE_FILE, make_private_dirs, open_private, tighten_once
from ._index import RunRow, SessionIndex
from ._jsonl import encode_json, read_jsonl, to_json_ready
from ._models import (
    SCHEMA_VERSION,
    SessionConflictError,
    SessionLoadError,
    SessionNotFound,
    SessionState,
    SessionSummary,
    check_id,
    format_utc,
    iso_now,
    parse_utc,
    summary_of,
)
from ._runlog import RunLog

HOME_ENV = "JUPYTER_CODELIA_HOME"

# Another kernel holds the lock only while it replaces one snapshot; a minute means it is stuck.
_LOCK_TIMEOUT_S = 60.0

# Every field before "messages" is short (ids, timestamps, counters): 4 KiB holds them.
_GENERATION_HEAD_BYTES = 4096
_GENERATION = re.compile(rb'"generation":(\d+)')

# Header keys the store sets itself; a header may repeat them only with the same value.
_HEADER_OWNED = ("type", "schema_version", "run_id", "session_id")


def default_home() -> Path:
    """``$JUPYTER_CODELIA_HOME`` if set, else ``<jupyter data dir>/codelia``."""
    configured = os.environ.get(HOME_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "codelia"


class SessionStore:
    """Run logs and resumable session snapshots under ``home / "sessions"``."""

    def __init__(
        self,
        home: Path | str | None = None,
        *,
        lock_timeout: float = _LOCK_TIMEOUT_S,
        durable: bool = False,
    ) -> None:
        if not isinstance(lock_timeout, (int, float)) or lock_timeout <= 0:
            raise ValueError(
                f"lock_timeout must be a positive number of seconds, got {lock_timeout!r}"
            )
        self.lock_timeout = float(lock_timeout)
        self.durable = durable
        if home is None:
            resolved = default_home()
        elif isinstance(home, (str, os.PathLike)):
            if not os.fspath(home):
                raise ValueError(
                    "SessionStore home must not be empty: pass a directory, or None for "
                    f"${HOME_ENV} / the Jupyter data dir"
                )
            resolved = Path(home).expanduser()
        else:
            raise TypeError(
                f"SessionStore home must be a path, a str or None, got {type(home).__name__}"
            )
        self.home = resolved
        self.sessions_dir = resolved / "sessions"
        self._state_dir = self.sessions_dir / "state"
        self._tmp_dir = self._state_dir / ".tmp"
        self._index = SessionIndex(self.sessions_dir / "index.db", _StoreFiles(self.sessions_dir))

    # --- ids and run logs --------------------------------------------------------------------

    def new_session_id(self) -> str:
        return str(uuid.uuid4())

    def open_run_log(
        self, *, run_id: str, session_id: str | None, header: dict[str, Any]
    ) -> RunLog:
        """Create ``<sessions>/YYYY/MM/DD/<run_id>.jsonl`` and write its ``header`` record."""
        check_id("run id", run_id)
        if session_id is not None:
            check_id("session id", session_id)
        if not isinstance(header, dict):
            raise TypeError(f"run log header must be a dict, got {type(header).__name__}")
        record = self._header_record(run_id, session_id, header)
        ready = to_json_ready(record, what="run log header")  # fail before creating the file
        started_at = record["started_at"]
        moment = parse_utc(started_at)
        relative = f"{moment:%Y/%m/%d}/{run_id}.jsonl"
        path = self.sessions_dir / relative
        self._ensure_dirs()
        make_private_dirs(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_BINARY", 0)
        try:
            fd = open_private(path, flags)
        except FileExistsError:
            raise ValueError(
                f"run log already exists: {path}; every run needs a new run id (uuid4)"
            ) from None
        log = RunLog(
            path,
            os.fdopen(fd, "ab"),
            run_id=run_id,
            session_id=session_id,
            durable=self.durable,
        )
        try:
            log._write_header(ready)
            self._index.add_run(RunRow(run_id, session_id, started_at, relative))
        except BaseException:
            log.close()
            raise
        return log

    def _header_record(
        self, run_id: str, session_id: str | None, header: dict[str, Any]
    ) -> dict[str, Any]:
        owned: dict[str, Any] = {"type": "header", "schema_version": SCHEMA_VERSION}
        owned["run_id"] = run_id
        owned["session_id"] = session_id
        for key in _HEADER_OWNED:
            if key in header and header[key] != owned[key]:
                raise ValueError(
                    f"run log header field {key!r} is {header[key]!r} but the store sets it to "
                    f"{owned[key]!r}; drop it from the header (pass run_id/session_id as "
                    "open_run_log arguments)"
                )
        started_at = header.get("started_at")
        if started_at is None:
            started_at = iso_now()
        elif isinstance(started_at, str):
            started_at = format_utc(parse_utc(started_at))
        else:
            raise ValueError(
                f"run log header started_at must be an ISO-8601 UTC string, got {started_at!r}"
            )
        if session_id is None:
            del owned["session_id"]  # optional in a run log: absent rather than null
        rest = {k: v for k, v in header.items() if k not in _HEADER_OWNED and k != "started_at"}
        return {**owned, "started_at": started_at, **rest}

    # --- snapshots ---------------------------------------------------------------------------

    def save_state(
        self,
        state: SessionState,
        *,
        encoded_messages: Sequence[str] | None = None,
        expected_generation: int | None = None,
    ) -> int:
        """Replace the session's snapshot atomically (temp file, rename), redacted; returns the
        snapshot's new generation (one more than the one it replaced).

        ``encoded_messages`` lets a caller that keeps each message's compact JSON text (already
        redacted) pass those instead of ``state.messages`` (which must then be empty), so saving
        a long conversation costs a join rather than re-serialising every message.
        ``expected_generation`` (0: no snapshot yet) makes the save refuse, with
        :class:`SessionConflictError`, to replace a snapshot another process saved meanwhile.
        """
        if not isinstance(state, SessionState):
            raise TypeError(f"save_state expects a SessionState, got {type(state).__name__}")
        session_id = state.session_id
        self._ensure_dirs()
        make_private_dirs(self._tmp_dir)
        with self._locked():
            on_disk = self.generation_on_disk(session_id)
            if expected_generation is not None and on_disk != expected_generation:
                raise SessionConflictError(session_id, on_disk, expected_generation)
            state = state.model_copy(update={"generation": on_disk + 1})
            if encoded_messages is None:
                data = to_json_ready(state, what=f"session {session_id} state")
                payload = encode_json(data) + b"\n"
                summary = summary_of(data)
            else:
                payload, summary = _encode_with_messages(state, encoded_messages)
            # Every writer holds the lock while its temp file exists, so what is here now was
            # left by a writer that died mid-save.
            for leftover in self._tmp_dir.iterdir():
                with suppress(FileNotFoundError):
                    leftover.unlink()
            _replace_file(
                self._state_path(session_id), payload, tmp_dir=self._tmp_dir, durable=self.durable
            )
            self._index.upsert_session(summary)
        return on_disk + 1

    def generation_on_disk(self, session_id: str) -> int:
        """The generation of the saved snapshot (0 when there is none, or it predates them),
        read from the head of the file only."""
        try:
            with open(self._state_path(session_id), "rb") as file:
                head = file.read(_GENERATION_HEAD_BYTES)
        except FileNotFoundError:
            return 0
        # The field precedes "messages"; nothing after that point may be mistaken for it.
        head = head.split(b'"messages":', 1)[0]
        found = _GENERATION.search(head)
        return int(found.group(1)) if found else 0

    def load_state(self, session_id: str) -> SessionState:
        """The saved snapshot; SessionNotFound if none, SessionLoadError if unreadable."""
        check_id("session id", session_id)
        path = self._state_path(session_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise SessionNotFound(session_id) from None
        except OSError as exc:
            raise SessionLoadError(session_id, f"cannot read {path}: {exc}") from None
        return _parse_state(session_id, path, raw)

    # --- listing and transcripts -------------------------------------------------------------

    def list_sessions(self, limit: int | None = None) -> list[SessionSummary]:
        """Saved sessions, most recently updated first."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0 or None, got {limit}")
        if limit == 0 or not self.sessions_dir.is_dir():
            return []
        tighten_once(self.home)
        return self._index.list_sessions(limit)

    def run_log_paths(self, session_id: str) -> list[Path]:
        """The run logs of a session, oldest first; SessionNotFound for an unknown session."""
        check_id("session id", session_id)
        if not self.sessions_dir.is_dir():
            raise SessionNotFound(session_id)
        tighten_once(self.home)
        paths = [self.sessions_dir / rel for rel in self._index.run_paths(session_id)]
        existing = [path for path in paths if path.is_file()]
        if not existing and not self._state_path(session_id).is_file():
            raise SessionNotFound(session_id)
        return existing

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        """Every record of every run of the session, oldest first; damaged lines skipped."""
        records: list[dict[str, Any]] = []
        for path in self.run_log_paths(session_id):
            try:
                records.extend(r for r in read_jsonl(path) if isinstance(r.get("type"), str))
            except FileNotFoundError:  # deleted since it was listed
                continue
        return records

    def close(self) -> None:
        """Release the index connection (the store reopens it on next use)."""
        self._index.close()

    def __repr__(self) -> str:
        return f"SessionStore({str(self.home)!r})"

    # --- internals ---------------------------------------------------------------------------

    def _state_path(self, session_id: str) -> Path:
        return self._state_dir / f"{session_id}.json"

    def _ensure_dirs(self) -> None:
        if self.home.exists() and not self.home.is_dir():
            raise NotADirectoryError(f"session store home is not a directory: {self.home}")
        make_private_dirs(self._state_dir)
        tighten_once(self.home)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        from filelock import FileLock, Timeout

        lock_path = self.sessions_dir / ".lock"
        try:
            with FileLock(str(lock_path), timeout=self.lock_timeout, mode=PRIVATE_FILE):
                yield
        except Timeout:
            raise TimeoutError(
                f"session store is locked by another process for over {self.lock_timeout:g} s: "
                f"{lock_path}; if no other kernel is saving, delete the lock file"
            ) from None


class _StoreFiles:
    """The snapshot files and run logs, as the index sees them (its ``IndexSource``)."""

    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = sessions_dir
        self.state_dir = sessions_dir / "state"

    def session_ids(self) -> set[str]:
        if not self.state_dir.is_dir():
            return set()
        return {
            entry.name[: -len(".json")]
            for entry in os.scandir(self.state_dir)
            if entry.name.endswith(".json") and entry.is_file()
        }

    def run_paths(self) -> set[str]:
        return {
            path.relative_to(self.sessions_dir).as_posix()
            for path in self.sessions_dir.glob("[0-9]*/[0-9]*/[0-9]*/*.jsonl")
        }

    def summaries(self, session_ids: set[str]) -> list[SessionSummary]:
        found: list[tuple[float, SessionSummary]] = []
        for session_id in session_ids:
            path = self.state_dir / f"{session_id}.json"
            try:
                check_id("session id", session_id)
                mtime = path.stat().st_mtime
                state = _parse_state(session_id, path, path.read_bytes())
            except (OSError, SessionLoadError, ValueError):
                continue  # unreadable snapshots are reported by load_state, not here
            found.append((mtime, summary_of(to_json_ready(state, what="snapshot"))))
        found.sort(key=lambda item: item[0])
        return [summary for _, summary in found]

    def run_rows(self, paths: set[str]) -> list[RunRow]:
        rows: list[RunRow] = []
        for relative in sorted(paths):
            try:
                header = next(read_jsonl(self.sessions_dir / relative), None)
            except OSError:
                continue
            if header is None or header.get("type") != "header":
                continue
            run_id, session_id = header.get("run_id"), header.get("session_id")
            started_at = header.get("started_at")
            if not isinstance(run_id, str) or not isinstance(session_id, (str, type(None))):
                continue
            rows.append(
                RunRow(
                    run_id,
                    session_id,
                    started_at if isinstance(started_at, str) else "",
                    relative,
                )
            )
        return rows


def _parse_state(session_id: str, path: Path, raw: bytes) -> SessionState:
    from pydantic import ValidationError

    damaged = "move the file aside to start this session afresh"
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SessionLoadError(session_id, f"{path} is not valid JSON ({exc}); {damaged}") from None
    if not isinstance(data, dict):
        raise SessionLoadError(
            session_id, f"{path} holds a JSON {type(data).__name__}, not an object; {damaged}"
        )
    version = data.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise SessionLoadError(
            session_id,
            f"{path} was written by a newer jupyter-codelia (schema_version {version}; this "
            f"version reads {SCHEMA_VERSION}); upgrade jupyter-codelia",
        )
    try:
        state = SessionState.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or '(root)'}: {error['msg']}"
            for error in exc.errors()[:3]
        )
        raise SessionLoadError(
            session_id, f"{path} does not match the session format ({problems}); {damaged}"
        ) from None
    if state.session_id != session_id:
        raise SessionLoadError(session_id, f"{path} holds session {state.session_id!r}; {damaged}")
    return state


def _encode_with_messages(
    state: SessionState, encoded_messages: Sequence[str]
) -> tuple[bytes, SessionSummary]:
    if state.messages:
        raise ValueError("pass the messages either in state.messages or as encoded_messages")
    head = to_json_ready(state, what=f"session {state.session_id} state")
    # "messages" precedes every free-form field, so the first empty list key is the top-level one.
    empty, filled = b'"messages":[]', b'"messages":[' + ",".join(encoded_messages).encode() + b"]"
    payload = encode_json(head).replace(empty, filled, 1) + b"\n"
    newest_user = next(
        (json.loads(m) for m in reversed(encoded_messages) if m.startswith('{"role":"user"')), None
    )
    summary = summary_of({**head, "messages": [newest_user] if newest_user else []})
    return payload, summary.model_copy(update={"message_count": len(encoded_messages)})


def _replace_file(path: Path, payload: bytes, *, tmp_dir: Path, durable: bool) -> None:
    """Write ``payload`` to ``path`` so readers see either the old or the new file, never half.

    The rename alone makes the replacement atomic for readers and for a crashed writer;
    ``durable`` adds the fsyncs that also survive a power loss (costly: ~10 ms each here).
    """
    fd, tmp_name = tempfile.mkstemp(dir=tmp_dir, prefix=f"{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(payload)
            file.flush()
            if durable:
                os.fsync(file.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    if durable:
        _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable on POSIX; directories cannot be opened on Windows.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
