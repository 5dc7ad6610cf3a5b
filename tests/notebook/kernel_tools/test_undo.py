"""Namespace undo: the python tool's change report and restoring calls and runs, in process."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import numpy as np
import pandas as pd
import pytest

from jupyter_codelia.notebook.kernel_tools import _fingerprint
from jupyter_codelia.notebook.kernel_tools._execute import UNFINISHED, StepFailed, run_steps
from jupyter_codelia.notebook.kernel_tools._fingerprint import NotTrackableError, fingerprint
from jupyter_codelia.notebook.kernel_tools.namespace import kernel_tools
from jupyter_codelia.notebook.kernel_tools.undo import NamespaceUndo, UndoError, names_in
from jupyter_codelia.tools import ToolContext, ToolResultData, ToolReturn


def begun(ns: dict[str, Any], **options: Any) -> NamespaceUndo:
    """Undo over ``ns`` with its first run begun."""
    undo = NamespaceUndo(ns, **options)
    undo.begin_run("run-1")
    return undo


async def run_python(
    ns: dict[str, Any], undo: NamespaceUndo, code: str, call_id: str, timeout: float = 0
) -> str:
    return (await run_python_data(ns, undo, code, call_id, timeout))[0]


async def run_python_data(
    ns: dict[str, Any], undo: NamespaceUndo, code: str, call_id: str, timeout: float = 0
) -> tuple[str, ToolResultData | None]:
    """The text the model reads and the data the application reads (None: nothing changed)."""
    (python,) = [t for t in kernel_tools(namespace=ns, undo=undo) if t.name == "python"]
    arguments: dict[str, Any] = {"code": code}
    if timeout:
        arguments["timeout_seconds"] = timeout
    result = await python.execute_raw(json.dumps(arguments), ToolContext(tool_call_id=call_id))
    if isinstance(result, ToolReturn):
        return str(result.value.text), result.data
    return str(result.text), None


@pytest.mark.asyncio
async def test_report_lists_added_rebound_deleted_and_mutated_names() -> None:
    ns: dict[str, Any] = {"keep": "old", "tmp": [1, 2], "items": [1], "frame": pd.DataFrame()}
    ns.update(pd=pd, np=np)
    undo = begun(ns)
    text, data = await run_python_data(
        ns,
        undo,
        "keep = 'new value'\ndel tmp\nitems.append(2)\nframe = pd.DataFrame({'a': [1, 2]})\n"
        "added = np.zeros((2, 3))",
        "call-1",
    )
    # The application reads the changes from the result's data (the cell panel's Undo).
    assert data is not None and data.namespace_changes is not None
    assert sorted((c.name, c.change) for c in data.namespace_changes) == [
        ("added", "added"),
        ("frame", "rebound"),
        ("items", "mutated"),
        ("keep", "rebound"),
        ("tmp", "deleted"),
    ]
    assert "[namespace]" in text
    assert "added: added (ndarray 2x3)" in text
    assert "rebound: keep (str len 9, was str len 3), frame (DataFrame 2x1, was DataFrame 0x0)" in (
        text
    )
    assert "deleted: tmp (was list len 2)" in text
    assert "changed in place: items (list len 2, copy kept)" in text


@pytest.mark.asyncio
async def test_undo_restores_a_call_and_never_claims_what_it_did_not_do() -> None:
    aliased: dict[str, int] = {"a": 1}
    ns: dict[str, Any] = {"keep": "old", "config": aliased, "x": 1, "y": 2}
    undo = begun(ns)
    await run_python(ns, undo, "keep = 'new'\nconfig['b'] = 2\nx = 10\ny = 20\ndel keep", "c1")
    ns["y"] = 99  # the user changed y again afterwards
    lines = undo.undo("c1")
    assert "restored: keep = str len 3 (it was deleted)" in lines
    assert "restored: config (contents put back in place)" in lines
    assert "restored: x = int" in lines
    assert "not restored: y (changed again since the call)" in lines
    assert ns["keep"] == "old" and ns["x"] == 1 and ns["y"] == 99
    assert aliased == {"a": 1}  # in place: every reference sees the old contents
    with pytest.raises(UndoError, match="Nothing to undo for call or run 'c1'"):
        undo.undo("c1")


@pytest.mark.asyncio
async def test_undo_of_a_run_reverts_its_calls_newest_first() -> None:
    ns: dict[str, Any] = {"n": 0}
    undo = begun(ns)
    await run_python(ns, undo, "n = 1", "c1")
    await run_python(ns, undo, "n = 2\nm = 5", "c2")
    undo.begin_run("run-2")
    await run_python(ns, undo, "z = 3", "c3")
    assert undo.undo() == ["removed: z (added by the call)"]
    # One line per name, newest change first; n goes back to its value before the run.
    assert undo.undo("run-1") == ["restored: n = int", "removed: m (added by the call)"]
    assert {k: v for k, v in ns.items() if k != "__builtins__"} == {"n": 0}
    with pytest.raises(UndoError, match="Nothing to undo for the last run"):
        undo.undo()


@pytest.mark.asyncio
async def test_in_place_dataframe_change_is_restored_and_over_budget_is_reported() -> None:
    frame = pd.DataFrame({"a": [1, 2, 3]})
    big = np.zeros(1000)
    ns: dict[str, Any] = {"df": frame, "big": big}
    undo = begun(ns, copy_budget_bytes=frame.memory_usage().sum() + 10)
    text = await run_python(ns, undo, "df['a'] = df['a'] * 10\nbig[0] = 5", "c1")
    assert "df (DataFrame 3x1, copy kept)" in text
    assert "big (ndarray 1000, not restorable: no copy kept: 7.8 KB is over what is left" in text
    lines = sorted(undo.undo("c1"))
    assert lines[0].startswith("NOT restorable: big was changed in place and no copy kept: 7.8 KB")
    assert lines[1] == (
        "restored: df (now the copy kept before the call; other references to the changed "
        "object still see the change)"
    )
    assert ns["df"]["a"].tolist() == [1, 2, 3]
    assert big[0] == 5


def test_fingerprint_sees_changes_of_big_frames_in_the_sample_and_of_containers() -> None:
    rows = 200_000  # 3.2 MB: over the exact-hash bound, so sampled
    frame = pd.DataFrame({"a": np.arange(rows, dtype=np.float64), "b": np.ones(rows)})
    mark = fingerprint(frame)
    frame.loc[0, "a"] = -1.0  # the first row is always sampled
    assert fingerprint(frame) != mark
    mark = fingerprint(frame)
    frame["c"] = 1
    assert fingerprint(frame) != mark
    listing = [1, 2]
    mark = fingerprint(listing)
    listing[0] = 3
    assert fingerprint(listing) != mark
    with pytest.raises(NotTrackableError, match="over 100,000 items"):
        fingerprint(list(range(_fingerprint.CONTAINER_LIMIT + 1)))
    assert fingerprint("a string") is None


def test_names_in_code() -> None:
    code = "x = y + 1\ndef f():\n    global z\n    z = 2\ndel w"
    assert names_in(code) == {"x", "y", "z", "w"}
    assert names_in("def broken(:") == set()


# --- undo never claims a restore it did not make ------------------------------------------------


class SelfCopyList(list[int]):
    def copy(self) -> SelfCopyList:  # type: ignore[override]
        return self


class SelfCopyArray(np.ndarray):
    def copy(self, order: Any = "C") -> SelfCopyArray:  # type: ignore[override]
        return self


class ViewCopyArray(np.ndarray):
    def copy(self, order: Any = "C") -> ViewCopyArray:  # type: ignore[override]
        return self.view(ViewCopyArray)  # shares the memory: not a copy


@pytest.mark.asyncio
async def test_a_copy_that_is_the_object_or_shares_it_is_not_kept() -> None:
    listing = SelfCopyList([1, 2])
    same = np.zeros(3).view(SelfCopyArray)
    shared = np.zeros(3).view(ViewCopyArray)
    ns: dict[str, Any] = {"l": listing, "same": same, "shared": shared}
    undo = begun(ns)
    text = await run_python(ns, undo, "l.append(3)\nsame[0] = 5\nshared[0] = 7", "c1")
    itself = "same (SelfCopyArray 3, not restorable: no copy kept: its copy() returned the object"
    assert itself in text
    assert "shared (ViewCopyArray 3, not restorable: no copy kept: the copy changed along " in text
    lines = undo.undo("c1")
    # The list's copy is taken without its copy(): a real one, put back and checked.
    assert "restored: l (contents put back in place)" in lines
    assert listing == [1, 2]
    assert any(line.startswith("NOT restorable: same was changed in place") for line in lines)
    assert any(line.startswith("NOT restorable: shared was changed in place") for line in lines)
    assert same[0] == 5 and shared[0] == 7


@pytest.mark.asyncio
async def test_undo_of_a_run_restores_a_value_changed_by_two_calls_from_the_oldest_copy() -> None:
    frame = pd.DataFrame({"a": [1, 2, 3]})
    ns: dict[str, Any] = {"df": frame, "items": [1]}
    undo = begun(ns)
    await run_python(ns, undo, "df.loc[0, 'a'] = 10\nitems.append(2)", "c1")
    await run_python(ns, undo, "df.loc[1, 'a'] = 20\nitems = 'rebound'", "c2")
    lines = undo.undo()
    assert lines == [
        "restored: df (now the copy kept before the call; other references to the changed "
        "object still see the change)",
        "restored: items = list len 1 (its contents put back in place)",
    ]
    assert ns["df"]["a"].tolist() == [1, 2, 3]
    assert ns["items"] == [1]


@pytest.mark.asyncio
async def test_one_object_under_two_names_is_restored_through_both() -> None:
    shared = [1]
    ns: dict[str, Any] = {"a": shared, "b": shared}
    undo = begun(ns)
    text = await run_python(ns, undo, "a.append(2)\nb.append(3)", "c1")
    assert "changed in place: a (list len 3, copy kept), b (the same object as a)" in text
    lines = undo.undo("c1")
    assert sorted(lines) == [
        "restored: a (contents put back in place; the same object as b)",
        "restored: b (contents put back in place)",
    ]
    assert ns["a"] is ns["b"] is shared and shared == [1]


class RaisingEq:
    def __eq__(self, other: object) -> bool:
        raise TypeError("no comparisons")

    __hash__ = object.__hash__


@pytest.mark.asyncio
async def test_in_place_changes_of_list_cells_and_of_objects_without_eq_are_seen() -> None:
    listed = pd.DataFrame({"n": [[1], [2]], "v": [1.5, 2.5]})
    odd = pd.DataFrame({"o": [RaisingEq(), RaisingEq()]})
    kept_odd = odd.loc[1, "o"]
    ns: dict[str, Any] = {"df": listed, "odd": odd, "RaisingEq": RaisingEq}
    undo = begun(ns)
    code = "df.loc[0, 'n'] = 99\nodd.loc[1, 'o'] = RaisingEq()"
    text = await run_python(ns, undo, code, "c1")
    assert "changed in place: df (DataFrame 2x2, copy kept), odd (DataFrame 2x1, copy kept)" in (
        text
    )
    lines = undo.undo("c1")
    restored = "(now the copy kept before the call; other references to the changed object still"
    assert sorted(lines) == [f"restored: df {restored} see the change)",
                             f"restored: odd {restored} see the change)"]  # fmt: skip
    assert ns["df"].loc[0, "n"] == [1]
    assert ns["odd"].loc[1, "o"] is kept_odd


@pytest.mark.asyncio
async def test_an_item_replaced_with_no_copy_budget_is_reported_although_its_id_is_reused() -> None:
    plain = [object() for _ in range(3)]
    ns: dict[str, Any] = {"plain": plain}
    undo = begun(ns, copy_budget_bytes=0)
    text = await run_python(ns, undo, "plain.pop()\nplain.append(object())", "c1")
    assert "changed in place: plain (list len 3, not restorable: no copy kept: " in text
    (line,) = undo.undo("c1")
    assert line.startswith("NOT restorable: plain was changed in place and no copy kept")


@pytest.mark.asyncio
async def test_an_array_made_read_only_since_is_restored_by_its_copy_and_undo_never_raises() -> (
    None
):
    array = np.zeros(3)
    ns: dict[str, Any] = {"arr": array}
    undo = begun(ns)
    await run_python(ns, undo, "arr[0] = 5", "c1")
    array.flags.writeable = False
    assert undo.undo("c1") == [
        "restored: arr (now the copy kept before the call, since putting it back in place "
        "failed (ValueError: assignment destination is read-only); other references to the "
        "changed object still see the change)"
    ]
    assert ns["arr"][0] == 0 and array[0] == 5
    with pytest.raises(UndoError, match="Nothing to undo"):
        undo.undo("c1")


@pytest.mark.asyncio
async def test_a_name_changed_again_since_is_left_alone_even_in_place() -> None:
    items = [1]
    ns: dict[str, Any] = {"items": items}
    undo = begun(ns)
    await run_python(ns, undo, "items.append(2)", "c1")
    items.append(3)  # the user's own cell, afterwards
    assert undo.undo("c1") == ["not restored: items (changed again since the call)"]
    assert items == [1, 2, 3]


# --- what cannot be tracked is said in the call's result --------------------------------------


class Model:
    def __init__(self) -> None:
        self.coef: list[float] = []


class BlockingArray(np.ndarray):
    """An array whose fingerprint (its __array_interface__) blocks: user code, out of reach."""

    release = threading.Event()

    @property
    def __array_interface__(self) -> dict[str, Any]:  # type: ignore[override]
        BlockingArray.release.wait(5)
        return super().__array_interface__


class FailingArray(np.ndarray):
    @property
    def __array_interface__(self) -> dict[str, Any]:  # type: ignore[override]
        raise RuntimeError("no interface today")


class BlockingCopyList(list[int]):
    """A list whose copy (either way of asking for one) blocks."""

    def copy(self) -> BlockingCopyList:  # type: ignore[override]
        threading.Event().wait(5)
        return BlockingCopyList(self)

    def __copy__(self) -> BlockingCopyList:
        return self.copy()


@pytest.mark.asyncio
async def test_what_is_not_tracked_is_said_in_the_calls_result() -> None:
    ns: dict[str, Any] = {
        "model": Model(),
        "huge": list(range(_fingerprint.CONTAINER_LIMIT + 1)),
        "failing": np.zeros(2).view(FailingArray),
        "n": 3,
        "np": np,
        "name": "text",
        "f": len,
    }
    undo = begun(ns)
    text = await run_python(
        ns, undo, "model.coef.append(n)\nlen(huge), failing.shape, f, np, name", "c1"
    )
    assert "[namespace]" not in text
    section = text.split("[not tracked for undo]\n", 1)[1].splitlines()
    assert section == [
        "failing (FailingArray 2): fingerprinting it failed (RuntimeError: no interface today)",
        "huge (list len 100001): over 100,000 items, too large to fingerprint",
        "model (Model): changes made inside it are not seen, only rebinding the name",
    ]
    with pytest.raises(UndoError):
        undo.undo("c1")


@pytest.mark.asyncio
async def test_slow_fingerprints_and_copies_count_against_the_timeout_and_are_reported() -> None:
    waiting = np.zeros(3).view(BlockingArray)
    slow_copy = BlockingCopyList([1])
    ns: dict[str, Any] = {"slow_copy": slow_copy, "waiting": waiting}
    undo = begun(ns)
    try:
        text = await run_python(ns, undo, "slow_copy.append(2)\nwaiting.shape", "c1", timeout=1)
    finally:
        BlockingArray.release.set()
    assert "[result]\n(3,)" in text
    assert (
        "waiting (BlockingArray 3): too large/slow: fingerprinting it took over the 50 ms budget"
    ) in text
    assert (
        "changed in place: slow_copy (BlockingCopyList len 2, not restorable: no copy kept: "
        "copying took over the 250 ms allowed for copies)"
    ) in text


@pytest.mark.asyncio
async def test_run_steps_returns_results_failures_and_what_did_not_finish() -> None:
    gate = threading.Event()
    ran: list[str] = []

    def blocked_in_native_code() -> None:
        gate.wait(10)
        ran.append("blocked")

    def later() -> str:
        ran.append("later")
        return "later"

    def failing() -> None:
        raise KeyError("k")

    quick = [lambda: "quick"] * 20
    try:
        results = await run_steps([lambda: 1, failing, blocked_in_native_code, *quick], 2.0)
    finally:
        gate.set()
    assert results[0] == 1
    assert isinstance(results[1], StepFailed) and isinstance(results[1].error, KeyError)
    # The blocked step ran into the time kept back for the 20 after it: abandoned, and they ran.
    assert results[2] is UNFINISHED
    assert results[3:] == ["quick"] * 20
    # With no time left for anything after the blocked step, nothing after it runs.
    gate.clear()
    try:
        results = await run_steps([blocked_in_native_code, later], 0.0)
    finally:
        gate.set()
    assert results == [UNFINISHED, UNFINISHED]
    await asyncio.sleep(0.1)
    assert "later" not in ran  # the thread was told to stop: it ran no further step


@pytest.mark.asyncio
async def test_a_value_changed_in_place_and_then_rebound_comes_back_with_its_old_contents() -> None:
    items = [1]
    ns: dict[str, Any] = {"items": items}
    undo = begun(ns)
    text = await run_python(ns, undo, "items.append(2)\nitems = ['new']", "c1")
    first = "rebound: items (list len 1, was list len 2, which the call changed in place first:"
    assert first in text
    assert undo.undo("c1") == ["restored: items = list len 1 (its contents put back in place)"]
    assert ns["items"] is items and items == [1]


@pytest.mark.asyncio
async def test_clear_forgets_every_record_and_the_values_they_kept() -> None:
    ns: dict[str, Any] = {"items": [1]}
    undo = begun(ns)
    await run_python(ns, undo, "items.append(2)\nbig = list(range(10))", "call-1")
    assert undo.record("call-1") is not None
    undo.clear()  # the session ended: nothing of its runs is kept
    assert undo.record("call-1") is None and undo.last_run_id() is None
    with pytest.raises(UndoError):
        undo.undo()
