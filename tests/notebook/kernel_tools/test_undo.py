"""Namespace undo: the python tool's change report and restoring calls and runs, in process."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from jupyter_codelia.notebook.kernel_tools import undo as undo_module
from jupyter_codelia.notebook.kernel_tools.namespace import kernel_tools
from jupyter_codelia.notebook.kernel_tools.undo import (
    NamespaceUndo,
    UndoError,
    fingerprint,
    names_in,
)
from jupyter_codelia.tools import ToolContext


async def run_python(ns: dict[str, Any], undo: NamespaceUndo, code: str, call_id: str) -> str:
    (python,) = [t for t in kernel_tools(namespace=ns, undo=undo) if t.name == "python"]
    result = await python.execute_raw(json.dumps({"code": code}), ToolContext(tool_call_id=call_id))
    return str(result.text)


@pytest.mark.asyncio
async def test_report_lists_added_rebound_deleted_and_mutated_names() -> None:
    ns: dict[str, Any] = {"keep": "old", "tmp": [1, 2], "items": [1], "frame": pd.DataFrame()}
    ns.update(pd=pd, np=np)
    undo = NamespaceUndo(ns)
    undo.begin_run("run-1")
    text = await run_python(
        ns,
        undo,
        "keep = 'new value'\ndel tmp\nitems.append(2)\nframe = pd.DataFrame({'a': [1, 2]})\n"
        "added = np.zeros((2, 3))",
        "call-1",
    )
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
    undo = NamespaceUndo(ns)
    undo.begin_run("run-1")
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
    undo = NamespaceUndo(ns)
    undo.begin_run("run-1")
    await run_python(ns, undo, "n = 1", "c1")
    await run_python(ns, undo, "n = 2\nm = 5", "c2")
    undo.begin_run("run-2")
    await run_python(ns, undo, "z = 3", "c3")
    assert undo.undo() == ["removed: z (added by the call)"]
    assert undo.undo("run-1") == [
        # c2 first (its own changes in any order), then c1.
        "restored: n = int",
        "removed: m (added by the call)",
        "restored: n = int",
    ]
    assert {k: v for k, v in ns.items() if k != "__builtins__"} == {"n": 0}
    with pytest.raises(UndoError, match="Nothing to undo for the last run"):
        undo.undo()


@pytest.mark.asyncio
async def test_in_place_dataframe_change_is_restored_and_over_budget_is_reported() -> None:
    frame = pd.DataFrame({"a": [1, 2, 3]})
    big = np.zeros(1000)
    ns: dict[str, Any] = {"df": frame, "big": big}
    undo = NamespaceUndo(ns, copy_budget_bytes=frame.memory_usage().sum() + 10)
    undo.begin_run("run-1")
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
    assert fingerprint(list(range(undo_module.CONTAINER_LIMIT + 1))) is None
    assert fingerprint("a string") is None


def test_names_in_code() -> None:
    code = "x = y + 1\ndef f():\n    global z\n    z = 2\ndel w"
    assert names_in(code) == {"x", "y", "z", "w"}
    assert names_in("def broken(:") == set()
