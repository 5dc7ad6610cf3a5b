"""Describing live Python objects for the model: one-line summaries and detailed inspections.

pandas and numpy are recognised by duck typing and ``sys.modules`` look-ups, so nothing here
imports them: a kernel without pandas still gets useful descriptions of everything else.
"""

from __future__ import annotations

import inspect
import reprlib
import sys
import types
from typing import Any

from ..._text import clip_chars

_HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})

_short_repr = reprlib.Repr()
_short_repr.maxstring = 80
_short_repr.maxother = 80
_short_repr.maxlist = 6
_short_repr.maxdict = 6


def type_name(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def _is_instance_of(value: Any, module: str, name: str) -> bool:
    loaded = sys.modules.get(module)
    cls = getattr(loaded, name, None) if loaded is not None else None
    return isinstance(cls, type) and isinstance(value, cls)


def is_dataframe(value: Any) -> bool:
    return _is_instance_of(value, "pandas", "DataFrame")


def is_series(value: Any) -> bool:
    return _is_instance_of(value, "pandas", "Series")


def is_ndarray(value: Any) -> bool:
    return _is_instance_of(value, "numpy", "ndarray")


def is_pandas_index(value: Any) -> bool:
    return _is_instance_of(value, "pandas", "Index")


def memory_bytes(value: Any) -> int | None:
    """Best-effort memory footprint: deep for pandas, nbytes for arrays, getsizeof otherwise."""
    try:
        if is_dataframe(value) or is_series(value):
            usage = value.memory_usage(deep=True)
            return int(usage.sum()) if hasattr(usage, "sum") else int(usage)
        if is_ndarray(value):
            return int(value.nbytes)
        return sys.getsizeof(value)
    except Exception:
        return None


def human_bytes(size: int | None) -> str:
    if size is None:
        return "?"
    amount = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{int(amount)} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{size} B"


def summary(value: Any) -> str:
    """A one-line description: shape/length and a clipped repr."""
    try:
        if is_dataframe(value):
            rows, cols = value.shape
            names = ", ".join(str(c) for c in list(value.columns)[:8])
            more = ", ..." if cols > 8 else ""
            return f"{rows} rows x {cols} columns [{names}{more}]"
        if is_series(value):
            return f"length {len(value)}, dtype {value.dtype}, name {value.name!r}"
        if is_ndarray(value):
            return f"shape {value.shape}, dtype {value.dtype}"
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
            return _signature(value)
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            return f"len {len(value)}: {_short_repr.repr(value)}"
        return _short_repr.repr(value)
    except Exception as exc:
        return f"<unavailable: {type(exc).__name__}>"


def _signature(value: Any) -> str:
    try:
        return f"{getattr(value, '__name__', '?')}{inspect.signature(value)}"
    except (TypeError, ValueError):
        return getattr(value, "__name__", repr(value))


def is_user_variable(name: str, value: Any, hidden: set[str] | frozenset[str]) -> bool:
    if name.startswith("_") or name in _HIDDEN_NAMES or name in hidden:
        return False
    return not isinstance(value, types.ModuleType)


def inspect_value(value: Any, *, rows: int, max_chars: int) -> str:
    """A multi-line description of one object, pandas and numpy aware."""
    lines = [f"type: {type_name(value)}", f"memory: {human_bytes(memory_bytes(value))}"]
    try:
        if is_dataframe(value):
            lines += _describe_dataframe(value, rows)
        elif is_series(value):
            lines += [
                f"length: {len(value)}",
                f"dtype: {value.dtype}",
                f"name: {value.name!r}",
                f"head({rows}):",
                value.head(rows).to_string(),
            ]
        elif is_ndarray(value):
            lines += _describe_array(value)
        elif isinstance(value, dict):
            keys = list(value.keys())
            lines.append(f"length: {len(value)}")
            lines.append(f"first keys: {_short_repr.repr(keys[:rows])}")
            lines.append(f"repr: {clip_chars(repr(value), max_chars)}")
        elif isinstance(value, (list, tuple, set, frozenset)):
            lines.append(f"length: {len(value)}")
            kinds = sorted({type(v).__name__ for v in list(value)[:100]})
            lines.append(f"element types (first 100): {', '.join(kinds) or '-'}")
            lines.append(f"repr: {clip_chars(repr(value), max_chars)}")
        elif isinstance(value, str):
            lines.append(f"length: {len(value)} chars")
            lines.append(f"value: {clip_chars(repr(value), max_chars)}")
        elif callable(value):
            lines.append(f"signature: {_signature(value)}")
            doc = inspect.getdoc(value)
            if doc:
                lines.append("doc: " + clip_chars(doc, max_chars))
        else:
            lines.append(f"repr: {clip_chars(repr(value), max_chars)}")
            attrs = [a for a in dir(value) if not a.startswith("_")][:40]
            if attrs:
                lines.append(f"public attributes: {', '.join(attrs)}")
    except Exception as exc:
        lines.append(f"(description failed: {type(exc).__name__}: {exc})")
    return "\n".join(lines)


def _describe_dataframe(frame: Any, rows: int) -> list[str]:
    lines = [f"shape: {frame.shape[0]} rows x {frame.shape[1]} columns", "dtypes:"]
    lines += [f"  {name}: {dtype}" for name, dtype in frame.dtypes.items()]
    nulls = frame.isna().sum()
    with_nulls = {str(k): int(v) for k, v in nulls.items() if int(v)}
    lines.append(f"null counts: {with_nulls or 'none'}")
    lines.append(f"index: {type_name(frame.index)} {_short_repr.repr(list(frame.index[:5]))}")
    lines.append(f"head({rows}):")
    lines.append(frame.head(rows).to_string())
    return lines


def _describe_array(array: Any) -> list[str]:
    lines = [f"shape: {array.shape}", f"dtype: {array.dtype}", f"size: {array.size}"]
    if array.size and array.dtype.kind in "biuf":
        try:
            lines.append(
                f"min: {array.min()!r}, max: {array.max()!r}, mean: {float(array.mean())!r}"
            )
        except Exception as exc:
            lines.append(f"(statistics failed: {type(exc).__name__})")
    numpy = sys.modules["numpy"]
    lines.append("values:")
    lines.append(numpy.array2string(array, threshold=60, edgeitems=3))
    return lines
