"""Session I/O for one agent, off the event loop.

Run-log records and snapshot saves are queued, in order, to one worker thread, so a turn never
waits for the disk and a kernel's event loop never blocks on it. Redaction and JSON encoding
happen on that thread too. ``flush()`` waits for everything queued so far; the worker is joined
at interpreter exit, so nothing queued is lost when a script ends right after a run.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._redact import redact_secrets

if TYPE_CHECKING:
    from ..session import RunLog, SessionState, SessionStore

log = logging.getLogger("jupyter_codelia.agent")


@dataclass
class RunLogHandle:
    """The run log of one run; ``log`` is set by the worker once the file exists."""

    log: RunLog | None = None


class MessageCodec:
    """Each history message's redacted compact JSON, computed once per message object.

    Messages are immutable once in history (trimming replaces them with copies), so a snapshot
    costs a lookup per message plus the encoding of the new ones. Used by the worker only.
    """

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Any, str]] = {}

    def encode(self, messages: Sequence[Any]) -> list[str]:
        cache, fresh, out = self._cache, {}, []
        for message in messages:
            hit = cache.get(id(message))
            if hit is None or hit[0] is not message:
                # ASCII escapes keep lone surrogates (undecodable tool output) valid JSON.
                hit = (message, json.dumps(redact_secrets(message.dump()), separators=(",", ":")))
            fresh[id(message)] = hit
            out.append(hit[1])
        self._cache = fresh
        return out


class SessionWriter:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._codec = MessageCodec()
        self._executor: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None

    def open_run(self, *, run_id: str, session_id: str, header: dict[str, Any]) -> RunLogHandle:
        handle = RunLogHandle()

        def open_log() -> None:
            handle.log = self.store.open_run_log(
                run_id=run_id, session_id=session_id, header=header
            )

        self._submit(open_log, "open the run log")
        return handle

    def record(self, handle: RunLogHandle, record_type: str, fields: dict[str, Any]) -> None:
        def append() -> None:
            if handle.log is not None:
                handle.log.append(record_type, **fields)

        self._submit(append, f"append {record_type} to the run log")

    def close_run(self, handle: RunLogHandle) -> None:
        def close() -> None:
            if handle.log is not None:
                handle.log.close()

        self._submit(close, "close the run log")

    def save(self, state: SessionState, messages: Sequence[Any]) -> None:
        """Save ``state`` with ``messages`` (history message objects, encoded on the worker)."""
        frozen = list(messages)

        def save() -> None:
            self.store.save_state(state, encoded_messages=self._codec.encode(frozen))

        self._submit(save, f"save session {state.session_id}")

    async def flush(self) -> None:
        """Wait until everything queued so far is on disk."""
        if self._last is not None:
            await asyncio.wrap_future(self._last)

    def flush_sync(self, timeout: float | None = None) -> None:
        if self._last is not None:
            self._last.result(timeout)

    def _submit(self, work: Callable[[], None], what: str) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="codelia-session")

        def guarded() -> None:
            try:
                work()
            except Exception:
                log.exception("could not %s", what)

        self._last = self._executor.submit(guarded)
