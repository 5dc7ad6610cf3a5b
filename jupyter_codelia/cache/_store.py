"""``ToolOutputCacheStore``: typed, streamed, indexed and size-capped storage of tool outputs.

Owns the directory layout (see ``_entry``), the streaming writer, atomic commits, the
least-recently-used eviction and the Python API that the retrieval tools and the notebook's
cache browser call. Safe for several threads and several processes sharing one directory:
commits and evictions run under a file lock; readers take no lock and retry or report clearly
when an entry changes or disappears under them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import ValidationError

from .._private import PRIVATE_FILE, make_private_dirs, tighten_once, write_private
from ..llm.messages import (
    ContentPart,
    TextPart,
    ToolOutputRef,
    content_parts_adapter,
    has_non_text_part,
    is_content_part,
    part_placeholder,
)
from ._entry import CacheEntry, EntryMeta, EntryOrigin, OpenEntry, data_path
from ._errors import (
    ToolOutputCacheError,
    ToolOutputCorruptedError,
    ToolOutputEvictedError,
    ToolOutputNotFoundError,
    ToolOutputTooLargeError,
)
from ._eviction import TOMBSTONE, account, previous_version
from ._graphemes import pread
from ._grep import find_ripgrep, matches_empty_line, python_lines, ripgrep_lines
from ._index import STRIDE, IndexFormatError, LineIndex, LineIndexBuilder, iter_spans
from ._limits import (
    DEFAULT_CHAR_LIMIT,
    DEFAULT_MAX_DISK_BYTES,
    DEFAULT_MAX_MATCHES,
    CacheLimits,
    env_positive_int,
)
from ._render import render_grep, render_line, render_read, render_tail
from ._writer import StreamingOutputWriter, unlink
from .protocol import normalize_ref_id

logger = logging.getLogger("jupyter_codelia.cache")

DEFAULT_MAX_PARTS_TEXT_BYTES = 16 * 1024 * 1024


class ToolOutputCacheStore:
    """Tool outputs saved under their ref id in ``root`` (created on demand).

    ``max_bytes`` caps the disk use (default 1 GB, env
    ``JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_MAX_BYTES``): when a commit passes it, the least
    recently used entries are evicted whole down to 90% of the cap. ``max_entry_bytes`` (default
    a quarter of the cap, env ``..._MAX_ENTRY_BYTES``, at most half of it) bounds one entry:
    past it the middle is dropped and a note says so, keeping the head and a tail window (see
    ``_writer``). So the newest entries always fit under the cap together, and the eviction
    that a later commit runs removes older entries first: an output stays readable at least
    until the model's next turn. ``limits`` bound what one read or grep returns (environment
    overrides apply); ``use_ripgrep=False`` forces the pure-Python search.

    Entries never overwrite each other: a ref id is the normalised tool call id, or, when that
    name is taken (another session, notebook or kernel, or a model reusing call ids), the same
    with a ``-2``, ``-3``... suffix. ``origin`` (session, kernel, notebook) is recorded in each
    entry so the cache browser can list the current kernel's entries first.
    """

    def __init__(
        self,
        root: Path | str,
        *,
        max_bytes: int | None = None,
        max_entry_bytes: int | None = None,
        limits: CacheLimits | None = None,
        use_ripgrep: bool = True,
        index_stride: int = STRIDE,
        origin: EntryOrigin | None = None,
    ) -> None:
        if max_bytes is None:
            max_bytes = env_positive_int("MAX_BYTES", DEFAULT_MAX_DISK_BYTES)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ValueError(
                f"max_bytes must be a positive number of bytes (default 1_000_000_000), "
                f"got {max_bytes!r}"
            )
        if max_entry_bytes is None:
            max_entry_bytes = env_positive_int("MAX_ENTRY_BYTES", max(1, max_bytes // 4))
        most = max(1, max_bytes // 2)
        if (
            isinstance(max_entry_bytes, bool)
            or not isinstance(max_entry_bytes, int)
            or not 0 < max_entry_bytes <= most
        ):
            raise ValueError(
                f"max_entry_bytes must be a positive number of bytes of at most half of "
                f"max_bytes ({most}), so the newest outputs fit together; "
                f"got {max_entry_bytes!r}"
            )
        if isinstance(index_stride, bool) or not isinstance(index_stride, int) or index_stride < 1:
            raise ValueError(
                f"index_stride must be a positive number of bytes, got {index_stride!r}"
            )
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.limits = limits if limits is not None else CacheLimits.from_env()
        self._ripgrep = find_ripgrep() if use_ripgrep else None
        self.index_stride = index_stride  # bytes between line-index checkpoints (tests shrink it)
        self._thread_lock = threading.RLock()
        self._file_lock: FileLock | None = None
        self.origin = origin if origin is not None else EntryOrigin()
        # Normalised call id -> ref of the entry this store streamed for it (see streamed_ref).
        self._streamed: dict[str, ToolOutputRef] = {}

    def __repr__(self) -> str:
        return f"ToolOutputCacheStore({str(self.root)!r}, max_bytes={self.max_bytes})"

    # --- writing -------------------------------------------------------------------------------

    def writer(
        self, *, tool_call_id: str, tool_name: str, is_error: bool = False
    ) -> StreamingOutputWriter:
        """A streaming writer for the output of ``tool_call_id``; ``close()`` commits it."""
        return StreamingOutputWriter(
            self,
            ref_id=self._reserve_ref(tool_call_id),
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            is_error=is_error,
        )

    def save(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        content: str | list[Any],
        is_error: bool = False,
    ) -> ToolOutputRef:
        """Save a whole result: a string, or content parts (typed parts kept for read_parts)."""
        if isinstance(content, str):
            text, parts = content, None
        elif isinstance(content, list):
            text, parts = _project_parts(content)
        else:
            raise TypeError(
                f"content must be a str or a list of content parts, got {type(content).__name__}"
            )
        stored_parts = parts if parts is not None and has_non_text_part(parts) else None
        writer = StreamingOutputWriter(
            self,
            ref_id=self._reserve_ref(tool_call_id),
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            is_error=is_error,
            parts=stored_parts,
            streamed=False,
        )
        with writer:
            writer.write(text)
            return writer.close()

    def _reserve_ref(self, tool_call_id: str) -> str:
        """A ref id no entry, eviction note or pending writer (of any process) has: the
        normalised call id, else it with the first free ``-N`` suffix. The reservation is a
        hidden temp file, removed when the writer commits or aborts (or, if the process died,
        by the stale-temp sweep)."""
        base = _checked_ref(tool_call_id)
        self._ensure_root()
        with self._lock():
            suffix = 1
            while True:
                ref_id = base if suffix == 1 else f"{base}-{suffix}"
                taken = (
                    self._meta_path(ref_id).exists()
                    or (self.root / f"{ref_id}{TOMBSTONE}").exists()
                    or self.reservation(ref_id).exists()
                )
                if not taken:
                    write_private(self.reservation(ref_id), b"")
                    return ref_id
                suffix += 1

    def reservation(self, ref_id: str) -> Path:
        """The file holding ``ref_id`` for a writer until it commits or is discarded."""
        return self.root / f".tmp-ref-{ref_id}"

    def _ensure_root(self) -> None:
        try:
            make_private_dirs(self.root)
            tighten_once(self.root)
        except OSError as exc:
            raise ToolOutputCacheError(
                f"Cannot create the tool output cache directory {self.root}: {exc}"
            ) from None

    def _temp_path(self, suffix: str) -> Path:
        self._ensure_root()
        return self.root / f".tmp-{uuid.uuid4().hex}.{suffix}"

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Threads of this process, then other processes, one at a time."""
        with self._thread_lock:
            if self._file_lock is None:
                self._file_lock = FileLock(
                    self.root / ".lock", thread_local=False, mode=PRIVATE_FILE
                )
            with self._file_lock:
                yield

    def _commit(
        self,
        *,
        ref_id: str,
        tool_call_id: str,
        tool_name: str,
        is_error: bool,
        tmp_text: Path,
        index: LineIndexBuilder,
        parts: list[ContentPart] | None,
        streamed: bool,
        dropped_bytes: int,
    ) -> ToolOutputRef:
        generation = uuid.uuid4().hex[:16]
        meta = EntryMeta(
            ref_id=ref_id,
            tool_name=tool_name,
            created_at=datetime.now(timezone.utc),
            size_bytes=index.total_bytes,
            line_count=index.line_count,
            has_parts=parts is not None,
            is_error=is_error,
            streamed=streamed,
            has_crlf=index.has_crlf,
            generation=generation,
            dropped_bytes=dropped_bytes,
            tool_call_id=tool_call_id,
            session_id=self.origin.session_id,
            kernel_id=self.origin.kernel_id,
            notebook=self.origin.notebook,
        )
        tmp_index = self._temp_path("idx")
        tmp_parts = self._temp_path("parts.json") if parts is not None else None
        tmp_meta = self._temp_path("json")
        try:
            write_private(tmp_index, index.to_bytes())
            if tmp_parts is not None and parts is not None:
                write_private(tmp_parts, content_parts_adapter.dump_json(parts, exclude_none=True))
            write_private(tmp_meta, meta.model_dump_json().encode("utf-8"))
            added = sum(p.stat().st_size for p in (tmp_text, tmp_index, tmp_parts, tmp_meta) if p)
            with self._lock():
                os.replace(tmp_text, data_path(self.root, ref_id, generation, "txt"))
                os.replace(tmp_index, data_path(self.root, ref_id, generation, "idx"))
                if tmp_parts is not None:
                    os.replace(tmp_parts, data_path(self.root, ref_id, generation, "parts.json"))
                os.replace(tmp_meta, self._meta_path(ref_id))
                unlink(self.reservation(ref_id))
                account(
                    self.root,
                    self.max_bytes,
                    added,
                    keep=ref_id,
                    keep_generation=generation,
                )
        finally:
            for leftover in (tmp_index, tmp_parts, tmp_meta):
                if leftover is not None:
                    unlink(leftover)
        ref = ToolOutputRef(id=ref_id, byte_size=meta.size_bytes, line_count=meta.line_count)
        if streamed:
            self._streamed[normalize_ref_id(tool_call_id)] = ref
        return ref

    # --- eviction --------------------------------------------------------------------------------

    def delete(self, ref_id: str) -> bool:
        """Remove one entry (the cache browser's delete button); False if there was none."""
        ref_id = normalize_ref_id(ref_id)
        if not ref_id or not self.root.is_dir():
            return False
        with self._lock():
            meta_path = self._meta_path(ref_id)
            data_files, freed = previous_version(self.root, ref_id)
            if not meta_path.exists():
                return False
            unlink(meta_path)
            for path in data_files:
                unlink(path)
            account(self.root, self.max_bytes, -freed, keep=None, keep_generation=None)
        return True

    def disk_usage(self) -> int:
        """Bytes used by all entries in the store directory."""
        if not self.root.is_dir():
            return 0
        total = 0
        for item in os.scandir(self.root):
            if not item.name.startswith(".") and not item.name.endswith(TOMBSTONE):
                with contextlib.suppress(FileNotFoundError):
                    total += item.stat().st_size
        return total

    # --- reading ---------------------------------------------------------------------------------

    def _meta_path(self, ref_id: str) -> Path:
        return self.root / f"{ref_id}.json"

    def _load_meta(self, ref_id: str) -> EntryMeta:
        path = self._meta_path(ref_id)
        try:
            raw = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            if (self.root / f"{ref_id}{TOMBSTONE}").exists():
                raise ToolOutputEvictedError(ref_id) from None
            raise ToolOutputNotFoundError(ref_id) from None
        try:
            meta = EntryMeta.model_validate_json(raw)
        except ValidationError:
            raise ToolOutputCorruptedError(
                ref_id, f"its metadata file {path.name} is not valid"
            ) from None
        if meta.ref_id != ref_id or not meta.generation.isalnum():
            raise ToolOutputCorruptedError(ref_id, f"its metadata file {path.name} is not valid")
        return meta

    def open_entry(self, ref_id: str) -> OpenEntry:
        """Open and validate an entry (raises the typed errors); the caller closes it."""
        ref_id = normalize_ref_id(ref_id)
        if not ref_id:
            raise ToolOutputNotFoundError(ref_id)
        tighten_once(self.root)
        for attempt in range(3):
            meta = self._load_meta(ref_id)
            text_path = data_path(self.root, ref_id, meta.generation, "txt")
            try:
                fd = os.open(text_path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                try:
                    raw_index = data_path(self.root, ref_id, meta.generation, "idx").read_bytes()
                except BaseException:
                    os.close(fd)
                    raise
            except FileNotFoundError:
                # Rewritten or evicted by another process between the two reads? Look again.
                if attempt < 2 and self._load_meta(ref_id).generation != meta.generation:
                    continue
                missing = "text" if not text_path.exists() else "line index"
                raise ToolOutputCorruptedError(ref_id, f"its {missing} file is missing") from None
            try:
                index = _validated_index(ref_id, meta, fd, raw_index)
            except BaseException:
                os.close(fd)
                raise
            with contextlib.suppress(OSError):
                os.utime(self._meta_path(ref_id))  # "recently used" for the LRU eviction
            return OpenEntry(ref_id, meta, fd, index, text_path)
        # Three rewrites in a row while we looked: report it rather than loop forever.
        raise ToolOutputCacheError(
            f"Cached output {ref_id} is being rewritten by another process; try again."
        )

    def list_entries(self) -> list[CacheEntry]:
        """Every readable entry, newest first."""
        if not self.root.is_dir():
            return []
        tighten_once(self.root)
        sizes: dict[str, int] = {}
        metas: list[tuple[EntryMeta, float]] = []
        for item in os.scandir(self.root):
            name = item.name
            if name.startswith(".") or name.endswith(TOMBSTONE):
                continue
            ref, _, rest = name.partition(".")
            try:
                stat = item.stat()
            except FileNotFoundError:
                continue
            sizes[ref] = sizes.get(ref, 0) + stat.st_size
            if rest == "json":
                try:
                    meta = EntryMeta.model_validate_json(Path(item.path).read_bytes())
                except (ValidationError, OSError):
                    continue
                metas.append((meta, stat.st_mtime))
        entries = [_row(meta, used, sizes.get(meta.ref_id, 0)) for meta, used in metas]
        entries.sort(key=lambda e: e.created_at, reverse=True)
        return entries

    def get_entry(self, ref_id: str) -> CacheEntry:
        """The listing row of one entry (raises the typed errors)."""
        ref_id = normalize_ref_id(ref_id)
        if not ref_id:
            raise ToolOutputNotFoundError(ref_id)
        meta = self._load_meta(ref_id)
        try:
            used = self._meta_path(ref_id).stat().st_mtime
        except FileNotFoundError:
            raise ToolOutputEvictedError(ref_id) from None
        disk = 0
        for path in self.root.glob(f"{ref_id}.*"):
            if not path.name.endswith(TOMBSTONE):
                with contextlib.suppress(FileNotFoundError):
                    disk += path.stat().st_size
        return _row(meta, used, disk)

    def streamed_ref(self, tool_call_id: str) -> ToolOutputRef | None:
        """The ref of the entry a tool streamed for ``tool_call_id`` with this store's
        :meth:`writer` (never another session's entry that happens to share the call id)."""
        return self._streamed.get(normalize_ref_id(tool_call_id))

    def read(self, ref_id: str, offset: int = 0, limit: int | None = None) -> str:
        """Numbered lines from 0-based ``offset`` (the ``tool_output_cache`` format)."""
        offset = _non_negative("offset", offset)
        if limit is not None and (isinstance(limit, bool) or limit <= 0):
            raise ValueError(f"limit must be a positive number of lines, got {limit!r}")
        with self.open_entry(ref_id) as entry:
            return render_read(entry, offset, limit, self.limits)

    def read_line(
        self,
        ref_id: str,
        line_number: int,
        char_offset: int = 0,
        char_limit: int = DEFAULT_CHAR_LIMIT,
    ) -> str:
        """A window of grapheme clusters of one 1-based line (``tool_output_cache_line``)."""
        if isinstance(line_number, bool) or line_number < 1:
            raise ValueError(f"line_number is 1-based and must be at least 1, got {line_number!r}")
        char_offset = _non_negative("char_offset", char_offset)
        with self.open_entry(ref_id) as entry:
            return render_line(entry, line_number, char_offset, char_limit)

    def grep(
        self,
        ref_id: str,
        pattern: str,
        *,
        regex: bool = False,
        before: int = 0,
        after: int = 0,
        max_matches: int = DEFAULT_MAX_MATCHES,
    ) -> str:
        """Matching lines with context (``tool_output_cache_grep``); literal unless ``regex``."""
        before = _non_negative("before", before)
        after = _non_negative("after", after)
        if isinstance(max_matches, bool) or max_matches <= 0:
            raise ValueError(f"max_matches must be a positive number, got {max_matches!r}")
        with self.open_entry(ref_id) as entry:
            matches = self._matching_lines(entry, pattern, regex=regex, max_count=max_matches + 1)
            return render_grep(
                entry,
                pattern,
                matches,
                before=before,
                after=after,
                max_matches=max_matches,
                limits=self.limits,
            )

    def _matching_lines(
        self, entry: OpenEntry, pattern: str, *, regex: bool, max_count: int
    ) -> Iterator[int]:
        crlf = entry.meta.has_crlf
        # ripgrep's CRLF mode (needed so "$" matches before "\r\n") rejects a literal "\r".
        if self._ripgrep is None or (crlf and not regex and "\r" in pattern):
            yield from python_lines(entry.text_path, pattern, regex=regex, max_count=max_count)
            return
        if not regex and "\n" in pattern:
            return  # no single line can contain a line break
        found = 0
        last = -1
        for line in ripgrep_lines(
            self._ripgrep, entry.text_path, pattern, regex=regex, max_count=max_count, crlf=crlf
        ):
            found += 1
            last = line
            yield line
        # ripgrep does not report the empty line after a final newline; split_lines does.
        final = entry.index.line_count - 1
        if found < max_count and last < final and matches_empty_line(pattern, regex):
            span = next(iter_spans(entry.index, entry.fd, final))
            if span.start == span.end:
                yield final

    def read_tail(self, ref_id: str, tail_lines: int) -> str:
        """The last ``tail_lines`` lines as plain text (at most ``max_read_bytes``)."""
        with self.open_entry(ref_id) as entry:
            return render_tail(entry, tail_lines, self.limits)

    def read_parts(
        self, ref_id: str, *, max_text_bytes: int = DEFAULT_MAX_PARTS_TEXT_BYTES
    ) -> list[ContentPart]:
        """The result as typed parts: images come back as ``ImagePart``; a text result is one
        ``TextPart`` (refused above ``max_text_bytes``: read such outputs by lines)."""
        with self.open_entry(ref_id) as entry:
            if entry.meta.has_parts:
                path = data_path(self.root, entry.ref_id, entry.meta.generation, "parts.json")
                try:
                    return content_parts_adapter.validate_json(path.read_bytes())
                except FileNotFoundError:
                    raise ToolOutputCorruptedError(
                        entry.ref_id, "its parts file is missing"
                    ) from None
                except ValidationError:
                    raise ToolOutputCorruptedError(
                        entry.ref_id, "its parts file is not valid"
                    ) from None
            size = entry.meta.size_bytes
            if size > max_text_bytes:
                raise ToolOutputTooLargeError(
                    f"Cached output {entry.ref_id} has {size} bytes of text, more than "
                    f"max_text_bytes={max_text_bytes}; read it by lines with read(), "
                    "read_line() or grep() instead."
                )
            data = pread(entry.fd, size, 0)
            return [TextPart(text=data.decode("utf-8", errors="surrogatepass"))]


def _row(meta: EntryMeta, used: float, disk_bytes: int) -> CacheEntry:
    return CacheEntry(
        ref_id=meta.ref_id,
        tool_name=meta.tool_name,
        created_at=meta.created_at,
        last_used_at=datetime.fromtimestamp(used, timezone.utc),
        size_bytes=meta.size_bytes,
        line_count=meta.line_count,
        has_parts=meta.has_parts,
        is_error=meta.is_error,
        disk_bytes=disk_bytes,
        session_id=meta.session_id,
        kernel_id=meta.kernel_id,
        notebook=meta.notebook,
    )


def _checked_ref(tool_call_id: str) -> str:
    if not isinstance(tool_call_id, str) or not tool_call_id:
        raise ValueError(f"tool_call_id must be a non-empty string, got {tool_call_id!r}")
    return normalize_ref_id(tool_call_id)


def _non_negative(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return value


def _project_parts(content: list[Any]) -> tuple[str, list[ContentPart]]:
    """Text projection and typed parts; an unrecognised item becomes ``[content]``."""
    texts: list[str] = []
    parts: list[ContentPart] = []
    for item in content:
        if is_content_part(item):
            part = content_parts_adapter.validate_python([item])[0]
            texts.append(part_placeholder(part))
            parts.append(part)
        else:
            texts.append("[content]")
            parts.append(TextPart(text="[content]"))
    return "".join(texts), parts


def _validated_index(ref_id: str, meta: EntryMeta, fd: int, raw: bytes) -> LineIndex:
    try:
        index = LineIndex.from_bytes(raw)
    except IndexFormatError as exc:
        raise ToolOutputCorruptedError(ref_id, f"its line index is unreadable ({exc})") from None
    size = os.fstat(fd).st_size
    if size != meta.size_bytes or index.total_bytes != size:
        raise ToolOutputCorruptedError(
            ref_id,
            f"its text file has {size} bytes but {meta.size_bytes} were written",
        )
    if index.line_count != meta.line_count:
        raise ToolOutputCorruptedError(ref_id, "its line index does not match its metadata")
    return index
