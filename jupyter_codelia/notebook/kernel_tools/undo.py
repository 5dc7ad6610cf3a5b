"""Undo for the namespace: what each ``python`` call changed, and putting it back.

Before a call, :meth:`NamespaceUndo.before` keeps the namespace's bindings (a shallow copy of the
dict: cheap even for thousands of names) and, for the objects the code *names*, a fingerprint
and, while the run's copy budget lasts, a copy. Afterwards :meth:`NamespaceUndo.after` lists the
names added, rebound and deleted and the named objects whose fingerprint changed (mutated in
place). :meth:`NamespaceUndo.undo` restores a call or a whole run, newest change first, and
reports exactly what it did: a name changed again since is left alone, and an in-place change
without a copy is named as not restorable.

Fingerprints are cheap on purpose: a DataFrame, Series or array up to ``EXACT_CELLS`` cells is
hashed whole; a larger one by shape, dtypes, columns and a fixed sample of rows (an edit to rows
outside the sample is not seen). Lists, dicts and sets up to ``CONTAINER_LIMIT`` items are compared
by the identity of their items. Objects only reached indirectly (a function that mutates a global
the code does not name) are not fingerprinted; rebinding is always seen.

pandas and numpy are used only when the namespace holds their objects (nothing is imported).
"""

from __future__ import annotations

import ast
import copy
import itertools
import operator
import sys
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from ...errors import CodeliaError
from . import _describe

COPY_BUDGET_BYTES = 100 * 1024 * 1024
"""Copies kept per run for restoring in-place changes; larger objects are not copied."""
EXACT_CELLS = 65_536
"""Arrays and frames with at most this many cells are hashed whole; larger ones are sampled."""
SAMPLE_ROWS = 64
CONTAINER_LIMIT = 10_000
KEPT_RUNS = 3
"""Runs whose records (and so old values and copies) are kept for undo."""

_MISSING: Any = object()
_NAN = "<NaN>"
ChangeKind = Literal["added", "rebound", "deleted", "mutated"]


class UndoError(CodeliaError, LookupError):
    """There is nothing to undo under the given call or run id."""


@dataclass
class Change:
    name: str
    kind: ChangeKind
    before: Any = _MISSING  # the old value (rebound / deleted) or the copy (mutated)
    after: Any = _MISSING  # the value the call left behind
    after_fingerprint: Any = None
    copy_note: str | None = None  # why a mutated object has no copy

    @property
    def restorable(self) -> bool:
        return self.kind != "mutated" or self.before is not _MISSING


@dataclass
class CallRecord:
    tool_call_id: str
    run_id: str | None
    changes: list[Change] = field(default_factory=list)
    undone: bool = False


@dataclass
class Snapshot:
    """The state before one call (see :meth:`NamespaceUndo.before`)."""

    tool_call_id: str
    bindings: dict[str, Any]
    named: dict[str, tuple[Any, Any, Any, str | None]]  # name -> (object, fingerprint, copy, note)


