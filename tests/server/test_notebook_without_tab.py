"""The kernel's notebook requests answered by the server with no tab open (contents backend).

A real jupyter server (pytest-jupyter, in this process) and its real contents manager on a
temporary root; the files are read back with nbformat. The person's concurrent writes go
through the server's REST contents API, as a tab or another editor would save. Tests carry no
``asyncio`` mark: pytest-jupyter runs them on its server's loop (see test_handlers.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_codelia.server.notebook_doc import (
    REVIEW_SOURCE_LIMIT,
    CellRunResult,
    CellToRun,
    NotebookDoc,
    source_hash,
)
from jupyter_codelia.wire import NotebookReply, NotebookRequest

PROVENANCE = {"session_id": "s1", "run_id": "r1", "tool_call_id": "t1", "model": "m", "at": "x"}


def write_notebook(root: Path, name: str, sources: list[str], **extra: Any) -> Path:
    cells = [nbformat.v4.new_code_cell(source, id=f"c{i}") for i, source in enumerate(sources)]
    notebook = nbformat.v4.new_notebook(cells=cells, **extra)
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


def on_disk(path: Path) -> list[dict[str, Any]]:
    return list(nbformat.read(path, as_version=4)["cells"])


async def ask(doc: NotebookDoc, action: str, **params: Any) -> NotebookReply:
    request = NotebookRequest(request_id="q", client_id="", action=action, params=params)  # type: ignore[arg-type]
    reply = await doc.answer(request)
    assert reply.reply_to == "q"
    return reply


async def ok(doc: NotebookDoc, action: str, **params: Any) -> dict[str, Any]:
    reply = await ask(doc, action, **params)
    assert reply.ok, reply.error
    assert reply.result is not None
    return reply.result


async def refused(doc: NotebookDoc, action: str, **params: Any) -> NotebookReply:
    reply = await ask(doc, action, **params)
    assert not reply.ok and reply.result is None and reply.error
    dumped = reply.dump()
    assert dumped["type"] == "notebook.reply" and "result" not in dumped
    return reply


@pytest.fixture
def doc_for(jp_serverapp: Any, jp_root_dir: Path) -> Any:
    def make(name: str, **kwargs: Any) -> NotebookDoc:
        doc = NotebookDoc.for_server(jp_serverapp, name, **kwargs)
        assert doc.backend == "contents", "jupyter-collaboration is not enabled here"
        return doc

    return make


# ---------------------------------------------------------------------- snapshot


async def test_a_snapshot_has_the_tabs_shape(doc_for: Any, jp_root_dir: Path) -> None:
    path = write_notebook(jp_root_dir, "work/a.ipynb", ["x = 1", "print(x)"])
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    notebook.cells[1].execution_count = 3
    notebook.cells[0].metadata["codelia"] = {**PROVENANCE, "review": {"after_hash": "0"}}
    notebook.cells.append(nbformat.v4.new_markdown_cell("# Title", id="m0"))
    nbformat.write(notebook, path)

    result = await ok(doc_for("work/a.ipynb"), "snapshot", outputs_for=["c1"])

    assert result["path"] == "work/a.ipynb"
    assert (result["active_cell_id"], result["editing_cell_id"], result["dirty"]) == (
        None,
        None,
        False,
    )
    first, second, third = result["cells"]
    assert first == {
        "id": "c0",
        "cell_type": "code",
        "source": "x = 1",
        "metadata": {"codelia": PROVENANCE},  # the review part stays the card's
        "execution_count": None,
        "running": False,
        "output_types": [],
    }
    assert second["output_types"] == ["stream"] and second["execution_count"] == 3
    assert second["outputs"][0]["text"] == "1\n"
    assert third == {"id": "m0", "cell_type": "markdown", "source": "# Title", "metadata": {}}
    everything = await ok(doc_for("work/a.ipynb"), "snapshot", outputs_for="all")
    assert "outputs" in everything["cells"][0] and "outputs" not in third


# ---------------------------------------------------------------------- edits and revert


async def test_insert_replace_move_delete_then_revert_each(doc_for: Any, jp_root_dir: Path) -> None:
    path = write_notebook(jp_root_dir, "b.ipynb", ["a = 1", "b = 2"])
    doc = doc_for("b.ipynb")

    inserted = await ok(
        doc,
        "edit",
        op="insert",
        index=1,
        cell_type="markdown",
        source="# Hi",
        provenance=PROVENANCE,
    )
    assert inserted["index"] == 1 and set(inserted) == {"edit_id", "cell_id", "index"}
    cells = on_disk(path)
    assert [c["source"] for c in cells] == ["a = 1", "# Hi", "b = 2"]
    assert cells[1]["id"] == inserted["cell_id"] and cells[1]["cell_type"] == "markdown"
    assert cells[1]["metadata"]["codelia"] == {
        **PROVENANCE,
        "review": {"after_hash": source_hash("# Hi"), "before": None},
    }

    replaced = await ok(
        doc,
        "edit",
        op="replace",
        cell_id="c1",
        expected_source="b = 2",
        source="b = 3",
        provenance=PROVENANCE,
    )
    assert replaced["cell_id"] == "c1" and replaced["index"] == 2
    review = on_disk(path)[2]["metadata"]["codelia"]["review"]
    assert review == {"after_hash": source_hash("b = 3"), "before": "b = 2"}
    # A second unaccepted edit keeps the source from before the first one.
    await ok(
        doc,
        "edit",
        op="replace",
        cell_id="c1",
        expected_source="b = 3",
        source="b = 4",
        provenance=PROVENANCE,
    )
    assert on_disk(path)[2]["metadata"]["codelia"]["review"]["before"] == "b = 2"

    moved = await ok(doc, "edit", op="move", cell_id="c0", index=2)
    assert moved["index"] == 2
    assert [c["id"] for c in on_disk(path)] == [inserted["cell_id"], "c1", "c0"]
    deleted = await ok(doc, "edit", op="delete", cell_id="c1", expected_source="b = 4")
    assert [c["id"] for c in on_disk(path)] == [inserted["cell_id"], "c0"]

    for edit in (deleted, moved):
        assert await ok(doc, "revert", edit_id=edit["edit_id"]) == {}
    assert [c["source"] for c in on_disk(path)] == ["a = 1", "# Hi", "b = 4"]
    await ok(doc, "revert", edit_id=inserted["edit_id"])
    assert [c["id"] for c in on_disk(path)] == ["c0", "c1"]

    again = await refused(doc, "revert", edit_id=inserted["edit_id"])
    assert again.error_kind == "refused"
    assert again.error == "this edit is unknown or already reverted"


async def test_revert_of_a_replace_restores_source_and_provenance(
    doc_for: Any, jp_root_dir: Path
) -> None:
    path = write_notebook(jp_root_dir, "c.ipynb", ["old"])
    doc = doc_for("c.ipynb")
    edit = await ok(
        doc,
        "edit",
        op="replace",
        cell_id="c0",
        expected_source="old",
        source="new",
        provenance=PROVENANCE,
    )
    await ok(doc, "revert", edit_id=edit["edit_id"])
    cell = on_disk(path)[0]
    assert cell["source"] == "old" and "codelia" not in cell["metadata"]


async def test_a_long_earlier_source_is_not_kept_in_the_review(
    doc_for: Any, jp_root_dir: Path
) -> None:
    long = "x" * (REVIEW_SOURCE_LIMIT + 1)
    path = write_notebook(jp_root_dir, "long.ipynb", [long])
    await ok(
        doc_for("long.ipynb"),
        "edit",
        op="replace",
        cell_id="c0",
        expected_source=long,
        source="short",
        provenance=PROVENANCE,
    )
    review = on_disk(path)[0]["metadata"]["codelia"]["review"]
    assert review == {"after_hash": source_hash("short"), "before_omitted": True}


async def test_cells_without_ids_get_them_on_the_first_write(
    doc_for: Any, jp_root_dir: Path
) -> None:
    path = jp_root_dir / "old.ipynb"
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 4,
        "metadata": {},
        "cells": [
            {"cell_type": "code", "source": ["a = ", "1"], "metadata": {}, "outputs": [],
             "execution_count": None},
            {"cell_type": "markdown", "source": "text", "metadata": {}},
        ],
    }  # fmt: skip
    path.write_text(json.dumps(notebook))
    doc = doc_for("old.ipynb")
    snapshot = await ok(doc, "snapshot")
    assert [c["id"] for c in snapshot["cells"]] == ["index-0", "index-1"]
    assert snapshot["cells"][0]["source"] == "a = 1"

    edit = await ok(
        doc, "edit", op="replace", cell_id="index-1", expected_source="text", source="T"
    )
    saved = json.loads(path.read_text())
    assert saved["nbformat_minor"] == 5
    ids = [cell["id"] for cell in saved["cells"]]
    assert edit["cell_id"] == ids[1] and all(ids) and len(set(ids)) == 2
    assert saved["cells"][1]["source"] == ["T"]  # nbformat writes sources as lists of lines
    await ok(doc, "revert", edit_id=edit["edit_id"])
    assert json.loads(path.read_text())["cells"][1]["source"] == ["text"]


# ---------------------------------------------------------------------- the person's edits win


async def test_an_edit_of_a_cell_the_person_changed_is_refused(
    doc_for: Any, jp_root_dir: Path, jp_fetch: Any
) -> None:
    path = write_notebook(jp_root_dir, "d.ipynb", ["mine = 1", "other = 2"])
    doc = doc_for("d.ipynb")
    seen = await ok(doc, "snapshot")
    # The person saves their own change through the server (as a tab's save does).
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[0].source = "mine = 'person'"
    body = json.dumps({"type": "notebook", "format": "json", "content": notebook})
    await jp_fetch("api", "contents", "d.ipynb", method="PUT", body=body)

    reply = await refused(
        doc,
        "edit",
        op="replace",
        cell_id="c0",
        expected_source=seen["cells"][0]["source"],
        source="mine = 'agent'",
    )
    assert reply.error_kind == "cell_changed"
    assert reply.error == (
        "cell #0 changed since it was read (the user edited it); nothing was changed: read it again"
    )
    assert on_disk(path)[0]["source"] == "mine = 'person'"
    gone = await refused(doc, "edit", op="delete", cell_id="zz", expected_source="")
    assert gone.error_kind == "not_found"


def racing_manager(root: Path, writes: int) -> Any:
    """The server's own contents manager class, with another writer saving the file right
    between this server's read and its write, ``writes`` times."""
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

    class Racing(AsyncLargeFileManager):  # type: ignore[misc]
        left = writes
        person = 0

        async def get(self, path: str, content: bool = True, **kwargs: Any) -> Any:
            if not content and kwargs.get("require_hash") and self.left > 0:
                self.left -= 1
                self.person += 1
                on_file = nbformat.read(root / path, as_version=4)
                on_file.cells[1].source = f"person saved {self.person}"
                nbformat.write(on_file, root / path)
            return await super().get(path, content=content, **kwargs)

    return Racing(root_dir=str(root))


