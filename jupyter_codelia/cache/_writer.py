"""The streaming writer: one entry written chunk by chunk, committed atomically on close.

An entry never grows past the store's per-entry limit: past it, the writer stops writing to
disk, keeps a window of the newest bytes in memory, and on close writes that tail after a note
saying how many bytes were dropped from the middle. A command that prints until its timeout
therefore cannot fill the disk, and its end (usually the error) is still there to read.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._private import open_private
from ..llm.messages import ContentPart, ToolOutputRef
from ._errors import WriterClosedError
from ._index import LineIndexBuilder

if TYPE_CHECKING:
    from ._store import ToolOutputCacheStore

_PIECE_CHARS = 1 << 20  # encode big strings piecewise so a write never doubles their memory
#: The most bytes of a stream's end kept in memory once it passes the per-entry limit.
MAX_TAIL_WINDOW = 4 << 20


def dropped_note(dropped: int, limit: int, head: int, tail: int) -> str:
    return (
        f"\n[... {dropped} bytes dropped from the middle: this output passed the cache's "
        f"per-entry limit of {limit} bytes; its first {head} and last {tail} bytes are kept ...]\n"
    )


class StreamingOutputWriter:
    """Writes one entry chunk by chunk; nothing is visible to readers until :meth:`close`.

    Memory use is bounded by the largest chunk, about 200 KB of index state and the tail window
    (at most 4 MiB, once past the per-entry limit), whatever the total size. Use as a context
    manager to abort on error.
    """

    def __init__(
        self,
        store: ToolOutputCacheStore,
        *,
        ref_id: str,
        tool_call_id: str,
        tool_name: str,
        is_error: bool = False,
        parts: list[ContentPart] | None = None,
        streamed: bool = True,
    ) -> None:
        self._store = store
        self._ref_id = ref_id
        self._tool_call_id = tool_call_id
        self._tool_name = tool_name
        self._is_error = is_error
        self._parts = parts
        self._streamed = streamed
        self._lock = threading.Lock()
        self._closed = False
        self._tmp_text = store._temp_path("txt")
        fd = open_private(
            self._tmp_text, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        )
        self._file = os.fdopen(fd, "wb", buffering=1 << 20)
        self._index = LineIndexBuilder(stride=store.index_stride)
        self._limit = store.max_entry_bytes
        self._tail_window = min(self._limit // 2, MAX_TAIL_WINDOW)
        self._head_room = self._limit - self._tail_window
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self._overflowed = False
        self._dropped = 0
        # A writer dropped without close() or abort() must not leave its temp file behind.
        self._finalizer = weakref.finalize(
            self, discard, self._file, self._tmp_text, store.reservation(ref_id)
        )

    @property
    def ref_id(self) -> str:
        return self._ref_id

    @property
    def bytes_written(self) -> int:
        return self._index.total_bytes

    @property
    def dropped_bytes(self) -> int:
        """Bytes dropped from the middle so far because the entry passed its size limit."""
        return self._dropped

    def write(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(
                f"OutputWriter.write() takes str, got {type(text).__name__}; decode bytes first"
            )
        with self._lock:
            self._check_open()
            for start in range(0, len(text), _PIECE_CHARS):
                data = text[start : start + _PIECE_CHARS].encode("utf-8", errors="surrogatepass")
                if not self._overflowed:
                    data = self._write_head(data)
                if data:
                    self._keep_tail(data)

    def _write_head(self, data: bytes) -> bytes:
        """Write what fits under the head room; return the rest (which overflows)."""
        room = self._head_room - self._index.total_bytes
        if len(data) <= room:
            self._append(data)
            return b""
        cut = _char_start(data, max(room, 0))
        self._append(data[:cut])
        self._overflowed = True
        return data[cut:]

    def _keep_tail(self, data: bytes) -> None:
        self._tail.append(data)
        self._tail_bytes += len(data)
        excess = self._tail_bytes - self._tail_window
        while excess > 0:
            first = self._tail[0]
            drop = min(len(first), excess)
            if drop == len(first):
                self._tail.popleft()
            else:
                self._tail[0] = first[drop:]
            self._tail_bytes -= drop
            self._dropped += drop
            excess -= drop

    def _finish_tail(self) -> None:
        if not self._tail:
            return
        tail = b"".join(self._tail)
        self._tail.clear()
        if self._dropped:
            start = _char_start(tail, 0, forward=True)
            self._dropped += start
            tail = tail[start:]
            head = self._index.total_bytes
            note = dropped_note(self._dropped, self._limit, head, len(tail))
            self._append(note.encode("utf-8"))
        self._append(tail)

    def _append(self, data: bytes) -> None:
        self._file.write(data)
        self._index.feed(data)

    def close(self) -> ToolOutputRef:
        with self._lock:
            self._check_open()
            self._closed = True
            self._finalizer.detach()
            try:
                self._finish_tail()
                self._file.close()
                return self._store._commit(
                    ref_id=self._ref_id,
                    tool_call_id=self._tool_call_id,
                    tool_name=self._tool_name,
                    is_error=self._is_error,
                    tmp_text=self._tmp_text,
                    index=self._index,
                    parts=self._parts,
                    streamed=self._streamed,
                    dropped_bytes=self._dropped,
                )
            except BaseException:
                unlink(self._tmp_text)
                unlink(self._store.reservation(self._ref_id))
                raise

    def abort(self) -> None:
        """Discard everything written; the store is left as it was. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            discard(self._file, self._tmp_text, self._store.reservation(self._ref_id))

    def _check_open(self) -> None:
        if self._closed:
            raise WriterClosedError(
                f"The output writer for {self._ref_id} is already closed; "
                "open a new one with store.writer(...)."
            )

    def __enter__(self) -> StreamingOutputWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._closed:
            self.close()


def _char_start(data: bytes, index: int, *, forward: bool = False) -> int:
    """``index`` moved off UTF-8 continuation bytes (back, or ``forward``), so a cut there
    splits no character."""
    if forward:
        while index < len(data) and data[index] & 0xC0 == 0x80:
            index += 1
    else:
        while 0 < index < len(data) and data[index] & 0xC0 == 0x80:
            index -= 1
    return index


def discard(file: Any, *paths: Path) -> None:
    file.close()
    for path in paths:
        unlink(path)


def unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
