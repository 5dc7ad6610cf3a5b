"""The three retrieval tools: schemas, defaults, error texts, never ``is_error`` for misses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.standard_tools.output_cache import output_cache_tools
from jupyter_codelia.tools import FunctionTool, ToolContext, ToolInputError


def _tools(store: Any) -> dict[str, FunctionTool]:
    return {t.name: t for t in output_cache_tools(store)}


async def _call(tool: FunctionTool, **args: Any) -> str:
    result = await tool.execute_raw(json.dumps(args), ToolContext())
    assert result.type == "text"
    return result.text


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, FunctionTool]:
    store = ToolOutputCacheStore(tmp_path)
    store.save(tool_call_id="toolu_1", tool_name="shell", content="a\nneedle\n" + "z" * 12_000)
    return _tools(store)


def test_names_and_draft7_schemas(tools: dict[str, FunctionTool]) -> None:
    assert list(tools) == ["tool_output_cache", "tool_output_cache_line", "tool_output_cache_grep"]
    for tool in tools.values():
        jsonschema.Draft7Validator.check_schema(tool.definition.parameters)
        assert tool.definition.parameters["additionalProperties"] is False
    assert "Rust regex" in tools["tool_output_cache_grep"].description
    grep_props = tools["tool_output_cache_grep"].definition.parameters["properties"]
    assert "default false" in grep_props["regex"]["description"]
    assert (
        "0-based"
        in tools["tool_output_cache"].definition.parameters["properties"]["offset"]["description"]
    )


@pytest.mark.asyncio
async def test_read_line_and_grep(tools: dict[str, FunctionTool]) -> None:
    assert (await _call(tools["tool_output_cache"], ref_id="toolu_1", limit=2)).startswith(
        "    1  a\n    2  needle\n\nOutput has more lines."
    )
    line = await _call(tools["tool_output_cache_line"], ref_id="toolu_1", line_number=3)
    assert line.split("\n")[:4] == [
        "ref_id=toolu_1",
        "line_number=3",
        "line_length=12000",
        "char_range=0..9999",
    ]
    assert line.endswith(
        'tool_output_cache_line({"ref_id":"toolu_1","line_number":3,'
        '"char_offset":10000,"char_limit":10000})'
    )
    clamped = await _call(
        tools["tool_output_cache_line"], ref_id="toolu_1", line_number=3, char_limit=500_000
    )
    assert clamped.split("\n")[3] == "char_range=0..11999"
    found = await _call(tools["tool_output_cache_grep"], ref_id="toolu_1", pattern="need", after=1)
    assert found == "ref:toolu_1\n    2  needle\n    3  " + "z" * 12_000


@pytest.mark.asyncio
async def test_expected_failures_are_plain_text(tools: dict[str, FunctionTool]) -> None:
    missing = await _call(tools["tool_output_cache"], ref_id="nope")
    assert missing.startswith(
        "Error reading tool output cache: ToolOutputNotFoundError: Cached output nope not found"
    )
    line = await _call(tools["tool_output_cache_line"], ref_id="nope", line_number=1)
    assert line.startswith("Error reading cache line: ToolOutputNotFoundError: ")
    bad = await _call(tools["tool_output_cache_grep"], ref_id="toolu_1", pattern="(", regex=True)
    assert bad.startswith(
        "Error searching tool output cache: InvalidPatternError: Invalid regex '('"
    )
    assert await _call(tools["tool_output_cache"], ref_id="toolu_1", offset=9) == (
        "Offset exceeds output length."
    )
    assert await _call(tools["tool_output_cache_line"], ref_id="toolu_1", line_number=4) == (
        "Line number out of range: 4 (total 3)"
    )


@pytest.mark.asyncio
async def test_invalid_arguments_are_rejected_clearly(tools: dict[str, FunctionTool]) -> None:
    with pytest.raises(ToolInputError, match=r'Unrecognized key: "lines" \(accepted keys: limit'):
        await tools["tool_output_cache"].execute_raw('{"ref_id":"x","lines":3}', ToolContext())
    with pytest.raises(ToolInputError, match="line_number"):
        await tools["tool_output_cache_line"].execute_raw(
            '{"ref_id":"x","line_number":0}', ToolContext()
        )


@pytest.mark.asyncio
async def test_store_without_methods_is_unavailable() -> None:
    tools = _tools(object())
    assert (
        await _call(tools["tool_output_cache"], ref_id="x") == "tool_output_cache is unavailable."
    )
    assert await _call(tools["tool_output_cache_line"], ref_id="x", line_number=1) == (
        "tool_output_cache_line is unavailable."
    )
    assert await _call(tools["tool_output_cache_grep"], ref_id="x", pattern="p") == (
        "tool_output_cache_grep is unavailable."
    )


@pytest.mark.asyncio
async def test_evicted_and_corrupted_entries_read_as_text(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path, max_bytes=500)
    store.save(tool_call_id="old", tool_name="shell", content="o" * 200)
    store.save(tool_call_id="new", tool_name="shell", content="n" * 200)
    tools = _tools(store)
    evicted = await _call(tools["tool_output_cache"], ref_id="old")
    assert evicted == (
        "Error reading tool output cache: ToolOutputEvictedError: Cached output old was evicted "
        "from the tool output cache to keep it under its size cap (least recently used entries "
        "go first). Run the tool again to reproduce it."
    )
    (tmp_path / "new.json").write_text("{}")
    corrupted = await _call(tools["tool_output_cache_grep"], ref_id="new", pattern="n")
    assert corrupted == (
        "Error searching tool output cache: ToolOutputCorruptedError: Cached output new is "
        "corrupted: its metadata file new.json is not valid. Run the tool again to reproduce it."
    )
