"""Fingerprints for namespace undo: cheap marks of live objects that change when one changes.

:func:`fingerprint` returns a *mark*, a tuple compared with ``==``, for the kinds of object undo
tracks; None for values that cannot be changed in place (numbers, strings, tuples, modules,
functions, classes); and raises :class:`NotTrackableError`, with the reason, for everything
else: other objects (a fitted model, a figure: only rebinding their name is seen), containers
over ``CONTAINER_LIMIT`` items, and a fingerprint that passes its deadline
(:class:`FingerprintTimeoutError`).

What a mark compares:

- lists, dicts and sets: the identity of their items (and keys). The mark holds the items, so an
  item replaced and freed cannot hand its id on to the next object (ids are memory addresses);
- numpy arrays: shape, dtype, strides, data address and the bytes of the whole array up to
  ``EXACT_CELLS`` cells, else of a fixed sample of cells; object arrays by the identity of the
  sampled items, so no user ``__eq__`` or ``__hash__`` ever runs;
- DataFrames and Series: shape, the identity of the row and column labels (pandas keeps them in
  immutable ``Index`` objects) and their names, and each block of same-typed columns like an
  array (a sample of rows and columns past ``EXACT_CELLS``); extension columns (nullable ints,
  strings, categoricals) by value.

A change inside an item (a list held in a list or in a frame's cell) is not seen, nor an edit of
a big array or frame outside its sample. Lists, dicts and sets are read through the built-in
types' own methods, so a subclass's ``__iter__`` does not run; pandas and numpy are used only
when the namespace holds their objects (nothing is imported).
"""

from __future__ import annotations

import datetime
import enum
import functools
import inspect
import itertools
import numbers
import operator
import pathlib
import re
import sys
import time
import types
from typing import Any

from ...errors import CodeliaError
from . import _describe

EXACT_CELLS = 65_536
"""Arrays and frames with at most this many cells are compared whole; larger ones by a sample."""
SAMPLE_CELLS = 4_096
"""Cells compared of a larger array, or of each block of a larger frame."""
SAMPLE_COLUMNS = 64
"""Columns of a wide two-dimensional array or frame block that the sample covers."""
CONTAINER_LIMIT = 100_000
"""Lists, dicts and sets with more items are not fingerprinted (the mark holds every item)."""
BYTEARRAY_LIMIT = 64 * 1024 * 1024
_CONTAINERS = (list, dict, set, bytearray)

Mark = tuple[Any, ...]

_NA = "<missing>"
_IMMUTABLE: tuple[type, ...] = (
    numbers.Number,  # int, float, complex, bool, Decimal, Fraction and numpy's scalars
    str,
    bytes,
    type(None),
    range,
    slice,
    tuple,
    frozenset,
    type,
    types.ModuleType,
    functools.partial,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    pathlib.PurePath,
    enum.Enum,
    re.Pattern,
    type(Ellipsis),
    type(NotImplemented),
)


class NotTrackableError(CodeliaError):
    """An object whose in-place changes undo cannot see; the message says why, for the report."""


class FingerprintTimeoutError(NotTrackableError):
    """A fingerprint passed its deadline."""


class Refs:
    """Objects compared by identity, in order. Holding them keeps their ids from being reused."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Any, ...]) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and isinstance(other, Refs)
            and len(other.items) == len(self.items)
            and all(map(operator.is_, self.items, other.items))
        )

    __hash__ = None  # type: ignore[assignment]


class RefSet(Refs):
    """Objects compared by identity, in any order (a set's order can change when refilled)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RefSet)
            and len(other.items) == len(self.items)
            and set(map(id, self.items)) == set(map(id, other.items))
        )

    __hash__ = None


def fingerprint(value: Any, deadline: float | None = None) -> Mark | None:
    """A mark that changes when ``value`` is changed in place; None: it cannot be.

    Raises :class:`NotTrackableError` (the reason in its message) for objects whose changes cannot
    be seen, and :class:`FingerprintTimeoutError` once ``time.monotonic()`` passes ``deadline``.
    """
    if _describe.is_dataframe(value) or _describe.is_series(value):
        return _frame_mark(value, deadline)
    if _describe.is_ndarray(value):
        return _array_mark(value)
    if isinstance(value, list):
        return ("list", Refs(tuple(list.__iter__(_within_limit(value, list.__len__(value))))))
    if isinstance(value, dict):
        _within_limit(value, dict.__len__(value))
        return ("dict", Refs(tuple(itertools.chain.from_iterable(dict.items(value)))))
    if isinstance(value, set):
        return ("set", RefSet(tuple(set.__iter__(_within_limit(value, set.__len__(value))))))
    if isinstance(value, bytearray):
        if bytearray.__len__(value) > BYTEARRAY_LIMIT:
            raise NotTrackableError(f"over {_describe.human_bytes(BYTEARRAY_LIMIT)}, too large")
        return ("bytearray", hash(bytes(value)))
    if cannot_change(value):
        return None
    raise NotTrackableError("changes made inside it are not seen, only rebinding the name")


