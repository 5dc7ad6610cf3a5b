"""The no-tab notebook requests through jupyter-collaboration's shared document (ydoc backend).

A real jupyter server (pytest-jupyter, in this process) with jupyter_server_ydoc and
jupyter_server_fileid enabled. jupyter-collaboration turns every JupyterLab tab collaborative,
so it lives in its own environment (the ``test-collab`` extra, installed by scripts/test into
``.venv-collab`` on top of the main one) and these tests skip where it is not installed, unless
``CODELIA_REQUIRE_COLLAB=1`` says they must run. Tests carry no ``asyncio`` mark: pytest-jupyter
runs them on its server's loop (see test_handlers.py).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

if os.environ.get("CODELIA_REQUIRE_COLLAB") != "1":
    pytest.importorskip("jupyter_server_ydoc", reason="jupyter-collaboration is not installed")

from jupyter_codelia.server.notebook_doc import NotebookDoc, source_hash
from jupyter_codelia.wire import NotebookReply, NotebookRequest

PROVENANCE = {"session_id": "s1", "run_id": "r1", "tool_call_id": "t1", "model": "m", "at": "x"}
SAVE_DELAY = 0.1


@pytest.fixture
def jp_server_config(jp_root_dir: Path) -> dict[str, Any]:
    from jupyter_server_ydoc.stores import TempFileYStore

    return {
        "ServerApp": {
            "jpserver_extensions": {
                "jupyter_codelia": True,
                "jupyter_server_ydoc": True,
                "jupyter_server_fileid": True,
            }
        },
        "SQLiteYStore": {"db_path": str(jp_root_dir / ".rtc_test.db")},
        "BaseFileIdManager": {
            "root_dir": str(jp_root_dir),
            "db_path": str(jp_root_dir / ".fid_test.db"),
            "db_journal_mode": "OFF",
        },
        # A room opened by get_document() builds its store without the config, so an SQLite
        # store would land in the working directory: a temporary file store instead.
        "YDocExtension": {
            "document_save_delay": SAVE_DELAY,
            "ystore_class": TempFileYStore,
            "session_store_path": str(jp_root_dir.parent / "collaboration_sessions.json"),
        },
    }


@pytest.fixture
def collaboration(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["jupyter_server_ydoc"]


def write_notebook(root: Path, name: str, sources: list[str]) -> Path:
    cells = [nbformat.v4.new_code_cell(source, id=f"c{i}") for i, source in enumerate(sources)]
    path = root / name
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


async def ask(doc: NotebookDoc, action: str, **params: Any) -> NotebookReply:
    request = NotebookRequest(request_id="q", client_id="", action=action, params=params)  # type: ignore[arg-type]
    return await doc.answer(request)


async def ok(doc: NotebookDoc, action: str, **params: Any) -> dict[str, Any]:
    reply = await ask(doc, action, **params)
    assert reply.ok, reply.error
    assert reply.result is not None
    return reply.result


async def shared(collaboration: Any, name: str) -> Any:
    """The room's live document, as a connected collaborator sees it."""
    return await collaboration.get_document(
        path=name, content_type="notebook", file_format="json", copy=False, create=True
    )


async def saved_sources(path: Path, expected: list[str]) -> list[str]:
    """The sources on disk once the room saved them (it saves on its own schedule)."""
    sources: list[str] = []
    for _ in range(200):
        cells = nbformat.read(path, as_version=4)["cells"]
        sources = [cell["source"] for cell in cells]
        if sources == expected:
            break
        await asyncio.sleep(SAVE_DELAY)
    return sources


