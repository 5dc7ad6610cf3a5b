"""The streaming writer: one entry written chunk by chunk, committed atomically on close."""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
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


class StreamingOutputWriter:
    """Writes one entry chunk by chunk; nothing is visible to readers until :meth:`close`.

    Memory use is bounded by the largest chunk plus about 200 KB of index state, whatever the
    total size. Use as a context manager to abort on error.
    """

    def __init__(
        self,
        store: ToolOutputCacheStore,
        *,
        ref_id: str,
        tool_name: str,
        is_error: bool = False,
        parts: list[ContentPart] | None = None,
        streamed: bool = True,
    ) -> None:
        self._store = store
        self._ref_id = ref_id
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
        # A writer dropped without close() or abort() must not leave its temp file behind.
        self._finalizer = weakref.finalize(self, discard, self._file, self._tmp_text)

    @property
    def ref_id(self) -> str:
        return self._ref_id

    @property
    def bytes_written(self) -> int:
        return self._index.total_bytes

    def write(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(
                f"OutputWriter.write() takes str, got {type(text).__name__}; decode bytes first"
            )
        with self._lock:
            self._check_open()
            for start in range(0, len(text), _PIECE_CHARS):
                data = text[start : start + _PIECE_CHARS].encode("utf-8", errors="surrogatepass")
                self._file.write(data)
                self._index.feed(data)

    def close(self) -> ToolOutputRef:
        with self._lock:
            self._check_open()
            self._closed = True
            self._finalizer.detach()
            try:
                self._file.close()
                return self._store._commit(
                    ref_id=self._ref_id,
                    tool_name=self._tool_name,
                    is_error=self._is_error,
                    tmp_text=self._tmp_text,
                    index=self._index,
                    parts=self._parts,
                    streamed=self._streamed,
                )
            except BaseException:
                unlink(self._tmp_text)
                raise

    def abort(self) -> None:
        """Discard everything written; the store is left as it was. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            discard(self._file, self._tmp_text)

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


def discard(file: Any, path: Path) -> None:
    file.close()
    unlink(path)


def unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