class NamespaceUndo:
    """Records of the python calls of the last few runs over one namespace."""

    def __init__(
        self,
        namespace: dict[str, Any],
        hidden: set[str] | None = None,
        *,
        copy_budget_bytes: int = COPY_BUDGET_BYTES,
    ) -> None:
        self.namespace = namespace
        self.hidden = hidden or set()
        self.run_id: str | None = None
        self.copy_budget_bytes = copy_budget_bytes
        self._copy_budget = copy_budget_bytes
        self._records: OrderedDict[str, CallRecord] = OrderedDict()
        self._runs: list[str] = []

    def begin_run(self, run_id: str) -> None:
        """A new agent run: a fresh copy budget; records of old runs are dropped."""
        self.run_id = run_id
        self._copy_budget = self.copy_budget_bytes
        self._runs.append(run_id)
        while len(self._runs) > KEPT_RUNS:
            gone = self._runs.pop(0)
            for key in [k for k, r in self._records.items() if r.run_id == gone]:
                del self._records[key]

    # ------------------------------------------------------------------ recording

    def before(self, code: str, tool_call_id: str | None) -> Snapshot:
        # A plain dict copy and the values' ids: C-speed, so thousands of names cost little.
        bindings = dict(self.namespace)
        named: dict[str, tuple[Any, Any, Any, str | None]] = {}
        for name in sorted(names_in(code)):
            value = bindings.get(name, _MISSING)
            if value is _MISSING or not self._tracked(name):
                continue
            mark = fingerprint(value)
            if mark is None:
                continue
            kept, note = self._copy(value)
            named[name] = (value, mark, kept, note)
        call_id = tool_call_id or f"call-{uuid.uuid4().hex[:8]}"
        return Snapshot(call_id, bindings, named)

    def after(self, snapshot: Snapshot) -> CallRecord:
        ns = self.namespace
        record = CallRecord(snapshot.tool_call_id, self.run_id)
        old = snapshot.bindings
        added, rebound, deleted = _binding_changes(old, ns)
        for name in added:
            if self._tracked(name):
                record.changes.append(Change(name, "added", after=ns[name]))
        for name in rebound:
            if self._tracked(name):
                record.changes.append(Change(name, "rebound", before=old[name], after=ns[name]))
        for name in deleted:
            if self._tracked(name):
                record.changes.append(Change(name, "deleted", before=old[name]))
        for name, (obj, mark, kept, note) in snapshot.named.items():
            if ns.get(name, _MISSING) is not obj:
                continue  # rebound or deleted: listed above
            now = fingerprint(obj)
            if now != mark:
                record.changes.append(
                    Change(
                        name,
                        "mutated",
                        before=kept,
                        after=obj,
                        after_fingerprint=now,
                        copy_note=note,
                    )
                )
        if record.changes:
            self._records[record.tool_call_id] = record
        return record

    def _tracked(self, name: str) -> bool:
        return not name.startswith("_") and name not in self.hidden and name not in _IPYTHON_NAMES

    def _copy(self, value: Any) -> tuple[Any, str | None]:
        size = _shallow_size(value, self._copy_budget)
        if size > self._copy_budget:
            return _MISSING, (
                f"no copy kept: {_describe.human_bytes(size)} is over what is left of the "
                f"run's {_describe.human_bytes(self.copy_budget_bytes)} copy budget"
            )
        try:
            kept = value.copy() if hasattr(value, "copy") else copy.copy(value)
        except Exception as exc:
            return _MISSING, f"no copy kept: copying failed ({type(exc).__name__})"
        self._copy_budget -= size
        return kept, None

    # ------------------------------------------------------------------ undo

    def record(self, tool_call_id: str) -> CallRecord | None:
        return self._records.get(tool_call_id)

    def last_run_id(self) -> str | None:
        for record in reversed(self._records.values()):
            if not record.undone and record.run_id is not None:
                return record.run_id
        return None

    def undo(self, target: str | None = None) -> list[str]:
        """Undo one call (its tool call id) or a run (its id; default: the last run).

        Returns one line per change saying what was restored and what was not, and why.
        """
        if target is not None and target in self._records:
            records = [self._records[target]]
        else:
            run_id = target or self.last_run_id()
            records = [r for r in self._records.values() if r.run_id == run_id and run_id]
        records = [r for r in records if not r.undone]
        if not records:
            what = f"call or run {target!r}" if target else "the last run"
            raise UndoError(
                f"Nothing to undo for {what}: no recorded namespace changes that are not "
                "already undone (records of the last 3 runs are kept)."
            )
        lines: list[str] = []
        for record in reversed(records):
            for change in reversed(record.changes):
                lines.append(self._revert(change))
            record.undone = True
        return lines

    def _revert(self, change: Change) -> str:
        ns = self.namespace
        name = change.name
        current = ns.get(name, _MISSING)
        if change.kind == "deleted":
            if current is not _MISSING:
                return f"not restored: {name} (deleted by the call, defined again since)"
            ns[name] = change.before
            return f"restored: {name} = {describe(change.before)} (it was deleted)"
        if current is not change.after:
            return f"not restored: {name} (changed again since the call)"
        if change.kind == "added":
            del ns[name]
            return f"removed: {name} (added by the call)"
        if change.kind == "rebound":
            ns[name] = change.before
            return f"restored: {name} = {describe(change.before)}"
        if change.before is _MISSING:
            return f"NOT restorable: {name} was changed in place and {change.copy_note}"
        if fingerprint(current) != change.after_fingerprint:
            return f"not restored: {name} (changed again since the call)"
        how = _restore_in_place(current, change.before)
        if how is None:
            ns[name] = change.before
            return (
                f"restored: {name} (now the copy kept before the call; other references "
                "to the changed object still see the change)"
            )
        return f"restored: {name} ({how})"


def _binding_changes(
    old: dict[str, Any], now: dict[str, Any]
) -> tuple[list[str], list[str], list[str]]:
    """(added, rebound, deleted) names, by identity; C-speed in the common case.

    Dicts keep insertion order, so when nothing was deleted the old names are a prefix of the
    new ones: rebinding is then an identity comparison of two value sequences (``map`` over
    ``operator.is_not``) and the added names are the rest.
    """
    old_keys = list(old)
    new_keys = list(now)
    count = len(old_keys)
    if new_keys[:count] == old_keys:
        flags = map(operator.is_not, itertools.islice(now.values(), count), old.values())
        return new_keys[count:], list(itertools.compress(old_keys, flags)), []
    added = [name for name in new_keys if name not in old]
    rebound = [name for name in new_keys if name in old and now[name] is not old[name]]
    deleted = [name for name in old_keys if name not in now]
    return added, rebound, deleted


def _shallow_size(value: Any, budget: int) -> int:
    """Bytes a copy would take, without walking object columns (deep sizes are slow)."""
    try:
        if _describe.is_dataframe(value):
            if value.size > budget:  # a cell takes at least one byte: surely over
                return int(value.size)
            return int(value.memory_usage(index=True, deep=False).sum())
        if _describe.is_series(value) or _describe.is_ndarray(value):
            return int(value.nbytes)
        return sys.getsizeof(value)
    except Exception:
        return COPY_BUDGET_BYTES + 1


_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