async def test_a_save_landing_between_read_and_write_is_kept(jp_root_dir: Path) -> None:
    path = write_notebook(jp_root_dir, "e.ipynb", ["agent's", "person's"])
    doc = NotebookDoc(racing_manager(jp_root_dir, writes=1), "e.ipynb")
    await ok(doc, "edit", op="replace", cell_id="c0", expected_source="agent's", source="done")
    # Read again after the other save, re-checked, then written on top of it.
    assert [c["source"] for c in on_disk(path)] == ["done", "person saved 1"]


async def test_a_file_that_keeps_changing_is_never_overwritten(jp_root_dir: Path) -> None:
    path = write_notebook(jp_root_dir, "f.ipynb", ["agent's", "person's"])
    doc = NotebookDoc(racing_manager(jp_root_dir, writes=100), "f.ipynb")
    reply = await refused(
        doc, "edit", op="replace", cell_id="c0", expected_source="agent's", source="lost?"
    )
    assert reply.error_kind == "file_changed"
    assert "nothing was written" in str(reply.error)
    assert [c["source"] for c in on_disk(path)] == ["agent's", "person saved 3"]
    assert doc.edits == []


# ---------------------------------------------------------------------- run


async def test_run_without_a_kernel_relay_says_a_tab_is_needed(
    doc_for: Any, jp_root_dir: Path
) -> None:
    write_notebook(jp_root_dir, "g.ipynb", ["1 + 1"])
    reply = await refused(doc_for("g.ipynb"), "run", cell_ids=["c0"])
    assert reply.error_kind == "needs_tab"
    missing = await refused(doc_for("g.ipynb"), "run", cell_ids=["nope"])
    assert missing.error_kind == "not_found"


