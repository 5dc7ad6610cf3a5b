"""The package's layers: every import (lazy ones inside functions included) points down.

docs/architecture.md explains the layers; this test keeps them true. The lower packages never
import IPython, ipywidgets or jupyter_server, so the agent runs in any Python process.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jupyter_codelia"

# Bottom up. A module may import from its own layer's package and from lower layers only.
LAYERS: dict[str, int] = {
    "_text": 0,
    "_redact": 0,
    "_approval": 0,
    "_cancellation": 0,
    "errors": 0,
    "_private": 0,
    "llm": 1,
    "tools": 2,
    "cache": 3,
    "session": 3,
    "standard_tools": 4,
    "agent": 5,
    "wire": 6,
    # The offline kit: scripted model servers for the real SDKs (the notebook's demo uses it).
    "testing": 6,
    "notebook": 7,
    "server": 7,
    # The ACP bridge: a process of its own that speaks to the kernel (through server/'s
    # kernel peer), never a part of it.
    "acp": 8,
}
# Pairs a layer may not import although the target is lower: the outside never reaches into
# the kernel side.
FORBIDDEN: dict[str, frozenset[str]] = {"acp": frozenset({"notebook"})}
KERNEL_SIDE = ("IPython", "ipywidgets", "ipykernel", "jupyter_server", "comm", "tornado")
KERNEL_FREE = {"_text", "_redact", "_approval", "_cancellation", "_private", "errors", "llm"}
KERNEL_FREE |= {"tools", "cache", "session", "standard_tools", "agent", "wire"}


def _unit(path: Path) -> str:
    """The layer unit of a module: its top-level package, or the module name at the top."""
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in ``path``."""
    module_parts = ["jupyter_codelia", *path.relative_to(PACKAGE).with_suffix("").parts]
    if module_parts[-1] == "__init__":
        module_parts.pop()
        package_parts = module_parts
    else:
        package_parts = module_parts[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "labextension" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_layers(path: Path) -> None:
    unit = _unit(path)
    if unit in ("__init__", "__main__", "_version"):
        return
    assert unit in LAYERS, f"{unit} is not placed in a layer: add it to LAYERS and the docs"
    wrong = []
    for line, name in _imports(path):
        parts = name.split(".")
        if parts[0] in KERNEL_SIDE and unit in KERNEL_FREE:
            wrong.append(f"line {line}: {name} (a kernel/server package in {unit}/)")
        if parts[0] != "jupyter_codelia" or len(parts) < 2:
            continue
        target = parts[1]
        if target == unit or target not in LAYERS:
            continue
        if LAYERS[target] > LAYERS[unit] or (LAYERS[target] == LAYERS[unit] and unit == "server"):
            wrong.append(f"line {line}: {name} (layer {LAYERS[target]} from layer {LAYERS[unit]})")
        elif target in FORBIDDEN.get(unit, ()):
            wrong.append(f"line {line}: {name} ({unit}/ never imports {target}/)")
    assert not wrong, f"{path.relative_to(PACKAGE)} imports upward:\n" + "\n".join(wrong)


# The notebook's rooms: what draws (ui/) never reaches into what runs (run/) or the tools.
UI_MUST_NOT_IMPORT = tuple(
    f"jupyter_codelia.notebook.{room}" for room in ("run", "kernel_tools", "notebook_tools")
)


@pytest.mark.parametrize(
    "path",
    sorted((PACKAGE / "notebook" / "ui").rglob("*.py")),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_the_notebook_ui_imports_nothing_from_the_run_or_the_tools(path: Path) -> None:
    wrong = [
        f"line {line}: {name}"
        for line, name in _imports(path)
        if any(name == room or name.startswith(room + ".") for room in UI_MUST_NOT_IMPORT)
    ]
    assert not wrong, f"{path.name} imports from run/ or a tool package: {wrong}"


def test_no_kernel_object_is_kept_as_an_attribute_of_the_shell() -> None:
    """The kernel extension owns codelia's per-kernel objects; nothing hangs them on the shell."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and node.args
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "shell"
    ]
    assert not offenders, f"setattr(shell, ...) found at {offenders}"