def _restore_in_place(obj: Any, kept: Any) -> str | None:
    """Put ``kept``'s contents back into ``obj`` where the type allows; None otherwise."""
    if isinstance(obj, list):
        obj[:] = kept
    elif isinstance(obj, (dict, set)):
        obj.clear()
        obj.update(kept)
    elif _describe.is_ndarray(obj) and obj.shape == kept.shape and obj.dtype == kept.dtype:
        obj[...] = kept
    else:
        return None
    return "contents put back in place"


# --- describing and fingerprinting ---------------------------------------------------------------


def names_in(code: str) -> set[str]:
    """Names the code loads, stores, deletes or declares global: the objects it may touch."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Global):
            found.update(node.names)
    return found


def describe(value: Any) -> str:
    """Type and shape/len of a value, in a few words."""
    kind = type(value).__name__
    try:
        if _describe.is_dataframe(value):
            rows, cols = value.shape
            return f"DataFrame {rows}x{cols}"
        if _describe.is_series(value) or _describe.is_ndarray(value):
            return f"{kind} {'x'.join(str(n) for n in value.shape)}"
        if isinstance(value, (list, tuple, dict, set, frozenset, str, bytes)):
            return f"{kind} len {len(value)}"
    except Exception:
        return kind
    return kind


def fingerprint(value: Any) -> Any:
    """A cheap value that changes when ``value`` is changed in place; None: not tracked."""
    try:
        if _describe.is_dataframe(value) or _describe.is_series(value):
            return _frame_fingerprint(value)
        if _describe.is_ndarray(value):
            return _array_fingerprint(value)
        if isinstance(value, list | bytearray):
            if len(value) > CONTAINER_LIMIT:
                return None
            return (len(value), tuple(map(id, value)) if isinstance(value, list) else bytes(value))
        if isinstance(value, dict):
            if len(value) > CONTAINER_LIMIT:
                return None
            return (len(value), tuple((id(k), id(v)) for k, v in value.items()))
        if isinstance(value, set):
            if len(value) > CONTAINER_LIMIT:
                return None
            return (len(value), frozenset(map(id, value)))
    except Exception:
        return None
    return None


def _sample_positions(length: int) -> Any:
    numpy = sys.modules["numpy"]
    return numpy.unique(numpy.linspace(0, max(length - 1, 0), SAMPLE_ROWS).astype(numpy.int64))


def _frame_fingerprint(frame: Any) -> Any:
    is_frame = _describe.is_dataframe(frame)
    columns = tuple(map(str, frame.columns[:1000])) if is_frame else (str(frame.name),)
    dtypes = tuple(map(str, frame.dtypes.iloc[:1000])) if is_frame else (str(frame.dtype),)
    if frame.size <= EXACT_CELLS or len(frame) <= SAMPLE_ROWS:
        part = frame
    else:
        part = frame.iloc[_sample_positions(len(frame))]
    return (frame.shape, columns, dtypes, _values_digest(part.to_numpy()), _index_digest(part))


def _index_digest(part: Any) -> int:
    return hash(tuple(part.index.tolist()))


def _array_fingerprint(array: Any) -> Any:
    numpy = sys.modules["numpy"]
    pointer = array.__array_interface__["data"][0]
    if array.size <= EXACT_CELLS:
        sample = array
    else:
        sample = array[numpy.unravel_index(_sample_positions(array.size), array.shape)]
    return (array.shape, array.dtype.str, pointer, _values_digest(sample, by_identity=True))


def _values_digest(values: Any, *, by_identity: bool = False) -> int:
    """Hash of an array's values; object arrays by their items (identity for live arrays, whose
    items persist; value for the fresh boxes ``to_numpy`` makes of a frame's cells)."""
    if values.dtype != object:
        return hash(values.tobytes())
    items = values.ravel().tolist()
    if by_identity:
        return hash(tuple(map(id, items)))
    # NaN hashes by identity and each to_numpy() boxes it anew: give it one stable stand-in.
    return hash(tuple(item if item == item else _NAN for item in items))


def change_report(record: CallRecord) -> str | None:
    """The ``[namespace]`` section of a python result; None when nothing changed."""
    if not record.changes:
        return None
    groups: dict[str, list[str]] = {"added": [], "rebound": [], "deleted": [], "mutated": []}
    for change in record.changes:
        if change.kind == "added":
            groups["added"].append(f"{change.name} ({describe(change.after)})")
        elif change.kind == "rebound":
            groups["rebound"].append(
                f"{change.name} ({describe(change.after)}, was {describe(change.before)})"
            )
        elif change.kind == "deleted":
            groups["deleted"].append(f"{change.name} (was {describe(change.before)})")
        else:
            how = "copy kept" if change.restorable else "not restorable: " + str(change.copy_note)
            groups["mutated"].append(f"{change.name} ({describe(change.after)}, {how})")
    labels = {"added": "added", "rebound": "rebound", "deleted": "deleted",
              "mutated": "changed in place"}  # fmt: skip
    lines = [f"{labels[k]}: {', '.join(v)}" for k, v in groups.items() if v]
    return "[namespace]\n" + "\n".join(lines)
