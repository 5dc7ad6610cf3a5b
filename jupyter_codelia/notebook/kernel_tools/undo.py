"""Undo for the namespace: what each ``python`` call changed, and putting it back.

Before a call, :meth:`NamespaceUndo.before` keeps the namespace's bindings (a shallow copy of the
dict: cheap even for thousands of names) and, for the objects the code *names*, a fingerprint
(``_fingerprint.py``) and, while the run's copy budget lasts, a copy. Afterwards
:meth:`NamespaceUndo.after` lists the names added, rebound and deleted, the named objects whose
fingerprint changed (changed in place), and the named objects it could not track, with why.
:meth:`NamespaceUndo.undo` puts back a call or a whole run.

Fingerprints and copies may run user code (a subclass's ``copy()``, a frame column's objects) and
can be slow for odd objects, so they run on a worker thread under a time budget that counts
against the call's timeout and never holds up the agent's event loop: each fingerprint pass gets
``FINGERPRINT_SECONDS`` or ``FINGERPRINT_SHARE`` of the call's running time, whichever is larger;
the copies ``COPY_SECONDS``, at most ``COPY_SHARE`` of the timeout. A name not fingerprinted in
time is reported in the call's result as not tracked.

Undo never claims what it did not do. A run is undone name by name, from the run's last change
of the name back to the state before its first one, so a value changed by several calls is
restored from the oldest copy. A name changed again since (rebound, or its object changed in
place: the fingerprint differs from the one the call left) is left alone and reported. An object
changed in place is put back from its copy, in place where the type allows (lists, dicts, sets,
arrays) and else by binding the name to the copy, and the result is checked: the object's
fingerprint must be the one it had before the call, the copy's the one it had when taken. A name
that cannot be put back is reported with the reason; undo itself never raises for one.
"""

from __future__ import annotations

import ast
import copy
import functools
import itertools
import operator
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..._text import clip_chars, describe_exc
from ...errors import CodeliaError
from . import _describe
from ._execute import UNFINISHED, StepFailed, run_steps
from ._fingerprint import (
    FingerprintTimeoutError,
    Mark,
    NotTrackableError,
    fingerprint,
    runs_no_user_code,
    shallow_size,
)

COPY_BUDGET_BYTES = 100 * 1024 * 1024
"""Copies kept per run for restoring in-place changes; larger objects are not copied."""
FINGERPRINT_SECONDS = 0.05
FINGERPRINT_SHARE = 0.05
"""Each fingerprint pass (before, after the code) may take this much of the call, or
``FINGERPRINT_SECONDS``, whichever is larger; before the code its running time is not known."""
COPY_SECONDS = 1.0
COPY_SHARE = 0.25
INLINE_COPY_BYTES = 1024 * 1024
"""Copies up to this size of types that run no user code are made on the loop (a thread would
cost more); bigger ones on the worker thread, so the loop is never held up for long."""
"""Copying before a call may take ``COPY_SECONDS``, at most this share of the call's timeout."""
KEPT_RUNS = 3
"""Runs whose records (and so old values and copies) are kept for undo; all are dropped when
the session ends (``%codelia --new``, ``--resume``)."""

_MISSING: Any = object()
ChangeKind = Literal["added", "rebound", "deleted", "mutated"]
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
_REASON_CHARS = 200
_CONTAINERS = (list, dict, set, bytearray)


class UndoError(CodeliaError, LookupError):
    """There is nothing to undo under the given call or run id."""


@dataclass
class Mutation:
    """One object a call changed in place, and what putting it back needs."""

    obj: Any
    after_mark: Mark
    before_mark: Mark | None = None  # with a copy: what a restore must give back
    kept: Any = _MISSING
    kept_mark: Mark | None = None
    copy_note: str | None = None  # why there is no copy

    @property
    def restorable(self) -> bool:
        return self.kept is not _MISSING