async def test_run_writes_the_kernels_outputs_into_the_notebook(
    doc_for: Any, jp_root_dir: Path
) -> None:
    path = write_notebook(jp_root_dir, "h.ipynb", ["print('hi')", "1 / 0", "never"])
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(1, nbformat.v4.new_markdown_cell("between", id="md"))
    nbformat.write(notebook, path)
    asked: list[list[CellToRun]] = []

    async def run_cells(
        cells: list[CellToRun], wait_seconds: float, interrupt: bool
    ) -> list[CellRunResult]:
        asked.append(cells)
        stream = {"output_type": "stream", "name": "stdout", "text": "hi\n"}
        error = {
            "output_type": "error",
            "ename": "ZeroDivisionError",
            "evalue": "",
            "traceback": [],
        }
        return [
            CellRunResult(cell_id="c0", status="done", execution_count=1, outputs=[stream]),
            CellRunResult(cell_id="c1", status="error", execution_count=2, outputs=[error]),
        ]

    doc = doc_for("h.ipynb", run_cells=run_cells)
    result = await ok(doc, "run", cell_ids=["c0", "md", "c1", "c2"], wait_seconds=5)

    assert [c.code for c in asked[0]] == ["print('hi')", "1 / 0", "never"]
    statuses = [(c["id"], c["index"], c["status"]) for c in result["cells"]]
    assert statuses == [
        ("c0", 0, "done"),
        ("md", 1, "done"),
        ("c1", 2, "error"),
        ("c2", 3, "skipped"),
    ]
    assert result["cells"][0]["outputs"][0]["text"] == "hi\n"
    cells = on_disk(path)
    assert cells[0]["outputs"][0]["text"] == "hi\n" and cells[0]["execution_count"] == 1
    assert cells[2]["outputs"][0]["ename"] == "ZeroDivisionError"
    assert cells[3]["outputs"] == [] and cells[3]["execution_count"] is None


