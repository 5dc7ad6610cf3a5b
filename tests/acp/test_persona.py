"""Jupyter AI finds the codelia persona through its entry point, with the real packages.

Jupyter AI's persona loader, its ACP persona base class and what they import are installed by
``scripts/jupyter-ai-site`` into ``.jupyter-ai-site/`` (not the venv: see that script). The test
runs in a subprocess whose path holds them and an entry-point record made from this project's
own ``pyproject.toml``, the one an install of the package writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("JUPYTER_AI_SITE", REPO / ".jupyter-ai-site"))

PROBE = """
import json
from importlib_metadata import entry_points
from jupyter_ai_persona_manager import BasePersona
from jupyter_ai_persona_manager.persona_manager import EPG_NAME

found = {ep.name: ep for ep in entry_points().select(group=EPG_NAME)}
persona = found["codelia"].load()
defaults = persona.defaults.fget(None)
print(json.dumps({
    "group": EPG_NAME,
    "subclass": issubclass(persona, BasePersona),
    "name": defaults.name,
    "avatar": defaults.avatar_path,
    "command": __import__("jupyter_codelia.acp.persona", fromlist=["x"]).agent_command(),
}))
"""


def _entry_point_record(directory: Path) -> None:
    """The ``entry_points.txt`` an install writes from pyproject's entry-point tables."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = []
    for group, points in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in points.items()]
    info = directory / "jupyter_codelia_entry_points-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jupyter-codelia-entry-points\n")
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def test_jupyter_ai_discovers_the_codelia_persona(tmp_path: Path) -> None:
    if not (SITE / "jupyter_ai_persona_manager").is_dir():
        pytest.skip(f"Jupyter AI's packages are not in {SITE}: run scripts/jupyter-ai-site")
    _entry_point_record(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(SITE), str(tmp_path)])}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["group"] == "jupyter_ai.personas"
    assert found["subclass"] is True
    assert found["name"] == "codelia"
    assert Path(found["avatar"]).read_text().startswith("<svg")
    assert found["command"][1:] == ["-m", "jupyter_codelia.acp"]


def test_the_console_script_is_the_agent() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["codelia-acp"] == "jupyter_codelia.acp:main"
    from jupyter_codelia.acp import main

    with pytest.raises(SystemExit) as usage:
        main(["--help"])
    assert usage.value.code == 0


def test_without_jupyter_ai_nothing_imports_the_persona() -> None:
    """Importing the package and the agent never needs Jupyter AI."""
    code = "import jupyter_codelia.acp, jupyter_codelia.acp._agent, sys; " + (
        "print(any(m.startswith('jupyter_ai') for m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