@dataclass
class Change:
    name: str
    kind: ChangeKind
    before: Any = _MISSING  # what the name was bound to before the call
    after: Any = _MISSING  # and after it (the same object when changed in place)
    # "mutated": the object's change; "rebound"/"deleted": the old value's, when the call also
    # changed it in place before letting go of it.
    mutation: Mutation | None = None
    same_as: str | None = None  # another name of the same object changed in place


@dataclass
class Untracked:
    """A name the call used whose in-place changes undo could not see."""

    name: str
    description: str
    reason: str


@dataclass
class CallRecord:
    tool_call_id: str
    run_id: str | None
    changes: list[Change] = field(default_factory=list)
    untracked: list[Untracked] = field(default_factory=list)
    undone: bool = False


@dataclass
class _Entry:
    """One object the code names, as it was before the call."""

    obj: Any
    names: list[str]
    mark: Mark | None = None
    kept: Any = _MISSING
    kept_mark: Mark | None = None
    copy_note: str | None = None


@dataclass
class Snapshot:
    """The state before one call (see :meth:`NamespaceUndo.before`)."""

    tool_call_id: str
    bindings: dict[str, Any]
    entries: list[_Entry]
    untracked: list[Untracked]


@dataclass
class _Copy:
    kept: Any = _MISSING
    kept_mark: Mark | None = None
    size: int = 0
    note: str | None = None


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

    def clear(self) -> None:
        """Forget every record (and so the old values and copies they keep): the session whose
        runs they undo has ended."""
        self._records.clear()
        self._runs.clear()
        self.run_id = None

    # ------------------------------------------------------------------ recording

    async def before(self, code: str, tool_call_id: str | None, *, timeout: float) -> Snapshot:
        """Bindings, fingerprints and copies before a call whose timeout is ``timeout``."""
        # A plain dict copy: C-speed, so thousands of names cost little.
        bindings = dict(self.namespace)
        entries: dict[int, _Entry] = {}
        for name in sorted(names_in(code)):
            value = bindings.get(name, _MISSING)
            if value is _MISSING or not self._tracked(name):
                continue
            entry = entries.get(id(value))
            if entry is None:
                entries[id(value)] = _Entry(value, [name])
            else:
                entry.names.append(name)
        untracked: list[Untracked] = []
        named = await self._fingerprint_all(list(entries.values()), FINGERPRINT_SECONDS)
        for entry, outcome in zip(entries.values(), named, strict=True):
            if isinstance(outcome, str):
                untracked += _untracked(entry, outcome)
            elif outcome is not None:
                entry.mark = outcome
        tracked = [entry for entry in entries.values() if entry.mark is not None]
        await self._copy_all(tracked, min(COPY_SECONDS, COPY_SHARE * timeout))
        call_id = tool_call_id or f"call-{uuid.uuid4().hex[:8]}"
        return Snapshot(call_id, bindings, tracked, untracked)

    async def after(self, snapshot: Snapshot, *, ran_seconds: float) -> CallRecord:
        """What the call changed; ``ran_seconds``: how long its code ran."""
        ns = self.namespace
        record = CallRecord(snapshot.tool_call_id, self.run_id)
        seconds = max(FINGERPRINT_SECONDS, FINGERPRINT_SHARE * ran_seconds)
        deadline = time.monotonic() + seconds

        def check(entry: _Entry) -> tuple[Mark | None, Mark | None]:
            now = fingerprint(entry.obj, deadline)
            if now == entry.mark or entry.kept is _MISSING:
                return now, None
            return now, fingerprint(entry.kept, deadline)  # did the copy change along?

        checks = await _run_each(snapshot.entries, check, deadline)
        mutations: dict[int, Mutation] = {}
        untracked = list(snapshot.untracked)
        for entry, outcome in zip(snapshot.entries, checks, strict=True):
            problem = _problem(outcome, seconds, "checking it after the call")
            if problem is not None:
                untracked += _untracked(entry, problem)
                continue
            now, kept_now = outcome
            if now != entry.mark:
                mutations[id(entry.obj)] = _mutation(entry, now, kept_now)
        old = snapshot.bindings
        added, rebound, deleted = _binding_changes(old, ns)
        for name in filter(self._tracked, added):
            record.changes.append(Change(name, "added", after=ns[name]))
        for name in filter(self._tracked, rebound):
            mutation = _mutation_of(mutations, old[name])
            record.changes.append(Change(name, "rebound", old[name], ns[name], mutation))
        for name in filter(self._tracked, deleted):
            mutation = _mutation_of(mutations, old[name])
            record.changes.append(Change(name, "deleted", before=old[name], mutation=mutation))
        for entry in snapshot.entries:
            mutation = mutations.get(id(entry.obj))
            still = [name for name in entry.names if ns.get(name, _MISSING) is entry.obj]
            for index, name in enumerate(still if mutation is not None else ()):
                same_as = still[0] if index else None
                change = Change(name, "mutated", entry.obj, entry.obj, mutation, same_as)
                record.changes.append(change)
        # A name the call rebound or deleted is covered by that; notes are for the rest.
        record.untracked = [u for u in untracked if ns.get(u.name, _MISSING) is old.get(u.name)]
        if record.changes:
            self._records[record.tool_call_id] = record
        return record

    async def _fingerprint_all(self, entries: list[_Entry], seconds: float) -> list[Any]:
        """Per entry: its mark, None (nothing to track) or why it is not tracked."""
        deadline = time.monotonic() + seconds
        outcomes = await _run_each(entries, lambda e: fingerprint(e.obj, deadline), deadline)
        problems = [_problem(outcome, seconds, "fingerprinting it") for outcome in outcomes]
        return [o if p is None else p for o, p in zip(outcomes, problems, strict=True)]

    async def _copy_all(self, entries: list[_Entry], seconds: float) -> None:
        """Copy what the run's copy budget allows, each copy checked by its own fingerprint."""
        left = self._copy_budget
        deadline = time.monotonic() + seconds

        def copy_one(entry: _Entry) -> _Copy:
            nonlocal left
            size = shallow_size(entry.obj)
            if size > left:
                return _Copy(
                    note=f"no copy kept: {_describe.human_bytes(size)} is over what is left of "
                    f"the run's {_describe.human_bytes(self.copy_budget_bytes)} copy budget"
                )
            kept = _copy_of(entry.obj)
            if kept is entry.obj:
                return _Copy(note="no copy kept: its copy() returned the object itself")
            kept_mark = fingerprint(kept, deadline)
            # Array and frame marks hold addresses and label objects, so only a container's
            # mark compares with its copy's: one that differs is not a copy.
            if isinstance(entry.obj, _CONTAINERS) and kept_mark != entry.mark:
                return _Copy(note="no copy kept: its copy does not hold the same items")
            left -= size
            return _Copy(kept, kept_mark, size)

        def quick(entry: _Entry) -> bool:
            # Small copies, and refusals over the budget, of types that run no user code.
            if not runs_no_user_code(entry.obj):
                return False
            size = shallow_size(entry.obj)
            return size <= INLINE_COPY_BYTES or size > left

        copies = await _run_each(entries, copy_one, deadline, inline=quick)
        for entry, outcome in zip(entries, copies, strict=True):
            if isinstance(outcome, _Copy):
                entry.kept, entry.kept_mark, entry.copy_note = (
                    outcome.kept,
                    outcome.kept_mark,
                    outcome.note,
                )
                self._copy_budget -= outcome.size
            elif outcome is UNFINISHED:
                entry.copy_note = (
                    f"no copy kept: copying took over the {_ms(seconds)} allowed for copies"
                )
            else:
                entry.copy_note = f"no copy kept: copying failed ({_reason(outcome.error)})"

    def _tracked(self, name: str) -> bool:
        return not name.startswith("_") and name not in self.hidden and name not in _IPYTHON_NAMES

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

        Returns one line per name saying what was restored and what was not, and why.
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
                f"already undone (records of the last {KEPT_RUNS} runs are kept)."
            )
        changes = [change for record in records for change in record.changes]
        history: dict[str, list[Change]] = {}
        for change in changes:
            history.setdefault(change.name, []).append(change)
        restorer = _Restorer(self.namespace, changes)
        newest_first = sorted(history, key=lambda name: _last_index(changes, name), reverse=True)
        lines = [restorer.restore(name, history[name]) for name in newest_first]
        for record in records:
            record.undone = True
        return lines