def runs_no_user_code(value: Any) -> bool:
    """True when fingerprinting and copying ``value`` runs only numpy's, pandas' and Python's
    own code (exact built-in and library types, or kinds not fingerprinted at all): safe to do
    inline, its time bounded by the sizes and the deadline checks."""
    kind = type(value)
    if kind in (list, dict, set, bytearray):
        return True
    numpy = sys.modules.get("numpy")
    if numpy is not None and kind is numpy.ndarray:
        return True
    pandas = sys.modules.get("pandas")
    if pandas is not None and kind in (pandas.DataFrame, pandas.Series):
        # Extension columns may be a third party's code, or categories of the user's objects.
        blocks = getattr(getattr(value, "_mgr", None), "blocks", None)
        return isinstance(blocks, tuple) and all(
            _describe.is_ndarray(block.values) for block in blocks
        )
    tracked = _describe.is_dataframe(value) or _describe.is_series(value)
    return not (tracked or _describe.is_ndarray(value) or isinstance(value, _CONTAINERS))


def cannot_change(value: Any) -> bool:
    """Immutable values and code (functions, classes, modules): nothing to track in place."""
    if isinstance(value, _IMMUTABLE) or inspect.isroutine(value):
        return True
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, (numpy.generic, numpy.dtype, numpy.ufunc)):
        return True
    return _describe.is_pandas_index(value)


def _within_limit(value: Any, length: int) -> Any:
    if length > CONTAINER_LIMIT:
        raise NotTrackableError(f"over {CONTAINER_LIMIT:,} items, too large to fingerprint")
    return value


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise FingerprintTimeoutError("too large/slow to fingerprint in its time budget")


def _positions(length: int, count: int) -> Any:
    """``count`` positions spread evenly over ``length`` (all of them when fewer), first and last
    included; distinct, since with ``length >= count`` the steps are at least one apart."""
    numpy = sys.modules["numpy"]
    if length <= count:
        return numpy.arange(length, dtype=numpy.int64)
    return numpy.linspace(0, length - 1, count).astype(numpy.int64)


def _frame_mark(frame: Any, deadline: float | None) -> Mark:
    blocks = getattr(getattr(frame, "_mgr", None), "blocks", None)
    if not isinstance(blocks, tuple):
        raise NotTrackableError("this pandas version keeps frames in a layout undo does not know")
    numpy = sys.modules["numpy"]
    is_frame = _describe.is_dataframe(frame)
    axes = (frame.index, frame.columns) if is_frame else (frame.index,)
    labels = [name for axis in axes for name in axis.names]
    if not is_frame:
        labels.append(frame.name)
    exact = frame.size <= EXACT_CELLS
    parts: list[Any] = [tuple(frame.shape), Refs(axes), Refs(tuple(labels))]
    for block in blocks:
        check_deadline(deadline)
        values = block.values
        parts.append(hash(numpy.asarray(block.mgr_locs.as_array).tobytes()))
        if _describe.is_ndarray(values):
            parts.append(_array_mark(values, exact=exact))
        else:
            parts.append(_extension_mark(values, exact=exact))
    return tuple(parts)


def _array_mark(array: Any, *, exact: bool | None = None) -> Mark:
    numpy = sys.modules["numpy"]
    if exact is None:
        exact = array.size <= EXACT_CELLS
    if exact:
        sample = array
    elif array.ndim == 2:
        columns = _positions(array.shape[0], SAMPLE_COLUMNS)
        rows = _positions(array.shape[1], SAMPLE_CELLS // len(columns))
        sample = array[numpy.ix_(columns, rows)]
    else:
        sample = array[numpy.unravel_index(_positions(array.size, SAMPLE_CELLS), array.shape)]
    pointer = array.__array_interface__["data"][0]
    return (array.shape, array.dtype.str, array.strides, pointer, _digest(sample))


def _digest(sample: Any) -> Any:
    if sample.dtype == object:
        # The items themselves, compared by identity: no user __eq__/__hash__ runs.
        return Refs(tuple(sample.ravel().tolist()))
    return hash(sample.tobytes())


def _extension_mark(values: Any, *, exact: bool) -> Mark:
    """Extension arrays by value: their items are fresh scalars each time they are read."""
    numpy = sys.modules["numpy"]
    length = len(values)
    sample = (
        values if exact or length <= SAMPLE_CELLS else values.take(_positions(length, SAMPLE_CELLS))
    )
    missing = numpy.asarray(sample.isna(), dtype=bool)
    items = numpy.asarray(sample, dtype=object).tolist()
    key = tuple(_NA if gone else item for item, gone in zip(items, missing.tolist(), strict=True))
    try:
        digest = hash(key)
    except TypeError:  # unhashable items (lists in an arrow list column): by their repr
        digest = hash(tuple(map(repr, key)))
    return (type(values).__name__, str(values.dtype), length, hash(missing.tobytes()), digest)


def shallow_size(value: Any) -> int:
    """Bytes a copy takes, without walking Python objects in object columns (deep is slow)."""
    if _describe.is_dataframe(value) or _describe.is_series(value):
        blocks = getattr(getattr(value, "_mgr", None), "blocks", ())
        return int(value.index.nbytes) + sum(int(block.values.nbytes) for block in blocks)
    if _describe.is_ndarray(value):
        return int(value.nbytes)
    return sys.getsizeof(value)
