"""The output of one background job: masked as it arrives, bounded in memory, kept whole on disk.

A job's writers (a shell job's two pipe readers, a python job's thread and the threads it starts)
call :meth:`JobOutput.write` as often as they like: a write only appends to a buffer, so a
hundred thousand small prints cost what appending them to a list costs. The buffer is masked
and moved into the kept text in batches, when it passes ``_FEED_CHARS`` and whenever someone
reads (a card, ``job_output``, the side panel), so readers always see the latest text.

Masking uses one :class:`StreamRedactor` per stream (stdout, stderr): a secret split across two
writes of one stream is masked whole, even with the other stream's writes in between. What a
redactor holds back at a read is only what could still become a secret
(:meth:`StreamRedactor.release`), so a paused job's last line is visible as it is.

Memory is bounded whatever the job prints: the kept text is at most ``MAX_JOB_OUTPUT_CHARS``
(older text is dropped and counted), the buffer at most ``_FEED_CHARS``, a redactor's held tail
at most a credential's length or ``MAX_TOKEN_RUN``. The whole masked output also streams into an
output-cache entry (``sink``), which the cache caps by keeping its head and tail; the entry is
committed when the job ends, if memory had to drop anything, and dropped otherwise.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from .._redact import StreamRedactor
from .._text import describe_exc
from ..cache.protocol import OutputWriter
from ..errors import CodeliaError

MAX_JOB_OUTPUT_CHARS = 2_000_000
"""Output a job keeps in memory; older text is dropped (and counted) beyond this."""
MAX_JOB_IMAGES = 20
LAST_LINES = 5
LINE_VIEW_CHARS = 300
"""A line longer than this shows only its last characters in a job's last lines."""
_FEED_CHARS = 64 * 1024
# More sources than this (a job starting thread after thread) and those holding nothing go.
_MAX_IDLE_REDACTORS = 8
# A stream of one writer: (stream name, the writing thread's id or its write buffer).
_Source = tuple[str, object]
# Small committed pieces are joined into the last chunk up to this size, so the chunk list
# stays short and a read walks few of them.
_CHUNK_CHARS = 64 * 1024
# tqdm's bar: " 45%|████▌     | 45/100 [00:04<00:05, 9.8it/s]"; the numbers are what matters.
_TQDM = re.compile(r"(\d{1,3})%\|[^|\n\r]*\|\s*(\d+(?:\.\d+)?[kMG]?)/(\d+(?:\.\d+)?[kMG]?)")


@dataclass(frozen=True)
class Progress:
    """The latest tqdm-style progress line of a job's output."""

    percent: int
    done: str
    total: str