# ---------------------------------------------------------------------- hostile inputs


async def test_a_notebook_that_is_not_utf8_is_a_clear_refusal(
    doc_for: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "latin.ipynb").write_bytes('{"cells": ["caf\xe9"]}'.encode("latin-1"))
    reply = await refused(doc_for("latin.ipynb"), "snapshot")
    assert reply.error_kind == "unreadable"
    assert "UTF-8" in str(reply.error) and "Nothing was changed" in str(reply.error)
    assert str(jp_root_dir) not in str(reply.error)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"cells": [', "not JSON"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
        ('{"cells": [1, "x"], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "cells"),
    ],
    ids=["truncated", "nested-100k", "cells-not-objects"],
)
async def test_a_file_that_is_not_a_notebook_is_a_clear_refusal(
    doc_for: Any, jp_root_dir: Path, text: str, says: str
) -> None:
    (jp_root_dir / "broken.ipynb").write_text(text)
    doc = doc_for("broken.ipynb")
    # A snapshot reads the JSON itself, an edit through the server's notebook reader.
    for action, params in (("snapshot", {}), ("edit", {"op": "insert", "source": "x"})):
        reply = await refused(doc, action, **params)
        assert reply.error_kind == "unreadable", reply.error
        error = str(reply.error)
        assert error.startswith("cannot read 'broken.ipynb' as a notebook: "), error
        assert error.endswith("Nothing was changed; fix or re-save the file in JupyterLab.")
        assert says in error or action == "edit"
        assert str(jp_root_dir) not in str(reply.error), "the server's own directory is not said"
    assert (jp_root_dir / "broken.ipynb").read_text() == text