class _Restorer:
    """Puts names back to their state before a set of changes, one name at a time."""

    def __init__(self, namespace: dict[str, Any], changes: list[Change]) -> None:
        self.ns = namespace
        # Per object changed in place: its mutations, oldest first, each once.
        self.mutations: dict[int, list[Mutation]] = {}
        for change in changes:
            if change.mutation is not None:
                found = self.mutations.setdefault(id(change.mutation.obj), [])
                if all(known is not change.mutation for known in found):
                    found.append(change.mutation)
        # Per object whose contents were put back: how, and the first name restored with it.
        self.contents: dict[int, tuple[_Contents, str]] = {}

    def restore(self, name: str, changes: list[Change]) -> str:
        try:
            return self._restore(name, changes)
        except Exception as exc:
            return f"not restored: {name} (restoring failed: {_reason(exc)})"

    def _restore(self, name: str, changes: list[Change]) -> str:
        current = self.ns.get(name, _MISSING)
        first, last = changes[0], changes[-1]
        if current is not last.after:
            if last.kind == "deleted":
                return f"not restored: {name} (deleted by the call, defined again since)"
            return f"not restored: {name} (changed again since the call)"
        for earlier, later in itertools.pairwise(changes):
            if later.before is not earlier.after:
                return f"not restored: {name} (changed by something else between the calls)"
        value = first.before
        if value is _MISSING:
            del self.ns[name]
            return f"removed: {name} (added by the call)"
        contents = self._contents_of(name, value)
        if contents is not None and contents.failure is not None:
            if contents.unrestorable:
                return f"NOT restorable: {name} was changed in place and {contents.failure}"
            return f"not restored: {name} ({contents.failure})"
        if contents is not None and contents.replacement is not _MISSING:
            value = contents.replacement
        self.ns[name] = value
        if self.ns.get(name, _MISSING) is not value:
            return f"not restored: {name} (the namespace did not keep the value put back)"
        if contents is not None and contents.replacement is not _MISSING:
            return (
                f"restored: {name} (now the copy kept before the call{contents.why}; other "
                "references to the changed object still see the change)"
            )
        alias = self.contents.get(id(value), (None, name))[1]
        same = f"; the same object as {alias}" if alias != name else ""
        if contents is not None and current is value:
            return f"restored: {name} (contents put back in place{same})"
        restored = f"restored: {name} = {describe(value)}"
        notes = ["it was deleted"] if current is _MISSING else []
        if contents is not None:
            notes.append(f"its contents put back in place{same}")
        return restored + (f" ({'; '.join(notes)})" if notes else "")

    def _contents_of(self, name: str, obj: Any) -> _Contents | None:
        """Put back ``obj``'s contents if the changes changed it in place (once per object)."""
        mutations = self.mutations.get(id(obj))
        if not mutations or mutations[0].obj is not obj:
            return None
        done = self.contents.get(id(obj))
        if done is None:
            done = (_put_back(obj, mutations), name)
            self.contents[id(obj)] = done
        return done[0]


