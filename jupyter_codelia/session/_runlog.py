"""One run's append-only JSONL log.

Owns the writing side of a run log: records are stamped (``type``, ``ts``, ``run_id``),
redacted, written as one line and flushed, in call order, from any thread.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from ._jsonl import encode_json, to_json_ready
from ._models import iso_now

# Keys the log stamps itself; a caller passing them is almost certainly confused.
_STAMPED = ("type", "ts")


class RunLog:
    """Appends records to ``path``; create it with :meth:`SessionStore.open_run_log`."""

    def __init__(
        self,
        path: Path,
        file: BinaryIO,
        *,
        run_id: str,
        session_id: str | None,
        durable: bool = False,
    ) -> None:
        self.path = path
        self.durable = durable
        self.run_id = run_id
        self.session_id = session_id
        self._file: BinaryIO | None = file
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._file is None

    def _write_header(self, record: dict[str, Any]) -> None:
        """Write the ``header`` line (no ``ts``: it has ``started_at``)."""
        with self._lock:
            self._write_locked(to_json_ready(record, what="run log header"))

    def append(self, record_type: str, **fields: Any) -> None:
        """Append one record ``{"type", "ts", "run_id", **fields}`` and flush it."""
        if not isinstance(record_type, str) or not record_type:
            raise ValueError(f"run log record type must be a non-empty string, got {record_type!r}")
        for key in _STAMPED:
            if key in fields:
                raise ValueError(
                    f"run log record field {key!r} is set by the log; remove it from the "
                    f"fields of the {record_type!r} record"
                )
        if "run_id" in fields and fields["run_id"] != self.run_id:
            raise ValueError(
                f"run log record {record_type!r} has run_id {fields['run_id']!r} but this log "
                f"belongs to run {self.run_id!r}"
            )
        with self._lock:
            # Stamped and encoded under the lock, so `ts` never goes backwards in the file.
            record = {"type": record_type, "ts": iso_now(), "run_id": self.run_id, **fields}
            self._write_locked(to_json_ready(record, what=f"run log record {record_type!r}"))

    def _write_locked(self, record: Any) -> None:
        if self._file is None:
            raise ValueError(f"run log is closed: {self.path}")
        self._file.write(encode_json(record) + b"\n")
        self._file.flush()

    def close(self) -> None:
        """Flush (and fsync when durable) and close; closing twice is harmless."""
        with self._lock:
            file, self._file = self._file, None
        if file is None:
            return
        try:
            file.flush()
            if self.durable:
                os.fsync(file.fileno())
        finally:
            file.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<RunLog {self.run_id} {state} {self.path}>"
