"""The Binder environment, built from the files in binder/ alone, serves the quickstart.

repo2docker reads binder/environment.yml (conda: Python, Node.js; pip: the rest) and then runs
binder/postBuild. No conda here, so the slow test does the same with a venv: pip installs
binder/requirements.txt (asserted equal to the environment's pip section), runs postBuild in a
copy of the repository's files (so the labextension is built from source, as on Binder), then
starts JupyterLab and fetches the quickstart page and the side panel's static files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"
README = REPO / "README.md"
BADGE_URL = (
    "https://mybinder.org/v2/gh/jupyter-codelia/jupyter-codelia/main"
    "?urlpath=lab/tree/notebooks/quickstart.ipynb"
)


def requirement_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def environment_pip_section() -> list[str]:
    env = yaml.safe_load((BINDER / "environment.yml").read_text(encoding="utf-8"))
    pips = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict) and "pip" in dep]
    assert len(pips) == 1, "environment.yml needs exactly one pip section"
    return [str(item) for item in pips[0]]


def test_environment_pip_section_matches_requirements() -> None:
    assert environment_pip_section() == requirement_lines(
        (BINDER / "requirements.txt").read_text(encoding="utf-8")
    )


def test_environment_has_python_node_and_pip() -> None:
    env = yaml.safe_load((BINDER / "environment.yml").read_text(encoding="utf-8"))
    conda = [dep for dep in env["dependencies"] if isinstance(dep, str)]
    assert any(dep.startswith("python=3.") for dep in conda)
    assert any(dep.startswith("nodejs") for dep in conda), "the labextension build needs node"
    assert "pip" in conda


def test_post_build_installs_this_repository() -> None:
    script = BINDER / "postBuild"
    assert os.access(script, os.X_OK), "repo2docker runs postBuild only when it is executable"
    body = script.read_text(encoding="utf-8")
    assert body.startswith("#!/usr/bin/env bash")
    assert "set -euo pipefail" in body
    assert re.search(r"pip install [^\n]*\s\.$", body, re.MULTILINE), body


def test_readme_badge_opens_the_quickstart() -> None:
    readme = README.read_text(encoding="utf-8")
    assert f"({BADGE_URL})" in readme
    assert "https://mybinder.org/badge_logo.svg" in readme


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _copy_repository(target: Path) -> None:
    """The repository's files as a fresh checkout would have them (no build output, no venv)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.is_file():
            continue  # deleted in the working tree
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    print(f"{time.monotonic() - started:6.1f} s  {' '.join(command)}")  # seen with -s
    assert done.returncode == 0, (
        f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
        f"{done.stderr[-5000:]}"
    )


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_binder_environment_serves_the_quickstart(tmp_path: Path) -> None:
    assert shutil.which("node"), "Node.js is needed to build the labextension (conda's nodejs)"
    repo = tmp_path / "repo"
    _copy_repository(repo)
    assert not (repo / "jupyter_codelia" / "labextension").exists()
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, dict(os.environ))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTHON", "JUPYTER", "ANTHROPIC_"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_NO_COMPILE"] = "1"  # bytecode is written on first import anyway; saves ~20 s
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], repo, env)
    _run(["bash", "binder/postBuild"], repo, env)

    port = _free_port()
    runtime = tmp_path / "runtime"
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTER_DATA_DIR=str(tmp_path / "data"),
        JUPYTER_CODELIA_HOME=str(tmp_path / "codelia-home"),
    )
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(
        [
            str(venv / "bin" / "jupyter"),
            "lab",
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            "--IdentityProvider.token=",
            "--LabApp.news_url=None",
            f"--ServerApp.root_dir={repo}",
        ],
        cwd=repo,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        status = 0
        while time.monotonic() < deadline and lab.poll() is None:
            try:
                status, _ = _get(f"{base}/api/status")
            except OSError:
                status = 0
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, (tmp_path / "lab.log").read_text()[-4000:]

        status, page = _get(f"{base}/lab/tree/notebooks/quickstart.ipynb")
        assert status == 200
        found = re.search(r'<script id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.DOTALL)
        assert found, page[:2000]
        config = json.loads(found.group(1))
        ours = [e for e in config["federated_extensions"] if e["name"] == "jupyter-codelia"]
        assert ours, config["federated_extensions"]
        status, entry = _get(f"{base}/lab/extensions/jupyter-codelia/{ours[0]['load']}")
        assert status == 200
        assert "jupyter-codelia" in entry
        status, notebook = _get(f"{base}/api/contents/notebooks/quickstart.ipynb")
        assert status == 200
        assert json.loads(notebook)["type"] == "notebook"
        status, sessions = _get(f"{base}/codelia/api/sessions")
        assert status == 200, sessions  # the server extension is enabled by the install
    finally:
        lab.terminate()
        try:
            lab.wait(timeout=20)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()
        log.close()