async def test_a_huge_notebook_is_refused_before_it_is_read(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    path = write_notebook(jp_root_dir, "big.ipynb", ["x" * 2_000_000])
    doc = NotebookDoc(jp_serverapp.contents_manager, "big.ipynb", max_bytes=1_000_000)
    reply = await refused(doc, "snapshot")
    assert reply.error_kind == "too_large"
    assert reply.error == (
        "'big.ipynb' is 2.0 MB, more than the 1 MB read without a tab; open it in JupyterLab "
        "to let the agent work on it"
    )
    assert path.stat().st_size > 2_000_000


def test_a_path_has_one_spelling(jp_serverapp: Any) -> None:
    assert NotebookDoc.for_server(jp_serverapp, "/./work/./a.ipynb").path == "work/a.ipynb"


@pytest.mark.parametrize(
    "path",
    ["../outside.ipynb", "a/../../outside.ipynb", "", "notes.txt", "a//b.ipynb", "x\x00.ipynb"],
)
def test_paths_outside_the_root_or_not_notebooks_are_refused(jp_serverapp: Any, path: str) -> None:
    from jupyter_codelia.server.notebook_doc import InvalidNotebookRequestError

    with pytest.raises(InvalidNotebookRequestError) as caught:
        NotebookDoc.for_server(jp_serverapp, path)
    assert caught.value.kind == "invalid"


async def test_a_missing_notebook_is_not_found(doc_for: Any) -> None:
    reply = await refused(doc_for("missing.ipynb"), "snapshot")
    assert reply.error_kind == "not_found"
    assert str(reply.error).startswith("no notebook 'missing.ipynb' under the server's root")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"op": "rename"}, "bad edit request: op: Input should be 'insert', 'replace', 'delete'"),
        ({"op": "replace", "cell_id": "c0", "source": "y"}, "edit replace needs expected_source"),
        ({"op": "delete"}, "edit delete needs cell_id"),
        ({"op": "insert", "index": -1}, "bad edit request: index: Input should be greater"),
        ({"op": "insert", "source": 5}, "bad edit request: source: Input should be a valid string"),
    ],
)
async def test_bad_edit_requests_say_what_is_wrong(
    doc_for: Any, jp_root_dir: Path, params: dict[str, Any], expected: str
) -> None:
    path = write_notebook(jp_root_dir, "i.ipynb", ["x"])
    before = path.read_bytes()
    reply = await refused(doc_for("i.ipynb"), "edit", **params)
    assert reply.error_kind == "invalid"
    assert str(reply.error).startswith(expected), reply.error
    assert path.read_bytes() == before


async def test_ping_and_a_bad_revert(doc_for: Any, jp_root_dir: Path) -> None:
    write_notebook(jp_root_dir, "j.ipynb", ["x"])
    doc = doc_for("j.ipynb")
    assert await ok(doc, "ping") == {}
    assert (await refused(doc, "revert")).error_kind == "invalid"
    assert (await refused(doc, "revert", edit_id="never-made")).error_kind == "refused"


async def test_an_nbformat_3_notebook_is_read_through_the_servers_converter(
    doc_for: Any, jp_root_dir: Path
) -> None:
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": "old"},
        "worksheets": [
            {"cells": [{"cell_type": "code", "input": "1 + 1", "language": "python",
                        "outputs": [], "metadata": {}}]}
        ],
    }  # fmt: skip
    (jp_root_dir / "v3.ipynb").write_text(json.dumps(v3))
    snapshot = await ok(doc_for("v3.ipynb"), "snapshot")
    assert [(c["cell_type"], c["source"]) for c in snapshot["cells"]] == [("code", "1 + 1")]