@dataclass
class _Contents:
    """How an object's contents were put back: in place, by a copy to bind, or not at all."""

    replacement: Any = _MISSING  # the copy the names get when not in place
    why: str = ""  # why not in place, for the line
    failure: str | None = None  # why not restored
    unrestorable: bool = False  # no copy was kept: it never could be


def _put_back(obj: Any, mutations: list[Mutation]) -> _Contents:
    first, last = mutations[0], mutations[-1]
    if _mark_or_none(obj) != last.after_mark:
        return _Contents(failure="changed again since the call")
    for earlier, later in itertools.pairwise(mutations):
        if later.before_mark is not None and later.before_mark != earlier.after_mark:
            return _Contents(failure="changed by something else between the calls")
    if not first.restorable:
        return _Contents(failure=str(first.copy_note), unrestorable=True)
    if _mark_or_none(first.kept) != first.kept_mark:
        return _Contents(failure="the copy kept before the call has changed since")
    try:
        in_place = _restore_in_place(obj, first.kept)
    except Exception as exc:
        why = f", since putting it back in place failed ({_reason(exc)})"
        return _Contents(replacement=first.kept, why=why)
    if not in_place:
        return _Contents(replacement=first.kept)
    if _mark_or_none(obj) != first.before_mark:
        why = ", since putting it back in place did not give back the old contents"
        return _Contents(replacement=first.kept, why=why)
    return _Contents()


