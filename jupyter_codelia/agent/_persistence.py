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
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._redact import redact_secrets

if TYPE_CHECKING:
    from ..session import RunLog, SessionState, SessionStore

log = logging.getLogger("jupyter_codelia.agent")

FORKED_FROM_META_KEY = "codelia_forked_from"


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
    """Queues one agent's session writes; forks the session instead of overwriting another
    process's save.

    ``generation`` is the snapshot generation this agent last loaded or saved. A save that finds
    another one on disk (another kernel resumed the same session and saved meanwhile) is written
    under a new session id instead, with ``forked_from`` in its meta, so neither kernel's turns
    are lost; :meth:`take_fork` tells the agent, which then continues under the new id.
    """

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.generation = 0
        self._codec = MessageCodec()
        self._executor: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None
        # Written by the worker thread (a fork found on save), read by the agent's loop.
        self._fork_lock = threading.Lock()
        self._renamed: dict[str, str] = {}
        self._forks: list[tuple[str, str]] = []

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
            from ..session import SessionConflictError

            encoded = self._codec.encode(frozen)
            target = self._renamed_state(state)
            try:
                self.generation = self.store.save_state(
                    target, encoded_messages=encoded, expected_generation=self.generation
                )
            except SessionConflictError:
                self._fork(target.session_id)
                self.generation = self.store.save_state(
                    self._renamed_state(state), encoded_messages=encoded, expected_generation=0
                )

        self._submit(save, f"save session {state.session_id}")

    def fork_if_saved_elsewhere(self, session_id: str) -> None:
        """Fork now when another process saved ``session_id`` since this agent did (call after
        :meth:`flush_sync`/:meth:`flush`, so no save of ours is in flight)."""
        with self._fork_lock:
            current = self._renamed.get(session_id, session_id)
        if self.store.generation_on_disk(current) != self.generation:
            self._fork(current)

    def take_fork(self) -> tuple[str, str] | None:
        """``(old id, new id)`` of the latest fork not yet reported, else None."""
        with self._fork_lock:
            if not self._forks:
                return None
            first = self._forks[0][0]
            latest = self._forks[-1][1]
            self._forks.clear()
            return first, latest

    def _fork(self, session_id: str) -> None:
        new_id = self.store.new_session_id()
        with self._fork_lock:
            for old, renamed in list(self._renamed.items()):
                if renamed == session_id:
                    self._renamed[old] = new_id
            self._renamed[session_id] = new_id
            self.generation = 0
            self._forks.append((session_id, new_id))
        log.warning(
            "session %s was saved by another process meanwhile; this agent continues as %s",
            session_id,
            new_id,
        )

    def _renamed_state(self, state: SessionState) -> SessionState:
        with self._fork_lock:
            new_id = self._renamed.get(state.session_id)
        if new_id is None:
            return state
        meta = {**state.meta, FORKED_FROM_META_KEY: state.session_id}
        return state.model_copy(update={"session_id": new_id, "meta": meta})

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