class JobOutput:
    """Interleaved, masked output text of one job and its images; thread-safe."""

    def __init__(self, sink: OutputWriter | None = None) -> None:
        self._lock = threading.Lock()
        self._sink = sink
        self._sink_written = False
        self.streams_to_cache = sink is not None
        """Whether the whole output goes to an output-cache entry."""
        self.cache_problem: str | None = None
        """Why the output cache stopped keeping the whole output, if it did."""
        self._chunks: deque[str] = deque()
        self._kept_chars = 0
        self._dropped_chars = 0
        self._pending: list[tuple[_Source, str]] = []
        self._pending_chars = 0
        # One redactor per source, a stream of one writer (a shell job's stdout, a python
        # job's stderr, a thread it started), so a secret split across two writes of one
        # source is masked whole whatever the others wrote in between.
        self._redactors: dict[_Source, StreamRedactor] = {}
        self._buffers: list[_WriteBuffer] = []
        self._images: list[bytes] = []
        self._dropped_images = 0

    # --- writing -------------------------------------------------------------------------

    def write(self, text: str, stream: str = "stdout") -> None:
        """Add ``text`` written to ``stream`` by the calling thread."""
        if not text:
            return
        with self._lock:
            self._take_buffers()  # what the job's thread buffered came first
            self._pending.append(((stream, threading.get_ident()), text))
            self._pending_chars += len(text)
            if self._pending_chars >= _FEED_CHARS:
                self._feed_pending()

    def buffer(self) -> _WriteBuffer:
        """A buffer one writer thread appends its writes to without locking (see
        ``_WriteBuffer``); taken in order at every read."""
        buffer = _WriteBuffer(self)
        with self._lock:
            self._buffers.append(buffer)
        return buffer

    def _absorb(self, buffer: _WriteBuffer, *, retire: bool = False) -> None:
        with self._lock:
            self._take(buffer)
            if retire and buffer in self._buffers:
                self._buffers.remove(buffer)
            if self._pending_chars >= _FEED_CHARS:
                self._feed_pending()

    def _take_buffers(self) -> None:
        for buffer in self._buffers:
            self._take(buffer)

    def _take(self, buffer: _WriteBuffer) -> None:
        """Move what ``buffer`` holds into the pending writes (its writer may append meanwhile:
        only the items counted here are taken)."""
        items = buffer.items
        count = len(items)
        if not count:
            return
        taken = items[:count]
        del items[:count]
        if set(map(type, taken)) == {str}:  # stdout only, the usual case: one join in C
            text = "".join(taken)
            self._pending.append((buffer.stdout, text))
            self._pending_chars += len(text)
            return
        for item in taken:
            source, text = (buffer.stdout, item) if type(item) is str else (buffer.stderr, item[0])
            text = text if type(text) is str else str(text)
            self._pending.append((source, text))
            self._pending_chars += len(text)

    def add_image(self, png: bytes) -> None:
        with self._lock:
            self._images.append(png)
            if len(self._images) > MAX_JOB_IMAGES:
                self._images.pop(0)
                self._dropped_images += 1

    def close(self) -> str | None:
        """Mask and keep everything still held; the full output's cache ref id, if one was
        kept (only when memory dropped part of it). Later writes are still kept in memory."""
        with self._lock:
            self._take_buffers()
            self._feed_pending()
            for redactor in self._redactors.values():
                self._keep(redactor.flush())
            sink, self._sink = self._sink, None
        if sink is None:
            return None
        try:
            if self._dropped_chars and self._sink_written:
                return sink.close().id
            sink.abort()
        except (OSError, CodeliaError) as exc:
            self._lose_sink(sink, exc)
        return None

    def _lose_sink(self, sink: OutputWriter, exc: BaseException) -> None:
        """The cache failed (a full disk): memory keeps the output; say why the rest is gone."""
        self._sink = None
        self.streams_to_cache = False
        self.cache_problem = f"the output cache could not keep it ({describe_exc(exc)})"
        with contextlib.suppress(OSError, CodeliaError):
            sink.abort()

    def _feed_pending(self) -> None:
        """Mask the pending writes in order, one run of writes of the same source at a time."""
        pending, self._pending, self._pending_chars = self._pending, [], 0
        index = 0
        previous: _Source | None = None
        while index < len(pending):
            source = pending[index][0]
            end = index + 1
            while end < len(pending) and pending[end][0] == source:
                end += 1
            if previous is not None and previous != source:
                # Another source's text comes next: show what the last one held that cannot
                # be the start of a secret, so the order stays as written.
                self._keep(self._redactors[previous].release())
            piece = (
                pending[index][1]
                if end == index + 1
                else "".join(text for _source, text in pending[index:end])
            )
            redactor = self._redactors.get(source)
            if redactor is None:
                redactor = self._redactors[source] = StreamRedactor()
            self._keep(redactor.feed(piece))
            previous, index = source, end

    def _settle(self) -> None:
        """Bring the kept text up to date for a reader."""
        self._take_buffers()
        self._feed_pending()
        for redactor in self._redactors.values():
            self._keep(redactor.release())
        if len(self._redactors) > _MAX_IDLE_REDACTORS:
            # A job that starts thread after thread: forget the sources that hold nothing.
            self._redactors = {
                source: redactor for source, redactor in self._redactors.items() if redactor.holding
            }

    def _keep(self, text: str) -> None:
        if not text:
            return
        if self._sink is not None:
            try:
                self._sink.write(text)
                self._sink_written = True
            except (OSError, CodeliaError) as exc:  # a job's print must never fail for it
                self._lose_sink(self._sink, exc)
        if self._chunks and len(text) < _CHUNK_CHARS and len(self._chunks[-1]) < _CHUNK_CHARS:
            self._chunks[-1] += text
        else:
            self._chunks.append(text)
        self._kept_chars += len(text)
        excess = self._kept_chars - MAX_JOB_OUTPUT_CHARS
        while excess > 0:
            first = self._chunks[0]
            drop = min(len(first), excess)
            if drop == len(first):
                self._chunks.popleft()
            else:
                self._chunks[0] = first[drop:]
            self._kept_chars -= drop
            self._dropped_chars += drop
            excess -= drop

    # --- reading -------------------------------------------------------------------------

    @property
    def end(self) -> int:
        """Characters of output so far (dropped ones included): the cursor of the next read."""
        with self._lock:
            self._settle()
            return self._dropped_chars + self._kept_chars

    @property
    def dropped_chars(self) -> int:
        with self._lock:
            return self._dropped_chars

    @property
    def text(self) -> str:
        """Everything kept in memory."""
        return self.since(0)[0]

    def since(self, cursor: int) -> tuple[str, int]:
        """(text written after ``cursor``, characters of it that were already dropped)."""
        with self._lock:
            self._settle()
            lost = max(0, self._dropped_chars - cursor)
            skip = max(0, cursor - self._dropped_chars)
            pieces: list[str] = []
            for chunk in self._chunks:
                if skip >= len(chunk):
                    skip -= len(chunk)
                    continue
                pieces.append(chunk[skip:] if skip else chunk)
                skip = 0
            return "".join(pieces), lost

    def tail(self, chars: int) -> str:
        """The last ``chars`` characters kept."""
        with self._lock:
            self._settle()
            pieces: list[str] = []
            need = chars
            for chunk in reversed(self._chunks):
                if need <= 0:
                    break
                pieces.append(chunk[-need:] if len(chunk) > need else chunk)
                need -= len(chunk)
            return "".join(reversed(pieces))

    def images_since(self, cursor: int) -> list[bytes]:
        with self._lock:
            start = max(0, cursor - self._dropped_images)
            return list(self._images[start:])

    @property
    def image_count(self) -> int:
        with self._lock:
            return self._dropped_images + len(self._images)

    def last_lines(self, count: int = LAST_LINES) -> list[str]:
        """The last non-empty lines as a terminal would show them (``\\r`` rewrites a line);
        a very long line shows its last ``LINE_VIEW_CHARS`` characters."""
        lines = [line.rsplit("\r", 1)[-1] for line in _rows(self.tail(8192))]
        shown = [_line_end(line) for line in lines if line.strip()]
        return shown[-count:]

    def progress(self) -> Progress | None:
        matches = list(_TQDM.finditer(self.tail(4096)))
        if not matches:
            return None
        last = matches[-1]
        return Progress(
            percent=min(100, int(last.group(1))), done=last.group(2), total=last.group(3)
        )


class _WriteBuffer:
    """Writes of one thread: ``items`` takes ``str`` (stdout) and 1-tuples ``(text,)``
    (stderr) with a plain append, so a print costs no call and no lock; the output takes them
    at each read, on :meth:`spill` (the writer's, every few thousand writes) and on
    :meth:`retire` (the writer stops)."""

    def __init__(self, output: JobOutput) -> None:
        self.items: list[Any] = []
        self._output = output
        self.stdout: _Source = ("stdout", self)
        self.stderr: _Source = ("stderr", self)

    def spill(self) -> None:
        self._output._absorb(self)

    def retire(self) -> None:
        self._output._absorb(self, retire=True)


def _rows(text: str) -> list[str]:
    rows = text.split("\n")
    # A trailing "\r" bar update with no newline after it is still the visible line.
    return [row.rstrip("\r") if row.endswith("\r") else row for row in rows]


def _line_end(line: str) -> str:
    return line if len(line) <= LINE_VIEW_CHARS else "…" + line[-LINE_VIEW_CHARS:]