def _mark_or_none(value: Any) -> Mark | None:
    try:
        return fingerprint(value)
    except NotTrackableError:
        return None


def _restore_in_place(obj: Any, kept: Any) -> bool:
    """Put ``kept``'s contents back into ``obj`` where the type allows; False otherwise."""
    if isinstance(obj, list | bytearray):
        obj[:] = kept
    elif isinstance(obj, dict | set):
        obj.clear()
        obj.update(kept)
    elif _describe.is_ndarray(obj) and obj.shape == kept.shape and obj.dtype == kept.dtype:
        obj[...] = kept
    else:
        return False
    return True


def _copy_of(value: Any) -> Any:
    if _describe.is_dataframe(value) or _describe.is_series(value):
        return value.copy(deep=True)
    if _describe.is_ndarray(value) or type(value) in (list, dict, set, bytearray):
        return value.copy()
    return copy.copy(value)  # a subclass: keeps its type, without trusting its copy()


def _mutation(entry: _Entry, now: Mark | None, kept_now: Mark | None) -> Mutation:
    assert now is not None  # a mark that changed was a mark
    mutation = Mutation(entry.obj, now, copy_note=entry.copy_note or "no copy kept")
    if entry.kept is _MISSING:
        return mutation
    if kept_now != entry.kept_mark:
        mutation.copy_note = (
            "no copy kept: the copy changed along with the object (its copy() shares contents)"
        )
        return mutation
    mutation.before_mark, mutation.kept, mutation.kept_mark = entry.mark, entry.kept, kept_now
    mutation.copy_note = None
    return mutation


def _mutation_of(mutations: dict[int, Mutation], value: Any) -> Mutation | None:
    mutation = mutations.get(id(value))
    return mutation if mutation is not None and mutation.obj is value else None


def _problem(outcome: Any, seconds: float, doing: str) -> str | None:
    """Why a fingerprint step gave no mark (``doing`` names the step), or None when it did."""
    error = outcome.error if isinstance(outcome, StepFailed) else None
    if outcome is UNFINISHED or isinstance(error, FingerprintTimeoutError):
        return f"too large/slow: {doing} took over the {_ms(seconds)} budget"
    if isinstance(error, NotTrackableError):
        return str(error)
    if error is not None:
        return f"{doing} failed ({_reason(error)})"
    return None


def _untracked(entry: _Entry, reason: str) -> list[Untracked]:
    return [Untracked(name, describe(entry.obj), reason) for name in entry.names]


def _no_user_code(entry: _Entry) -> bool:
    return runs_no_user_code(entry.obj)


