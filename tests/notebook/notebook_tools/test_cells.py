"""The notebook model the cell tools work on: saved-file reading, outline bounds, selection,
output rendering and stale detection, including hostile inputs."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from jupyter_codelia.notebook.notebook_tools import cells as nbcells
from jupyter_codelia.notebook.notebook_tools.cells import CellView, KernelHistory, NotebookSnapshot


def _snapshot(*cells: CellView) -> NotebookSnapshot:
    return NotebookSnapshot(path="/work/n.ipynb", cells=list(cells))


def test_saved_notebook_errors_name_the_problem(tmp_path: Path) -> None:
    missing = tmp_path / "missing.ipynb"
    with pytest.raises(nbcells.NotebookFileError, match="cannot read the saved notebook"):
        nbcells.read_saved(missing)
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    with pytest.raises(nbcells.NotebookFileError, match="is not a JSON notebook"):
        nbcells.read_saved(broken)
    no_cells = tmp_path / "other.ipynb"
    no_cells.write_text(json.dumps({"pages": []}))
    with pytest.raises(nbcells.NotebookFileError, match="has no 'cells' list"):
        nbcells.read_saved(no_cells)


def _real_world_malformed(path: Path) -> Path:
    """Shapes seen in notebooks written by other tools: nbformat's reader loads every one
    (its validator only warns), so the tools must read them too."""
    cells = [
        {"cell_type": "markdown", "metadata": [], "source": ["# Title"]},  # ipymd: a list
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": "oops",
         "source": "a = 1"},
        {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [1, 2],
         "source": "b = 2"},
        {"cell_type": "code", "execution_count": "3", "metadata": {}, "source": ["c", " = 3"],
         "outputs": [
             {"output_type": "stream", "name": "stdout", "text": 42},
             {"output_type": "display_data", "data": ["not", "a", "bundle"], "metadata": {}},
             {"output_type": "display_data", "metadata": {},
              "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "m1",
                       "version_major": 2, "version_minor": 0}, "text/plain": ["w"]}},
             {"output_type": "error", "ename": "E", "evalue": 1, "traceback": "tb line"},
         ]},
        42,
        {"cell_type": "widget", "metadata": {}, "source": "?"},
        {"cell_type": "code", "execution_count": None, "metadata": {"outputExpanded": False},
         "outputs": [], "source": "d = 4"},
    ]  # fmt: skip
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    return path


def test_saved_notebooks_from_other_tools_are_read_with_what_was_left_out(
    tmp_path: Path,
) -> None:
    snapshot = nbcells.read_saved(_real_world_malformed(tmp_path / "n.ipynb"))
    assert len(snapshot.cells) == 7  # every cell kept: indices stay those the person sees
    assert [c.cell_type for c in snapshot.cells] == [
        *("markdown", "code", "code", "code", "raw", "raw", "code")
    ]
    assert snapshot.cells[1].outputs == [] and snapshot.cells[2].outputs == []
    assert snapshot.cells[3].source == "c = 3" and snapshot.cells[3].execution_count is None
    assert snapshot.skipped == [
        "cell 0: metadata is not an object (list)",
        "cell 1: outputs are not a list (str): left out",
        "cell 2: output 0 is not an object (int): left out",
        "cell 2: output 1 is not an object (int): left out",
        "cell 3: execution_count '3' is not a number",
        "cell 3: an output's data is not an object (list)",
        "cell 4 is not an object (int): shown empty",
        "cell 5 has an unknown cell_type 'widget': shown raw",
    ]
    text = nbcells.render_cells(snapshot, range(7), None).text
    assert "[stdout]\n42" in text
    assert "[display]\nw" in text
    assert "[error] E: 1\ntb line" in text
    assert "Not readable, left out: cell 0: metadata is not an object (list)" in text
    assert "; … 3 more." in text
    overview = nbcells.outline(snapshot)
    assert "7 cells (4 code, 1 markdown)" in overview
    assert "Not readable, left out:" in overview


@pytest.mark.parametrize("depth", [200, 5000])
def test_deeply_nested_metadata_is_cut_at_a_bounded_depth(tmp_path: Path, depth: int) -> None:
    """5,000 levels stop json.loads with RecursionError; 200 load but break serializers."""
    deep = "1"
    for _ in range(depth):
        deep = '{"x": ' + deep + "}"
    cell = (
        '{"cell_type": "code", "execution_count": 1, "source": "x = 1", "outputs": [],'
        f' "metadata": {{"tags": ["keep"], "deep": {deep}}}}}'
    )
    path = tmp_path / "deep.ipynb"
    path.write_text('{"cells": [' + cell + ', {"cell_type": "markdown", "source": "# ok"}]}')
    snapshot = nbcells.read_saved(path)
    assert [c.source for c in snapshot.cells] == ["x = 1", "# ok"]
    assert snapshot.cells[0].metadata["tags"] == ["keep"]
    assert snapshot.skipped == ["values nested deeper than 64 levels were left out"]
    snapshot.model_dump_json()  # every level is within what a serializer takes
    node = snapshot.cells[0].metadata["deep"]
    levels = 0
    while isinstance(node, dict):
        node, levels = node["x"], levels + 1
    assert node == "[left out: nested deeper than 64 levels]" and levels < 64


def test_an_nbformat_3_notebook_is_read_as_nbformat_reads_it(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "heading", "level": 2, "source": ["Intro"], "metadata": {}},
        {"cell_type": "code", "input": ["x = 1\n", "x"], "prompt_number": 3, "language": "python",
         "metadata": {}, "outputs": [
             {"output_type": "pyout", "prompt_number": 3, "text": ["1"], "metadata": {}},
             {"output_type": "stream", "stream": "stderr", "text": ["warn\n"]},
             {"output_type": "pyerr", "ename": "ValueError", "evalue": "bad",
              "traceback": ["Trace", "ValueError: bad"]},
         ]},
    ]  # fmt: skip
    path = tmp_path / "v3.ipynb"
    path.write_text(json.dumps({"nbformat": 3, "worksheets": [{"cells": cells}]}))
    snapshot = nbcells.read_saved(path)
    assert [(c.cell_type, c.source) for c in snapshot.cells] == [
        ("markdown", "## Intro"),
        ("code", "x = 1\nx"),
    ]
    assert snapshot.cells[1].execution_count == 3
    text = nbcells.render_cells(snapshot, [1], None).text
    assert "[result]\n1" in text and "[stderr]\nwarn" in text
    assert "[error] ValueError: bad" in text
    assert snapshot.skipped == []


def test_saved_notebook_joins_multiline_sources_and_outputs(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    stream = {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]}
    result = {"output_type": "execute_result", "data": {"text/plain": ["1", "2"]}, "metadata": {}}
    cell = {"cell_type": "code", "source": ["x = 1\n", "x"], "outputs": [stream, result]}
    path.write_text(json.dumps({"cells": [cell, {"cell_type": "markdown", "source": "# T"}]}))
    snapshot = nbcells.read_saved(path)
    assert snapshot.source == "saved"
    assert [c.id for c in snapshot.cells] == ["index-0", "index-1"]  # nbformat < 4.5: no ids
    assert snapshot.cells[0].source == "x = 1\nx"
    text = nbcells.render_cells(snapshot, [0], None).text
    assert "[stdout]\na\nb" in text and "[result]\n12" in text
    assert "last SAVED state" in text


def test_outline_stays_bounded_for_hostile_notebooks() -> None:
    heading = CellView(id="h", cell_type="markdown", source="\n".join(["# " + "x" * 500] * 400))
    code = [
        CellView(id=f"c{i}", cell_type="code", source="pass", output_types=["error"])
        if i % 2
        else CellView(id=f"m{i}", cell_type="markdown", source="text")
        for i in range(4000)
    ]
    outline = nbcells.outline(_snapshot(heading, *code))
    assert len(outline.encode()) <= nbcells.OUTLINE_MAX_CHARS
    assert "more headings" in outline
    assert "more ranges" in outline


def test_outline_of_an_empty_notebook_and_an_unknown_active_cell() -> None:
    snapshot = NotebookSnapshot(path=None, cells=[], active_cell_id="gone")
    assert nbcells.outline(snapshot).startswith("Notebook the notebook (live): 0 cells")


def test_selection_errors() -> None:
    snapshot = _snapshot(CellView(id="a", cell_type="code", source="x = 1"))
    with pytest.raises(LookupError, match=r"no cell with id 'b', 'c' in the notebook \(1 cells\)"):
        nbcells.select(snapshot, cell_ids=["b", "c"])
    with pytest.raises(LookupError, match=r"start=5 is outside the notebook \(cells 0..0\)"):
        nbcells.select(snapshot, start=5)
    with pytest.raises(LookupError, match="no cell contains 'zzz'"):
        nbcells.select(snapshot, search="zzz")
    assert nbcells.select(snapshot, search="X =") == [0]  # case-insensitive


def test_outputs_render_errors_images_and_clip() -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    outputs = [
        {"output_type": "display_data", "data": {"image/png": png}},
        {"output_type": "display_data", "data": {"image/png": "%%% not base64"}},
        {"output_type": "stream", "name": "stderr", "text": "e" * 10_000},
        {"output_type": "display_data", "data": {"application/vnd.custom+json": {}}},
        {
            "output_type": "error",
            "ename": "KeyError",
            "evalue": "'k'",
            "traceback": [f"\x1b[0;31mline {i}\x1b[0m" for i in range(20)],
        },
    ]
    cell = CellView(id="c", cell_type="code", source="x", execution_count=1, outputs=outputs)
    without = nbcells.render_cells(_snapshot(cell), [0], None).text
    assert "[display] image/png image (pass images=true to see it)" in without
    rendered = nbcells.render_cells(_snapshot(cell), [0], None, images=True)
    assert rendered.images == [(b"\x89PNG fake", "image/png")]
    assert "[display] image/png image (undecodable base64)" in rendered.text
    assert "… (6000 more characters)" in rendered.text
    assert "[display] application/vnd.custom+json" in rendered.text
    assert "[error] KeyError: 'k'\nline 12\n" in rendered.text and "line 11" not in rendered.text
    assert "\x1b" not in rendered.text


def test_long_sources_page_by_line() -> None:
    source = "\n".join(f"line {i}" for i in range(300))
    snapshot = _snapshot(CellView(id="c", cell_type="code", source=source))
    first = nbcells.render_cells(snapshot, [0], None).text
    assert "line 199" in first and "line 200" not in first
    assert "… 100 more lines (page with source_line_offset=200)" in first
    rest = nbcells.render_cells(snapshot, [0], None, source_line_offset=200).text
    assert "line 200" in rest and "line 299" in rest and "more lines" not in rest


def test_stale_compares_with_what_ran_ignoring_trailing_whitespace() -> None:
    history = KernelHistory(inputs=["", "x = 1\n", "y = 2"], outputs={})
    same = CellView(id="a", cell_type="code", source="x = 1", execution_count=1)
    changed = CellView(id="b", cell_type="code", source="y = 3", execution_count=2)
    earlier = CellView(id="c", cell_type="code", source="z", execution_count=9)
    never = CellView(id="d", cell_type="code", source="w", execution_count=None)
    assert not nbcells.is_stale(same, history)
    assert nbcells.is_stale(changed, history)
    assert not nbcells.is_stale(earlier, history) and nbcells.ran_in_other_kernel(earlier, history)
    assert not nbcells.is_stale(never, history) and not nbcells.ran_in_other_kernel(never, history)
    assert not nbcells.is_stale(changed, None)
    # A %%codelia cell shows the count of the last cell it ran on a subshell: not stale.
    magic = CellView(id="m", cell_type="code", source="%%codelia\nhi", execution_count=2)
    assert not nbcells.is_stale(magic, history)
