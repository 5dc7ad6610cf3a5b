"""Policy and UI code name no concrete tool and never read the model's text of a tool result:
they read each tool's declared risk and each result's typed data (ToolRisk, ToolResultData)."""

from __future__ import annotations

import ast
import re
import tempfile
from pathlib import Path

from jupyter_codelia.notebook.frontend import FrontendClient
from jupyter_codelia.notebook.kernel_tools import kernel_tools
from jupyter_codelia.notebook.notebook_tools.cell_tools import NotebookContext, notebook_tools
from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.standard_tools.jobs import JobRegistry

ROOT = Path(__file__).resolve().parents[1]
POLICY = [
    ROOT / "jupyter_codelia/agent/permissions.py",
    ROOT / "jupyter_codelia/agent/_permission_hook.py",
    ROOT / "jupyter_codelia/cache/_service.py",
]
UI_PY = sorted((ROOT / "jupyter_codelia/notebook/ui").glob("*.py"))
UI_TS = [p for p in sorted((ROOT / "labextension/src").glob("*.ts")) if p.name != "wire.ts"]


def _tool_names() -> set[str]:
    with tempfile.TemporaryDirectory() as home:
        tools = [
            *standard_tools(home, cache_dir=Path(home) / "cache", jobs=JobRegistry()),
            *kernel_tools(namespace={}),
            *notebook_tools(NotebookContext(None, FrontendClient())),
        ]
    return {tool.name for tool in tools}


def test_no_policy_or_ui_module_names_a_concrete_tool() -> None:
    names = _tool_names()
    found: list[str] = []
    for path in POLICY + UI_PY:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # A comparison with a tool's name, or a table keyed or filled by tool names.
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                literals = [o.value for o in operands if isinstance(o, ast.Constant)]
                if any(value in names for value in literals):
                    found.append(f"{path.name}:{node.lineno}")
            if isinstance(node, (ast.Dict, ast.Set, ast.Tuple, ast.List)):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                values = [i.value for i in items if isinstance(i, ast.Constant)]
                if sum(value in names for value in values) >= 2:
                    found.append(f"{path.name}:{node.lineno}")
    compare = re.compile(r"""\btool\w*\s*[!=]==?\s*['"](\w+)['"]|case\s+['"](\w+)['"]""")
    for path in UI_TS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in compare.finditer(line):
                if (match.group(1) or match.group(2)) in names and "tool" in line:
                    found.append(f"{path.name}:{number}")
    assert found == []


def test_no_ui_code_reads_the_text_of_a_tool_result() -> None:
    parsing = re.compile(
        r"JSON\.parse|json\.loads|\.test\(|startsWith|includes\(|\.match\(|indexOf|\bin f?\""
    )
    found = [
        f"{path.name}:{number}"
        for path in UI_PY + UI_TS
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\.result\b", line) and parsing.search(line)
    ]
    assert found == []