async def _run_each(
    entries: list[_Entry],
    step: Callable[[_Entry], Any],
    deadline: float,
    *,
    inline: Callable[[_Entry], bool] = _no_user_code,
) -> list[Any]:
    """``step(entry)`` for each entry, as :func:`run_steps` reports it, by ``deadline``.

    Entries ``inline`` accepts (by default those whose step runs no user code) run right here:
    bounded by their size and the deadline checks, and a thread would cost more than they do.
    The others run on a worker thread for the time that is left.
    """
    results: list[Any] = [UNFINISHED] * len(entries)
    later: list[int] = []
    for index, entry in enumerate(entries):
        if not inline(entry):
            later.append(index)
            continue
        try:
            results[index] = step(entry)
        except Exception as exc:
            results[index] = StepFailed(exc)
    if later:
        left = max(deadline - time.monotonic(), 0.0)
        steps = [functools.partial(step, entries[index]) for index in later]
        outcomes = await run_steps(steps, left, name="codelia-undo")
        for index, outcome in zip(later, outcomes, strict=True):
            results[index] = outcome
    return results


def _reason(exc: BaseException) -> str:
    return clip_chars(describe_exc(exc), _REASON_CHARS)


def _ms(seconds: float) -> str:
    return f"{round(seconds * 1000):,} ms"


def _last_index(changes: list[Change], name: str) -> int:
    return max(index for index, change in enumerate(changes) if change.name == name)


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


# --- describing and reporting ---------------------------------------------------------------


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


_SIZED: tuple[Any, ...] = (list, tuple, dict, set, frozenset, str, bytes, bytearray)


def describe(value: Any) -> str:
    """Type and shape/len of a value, in a few words (a subclass's ``__len__`` is not run)."""
    kind = type(value).__name__
    try:
        if _describe.is_dataframe(value):
            rows, cols = value.shape
            return f"DataFrame {rows}x{cols}"
        if _describe.is_series(value) or _describe.is_ndarray(value):
            return f"{kind} {'x'.join(str(n) for n in value.shape)}"
        for base in _SIZED:
            if isinstance(value, base):
                return f"{kind} len {base.__len__(value)}"
    except Exception:
        return kind
    return kind


def change_report(record: CallRecord) -> str | None:
    """The ``[namespace]`` section of a python result; None when nothing changed."""
    if not record.changes:
        return None
    groups: dict[str, list[str]] = {"added": [], "rebound": [], "deleted": [], "mutated": []}
    for change in record.changes:
        if change.kind == "added":
            groups["added"].append(f"{change.name} ({describe(change.after)})")
        elif change.kind == "rebound":
            was = describe(change.before) + _also_changed(change.mutation)
            groups["rebound"].append(f"{change.name} ({describe(change.after)}, was {was})")
        elif change.kind == "deleted":
            was = describe(change.before) + _also_changed(change.mutation)
            groups["deleted"].append(f"{change.name} (was {was})")
        elif change.same_as is not None:
            groups["mutated"].append(f"{change.name} (the same object as {change.same_as})")
        else:
            groups["mutated"].append(
                f"{change.name} ({describe(change.after)}, {_copy_state(change.mutation)})"
            )
    labels = {"added": "added", "rebound": "rebound", "deleted": "deleted",
              "mutated": "changed in place"}  # fmt: skip
    lines = [f"{labels[k]}: {', '.join(v)}" for k, v in groups.items() if v]
    return "[namespace]\n" + "\n".join(lines)


def untracked_report(record: CallRecord) -> str | None:
    """The ``[not tracked for undo]`` section: names whose in-place changes were not seen."""
    if not record.untracked:
        return None
    lines = [f"{u.name} ({u.description}): {u.reason}" for u in record.untracked]
    return "[not tracked for undo]\n" + "\n".join(lines)


def _copy_state(mutation: Mutation | None) -> str:
    if mutation is None or mutation.restorable:
        return "copy kept"
    return f"not restorable: {mutation.copy_note}"


def _also_changed(mutation: Mutation | None) -> str:
    if mutation is None:
        return ""
    return f", which the call changed in place first: {_copy_state(mutation)}"
