"""The tool-output cache.

Every tool result is saved under its ref id (typed parts kept, text projection indexed by line),
the in-context copy is bounded, old outputs are trimmed to ref placeholders when the total
exceeds the budget, and the model reads saved outputs back with the three retrieval tools.

>>> from jupyter_codelia.cache import ToolOutputCacheStore, ToolOutputCache
>>> store = ToolOutputCacheStore(root)                       # doctest: +SKIP
>>> cache = ToolOutputCache(store)                           # doctest: +SKIP
>>> message = cache.process(message)                         # doctest: +SKIP
"""

from ._entry import CacheEntry, EntryOrigin
from ._errors import (
    InvalidPatternError,
    ToolOutputCacheError,
    ToolOutputCorruptedError,
    ToolOutputEvictedError,
    ToolOutputNotFoundError,
    ToolOutputTooLargeError,
    WriterClosedError,
)
from ._limits import CacheLimits
from ._service import ToolOutputCache, ToolOutputCacheConfig, derive_budget, estimate_tokens
from ._store import ToolOutputCacheStore
from ._writer import StreamingOutputWriter
from .protocol import OutputWriter, ToolOutputStore, normalize_ref_id, ref_note, refs_in

__all__ = [
    "CacheEntry",
    "CacheLimits",
    "EntryOrigin",
    "InvalidPatternError",
    "OutputWriter",
    "StreamingOutputWriter",
    "ToolOutputCache",
    "ToolOutputCacheConfig",
    "ToolOutputCacheError",
    "ToolOutputCacheStore",
    "ToolOutputCorruptedError",
    "ToolOutputEvictedError",
    "ToolOutputNotFoundError",
    "ToolOutputStore",
    "ToolOutputTooLargeError",
    "WriterClosedError",
    "derive_budget",
    "estimate_tokens",
    "normalize_ref_id",
    "ref_note",
    "refs_in",
]