async def test_an_edit_goes_through_the_shared_document_with_its_origin(
    jp_serverapp: Any, jp_root_dir: Path, collaboration: Any
) -> None:
    path = write_notebook(jp_root_dir, "a.ipynb", ["x = 1", "y = 2"])
    doc = NotebookDoc.for_server(jp_serverapp, "a.ipynb")
    assert doc.backend == "ydoc"
    snapshot = await ok(doc, "snapshot")  # no room yet: this opens it
    assert [c["id"] for c in snapshot["cells"]] == ["c0", "c1"]
    live = await shared(collaboration, "a.ipynb")
    origins: list[Any] = []
    live.ycells.observe_deep(lambda events: origins.append(events[0].transaction.origin))

    edit = await ok(
        doc,
        "edit",
        op="replace",
        cell_id="c1",
        expected_source="y = 2",
        source="y = 3",
        provenance=PROVENANCE,
    )
    inserted = await ok(doc, "edit", op="insert", index=0, source="import os")

    assert edit == {"edit_id": edit["edit_id"], "cell_id": "c1", "index": 1}
    assert origins == ["jupyter-codelia", "jupyter-codelia"]
    cells = live.get()["cells"]
    assert [c["source"] for c in cells] == ["import os", "x = 1", "y = 3"]
    assert cells[0]["id"] == inserted["cell_id"]
    assert cells[2]["metadata"]["codelia"] == {
        **PROVENANCE,
        "review": {"before": "y = 2", "after_hash": source_hash("y = 3")},
    }
    assert await saved_sources(path, ["import os", "x = 1", "y = 3"]) == [
        "import os",
        "x = 1",
        "y = 3",
    ]
    on_disk = nbformat.read(path, as_version=4)["cells"][2]["metadata"]["codelia"]
    assert on_disk["review"]["before"] == "y = 2"

    await ok(doc, "revert", edit_id=edit["edit_id"])
    assert [c["source"] for c in live.get()["cells"]] == ["import os", "x = 1", "y = 2"]
    assert "codelia" not in live.get()["cells"][2]["metadata"]


async def test_a_collaborators_unsaved_change_is_read_and_wins(
    jp_serverapp: Any, jp_root_dir: Path, collaboration: Any
) -> None:
    path = write_notebook(jp_root_dir, "b.ipynb", ["theirs = 0"])
    doc = NotebookDoc.for_server(jp_serverapp, "b.ipynb")
    live = await shared(collaboration, "b.ipynb")
    seen = await ok(doc, "snapshot")
    # Someone in the room types into the cell (a tab without jupyter-codelia, or a
    # collaborator): the shared document has it before the file does.
    with live.ydoc.transaction(origin="collaborator"):
        text = live.ycells[0]["source"]
        text += " + 1"

    now = await ok(doc, "snapshot")
    assert now["cells"][0]["source"] == "theirs = 0 + 1"
    reply = await ask(
        doc,
        "edit",
        op="replace",
        cell_id="c0",
        expected_source=seen["cells"][0]["source"],
        source="agent",
    )
    assert not reply.ok and reply.error_kind == "cell_changed"
    assert live.get()["cells"][0]["source"] == "theirs = 0 + 1"
    assert await saved_sources(path, ["theirs = 0 + 1"]) == ["theirs = 0 + 1"]


async def test_run_outputs_are_written_into_the_shared_document(
    jp_serverapp: Any, jp_root_dir: Path, collaboration: Any
) -> None:
    from jupyter_codelia.server.notebook_doc import CellRunResult, CellToRun

    write_notebook(jp_root_dir, "c.ipynb", ["print('hi')"])
    states: list[str] = []

    async def run_cells(
        cells: list[CellToRun], wait_seconds: float, interrupt: bool
    ) -> list[CellRunResult]:
        live = await shared(collaboration, "c.ipynb")
        states.append(live.ycells[0]["execution_state"])
        stream = {"output_type": "stream", "name": "stdout", "text": "hi\n"}
        return [CellRunResult(cell_id=c.cell_id, status="done", execution_count=7, outputs=[stream])
                for c in cells]  # fmt: skip

    doc = NotebookDoc.for_server(jp_serverapp, "c.ipynb", run_cells=run_cells)
    result = await ok(doc, "run", cell_ids=["c0"])
    assert result["cells"][0]["status"] == "done"
    live = await shared(collaboration, "c.ipynb")
    cell = live.get()["cells"][0]
    assert cell["execution_count"] == 7 and cell["outputs"][0]["text"] == "hi\n"
    assert states == ["running"] and live.ycells[0]["execution_state"] == "idle"


async def test_a_broken_file_is_refused_before_a_room_loads_it(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "broken.ipynb").write_text("{not json")
    for name, kind in (("broken.ipynb", "unreadable"), ("missing.ipynb", "not_found")):
        doc = NotebookDoc.for_server(jp_serverapp, name)
        reply = await ask(doc, "edit", op="insert", source="x")
        assert not reply.ok and reply.error_kind == kind, reply.error
    assert (jp_root_dir / "broken.ipynb").read_text() == "{not json"
