"""Our tools under Jupyter AI's MCP server: the real ``jupyter-server-mcp`` package discovers them
through the entry point pyproject.toml declares, registers them on its FastMCP server, and a
FastMCP client calls one against a real kernel of a real Jupyter server.

``jupyter-server-mcp`` enables itself in every Jupyter server of the environment it is installed
in (an MCP server on port 3001), so it is not a test dependency: scripts/test installs the
extra ``jupyter-ai`` into ``.venv-jupyter-ai`` (on top of the main environment) and runs these
tests there with ``CODELIA_REQUIRE_JUPYTER_SERVER_MCP=1``, which makes a missing package a
failure, not a skip.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.server import jupyter_ai_tools

from .test_mcp_endpoint import open_notebook

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def declared_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyproject's ``jupyter_server_mcp.tools`` entry points as installed metadata says them
    (where an older editable install predates them; declared twice they would be found twice)."""
    import importlib.metadata

    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    group = project["project"]["entry-points"]["jupyter_server_mcp.tools"]
    installed = importlib.metadata.entry_points(group="jupyter_server_mcp.tools")
    if {(e.name, e.value) for e in installed} >= set(group.items()):
        return
    dist = tmp_path / "jupyter_codelia_entry_points-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: jupyter-codelia-entry-points\n")
    lines = ["[jupyter_server_mcp.tools]", *(f"{k} = {v}" for k, v in group.items())]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    importlib.invalidate_caches()


def test_each_front_takes_the_kernel_tools_arguments() -> None:
    """The typed fronts match the kernel tools' inputs (the kernel validates what is sent)."""
    from jupyter_codelia.notebook.frontend import FrontendClient
    from jupyter_codelia.notebook.kernel_tools.namespace import kernel_tools
    from jupyter_codelia.notebook.notebook_tools.cell_tools import NotebookContext, notebook_tools
    from jupyter_codelia.standard_tools.jobs import JobRegistry, job_tools
    from jupyter_codelia.standard_tools.output_cache import output_cache_tools

    tools = [
        *kernel_tools(namespace={}),
        *notebook_tools(NotebookContext(None, FrontendClient())),
        *job_tools(JobRegistry()),
        *output_cache_tools(None),
    ]
    by_name = {tool.name: tool for tool in tools}
    for name in jupyter_ai_tools.TOOLS:
        if name == "notebooks":
            continue
        parameters = list(inspect.signature(getattr(jupyter_ai_tools, name)).parameters)
        schema = by_name[name].definition.parameters
        assert parameters == ["notebook_path", *schema["properties"]], name


async def test_jupyter_server_mcp_discovers_registers_and_serves_our_tools(
    declared_entry_point: None,
    jp_serverapp: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    codelia_home: Path,
) -> None:
    if os.environ.get("CODELIA_REQUIRE_JUPYTER_SERVER_MCP") == "1":
        import jupyter_server_mcp.extension as extension  # scripts/test: it must be there
    else:
        extension = pytest.importorskip("jupyter_server_mcp.extension")
    from fastmcp import Client
    from jupyter_server_mcp.mcp_server import MCPServer

    app = extension.MCPExtensionApp()
    specs = app._discover_entrypoint_tools()
    assert specs == jupyter_ai_tools.tool_specs()
    app.mcp_server_instance = MCPServer(name="Jupyter MCP Server", port=0)
    app._register_tools(specs, source="entrypoints")
    registered = {tool["name"] for tool in app.mcp_server_instance.list_tools()}
    assert registered == set(jupyter_ai_tools.TOOLS)

    await open_notebook(jp_fetch, jp_root_dir, "ai.ipynb")
    async with Client(app.mcp_server_instance.mcp) as client:
        listed = await client.call_tool("notebooks", {})
        assert "ai.ipynb" in json.dumps(listed.structured_content or listed.data, default=str)
        await client.call_tool("list_variables", {"notebook_path": "ai.ipynb"}, raise_on_error=True)
        denied = await client.call_tool(
            "python", {"notebook_path": "ai.ipynb", "code": "x = 1"}, raise_on_error=False
        )
        assert denied.is_error
        text = " ".join(getattr(block, "text", "") for block in denied.content)
        assert "no codelia side panel is open on this notebook" in text
