"""The public API: what ``jupyter_codelia`` exports, and what the README imports from it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jupyter_codelia

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def test_every_exported_name_resolves() -> None:
    assert sorted(jupyter_codelia.__all__) == sorted(jupyter_codelia._EXPORTS)
    for name in jupyter_codelia.__all__:
        assert getattr(jupyter_codelia, name) is not None, name
    from jupyter_codelia.agent import Agent
    from jupyter_codelia.tools import define_tool, tool

    assert (jupyter_codelia.Agent, jupyter_codelia.tool) == (Agent, tool)
    assert jupyter_codelia.define_tool is define_tool
    with pytest.raises(AttributeError):
        _ = jupyter_codelia.not_a_name  # type: ignore[attr-defined]


def test_importing_the_package_loads_nothing_heavy() -> None:
    """``import jupyter_codelia`` runs for every server start and ``%load_ext``: the exports
    load on first use."""
    code = "import sys, jupyter_codelia; print(sorted(m for m in sys.modules if 'codelia.' in m))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "[]"


def _readme_imports() -> list[ast.ImportFrom | ast.Import]:
    found: list[ast.ImportFrom | ast.Import] = []
    for block in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        lines = [line for line in block.splitlines() if re.match(r"(from|import) \w", line)]
        for line in lines:
            node = ast.parse(line).body[0]
            assert isinstance(node, ast.Import | ast.ImportFrom)
            found.append(node)
    return found


def test_the_readme_imports_only_public_modules_and_they_import() -> None:
    imports = [
        node
        for node in _readme_imports()
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jupyter_codelia")
    ]
    assert len(imports) > 10, "the README's python blocks were not found"
    for node in imports:
        module = node.module or ""
        private = [part for part in module.split(".") if part.startswith("_")]
        assert not private, f"the README imports from a private module: {ast.unparse(node)}"
        exec(ast.unparse(node), {})  # each name the README imports exists


DESIGN_REFERENCE = re.compile(r"spec §|design §|\bspec/[\w-]+\.md|\bdesign/[\w-]+\.md|\.\./shared")


def test_no_code_refers_to_design_documents() -> None:
    """Docstrings and comments stand on their own: the design notes are not shipped."""
    sources = [*(ROOT / "jupyter_codelia").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    sources += [*(ROOT / "labextension" / "src").glob("*.ts")]
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        if path != Path(__file__)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if DESIGN_REFERENCE.search(line)
    ]
    assert not found, f"references to design documents: {found}"