async def test_the_edits_kept_for_revert_are_bounded(
    doc_for: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_codelia.server.notebook_doc import _doc

    monkeypatch.setattr(_doc, "MAX_EDIT_RECORDS", 2)
    write_notebook(jp_root_dir, "k.ipynb", [])
    doc = doc_for("k.ipynb")
    edits = [await ok(doc, "edit", op="insert", source=str(n)) for n in range(3)]
    assert [r.edit_id for r in doc.edits] == [e["edit_id"] for e in edits[1:]]
    assert (await refused(doc, "revert", edit_id=edits[0]["edit_id"])).error_kind == "refused"
    await ok(doc, "revert", edit_id=edits[1]["edit_id"])


async def test_run_through_a_real_kernel_writes_its_outputs(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    """The relay's part played by a kernel the server started: the hook executes the code and
    turns the IOPub messages into nbformat outputs; the notebook gets them."""
    path = write_notebook(jp_root_dir, "real.ipynb", ["print('from the kernel')\n6 * 7", "1 / 0"])
    manager = jp_serverapp.kernel_manager
    kernel_id = await manager.start_kernel(kernel_name="python3")
    client = manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)

        async def run_one(cell: CellToRun) -> CellRunResult:
            outputs: list[dict[str, Any]] = []

            def collect(msg: dict[str, Any]) -> None:
                if msg["msg_type"] in ("stream", "execute_result", "display_data", "error"):
                    outputs.append(nbformat.v4.output_from_msg(msg))

            reply = await client.execute_interactive(cell.code, timeout=60, output_hook=collect)
            content = reply["content"]
            return CellRunResult(
                cell_id=cell.cell_id,
                status="done" if content["status"] == "ok" else "error",
                execution_count=content.get("execution_count"),
                outputs=outputs,
            )

        async def run_cells(
            cells: list[CellToRun], wait_seconds: float, interrupt: bool
        ) -> list[CellRunResult]:
            results: list[CellRunResult] = []
            for cell in cells:
                results.append(await run_one(cell))
                if results[-1].status != "done":
                    break
            return results

        doc = NotebookDoc.for_server(jp_serverapp, "real.ipynb", run_cells=run_cells)
        result = await ok(doc, "run", cell_ids=["c0", "c1"])
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(kernel_id, now=True)

    assert [c["status"] for c in result["cells"]] == ["done", "error"]
    first, second = on_disk(path)
    assert [o["output_type"] for o in first["outputs"]] == ["stream", "execute_result"]
    assert first["outputs"][0]["text"] == "from the kernel\n"
    assert first["outputs"][1]["data"]["text/plain"] == "42"
    assert first["execution_count"] == 1 and second["execution_count"] == 2
    assert second["outputs"][0]["ename"] == "ZeroDivisionError"


async def test_a_kernels_requests_are_answered_for_its_sessions_notebook(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    from jupyter_codelia.server.notebook_doc import CellChangedError, NotebookNotFoundError
    from jupyter_codelia.server.notebook_without_tab import NotebookWithoutTab

    path = write_notebook(jp_root_dir, "work/session.ipynb", ["a = 1"])
    sessions = jp_serverapp.session_manager
    session = await sessions.create_session(
        path="work/session.ipynb", name="session.ipynb", type="notebook", kernel_name="python3"
    )
    kernel_id = session["kernel"]["id"]
    try:
        answer = NotebookWithoutTab(jp_serverapp, kernel_id).answer

        def request(action: str, **params: Any) -> dict[str, Any]:
            message = NotebookRequest(
                request_id="r",
                client_id="server-1",
                action=action,
                params=params,  # type: ignore[arg-type]
            )
            return message.dump()

        snapshot = await answer(request("snapshot"))
        assert snapshot["path"] == "work/session.ipynb"
        edit = await answer(
            request("edit", op="replace", cell_id="c0", expected_source="a = 1", source="a = 2")
        )
        assert on_disk(path)[0]["source"] == "a = 2"
        await answer(request("revert", edit_id=edit["edit_id"]))
        assert on_disk(path)[0]["source"] == "a = 1"
        with pytest.raises(CellChangedError):
            await answer(request("edit", op="delete", cell_id="c0", expected_source="stale"))
        with pytest.raises(NotebookNotFoundError, match="belongs to no notebook session"):
            await NotebookWithoutTab(jp_serverapp, "no-such-kernel").answer(request("snapshot"))
    finally:
        await sessions.delete_session(session["id"])
