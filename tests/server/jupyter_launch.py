"""A real Jupyter server with jupyter_codelia enabled and a token, on loopback.

Plain context managers for the tests here and for ``bench/mcp_endpoint.py``; the process
helpers are the browser tests' (tests/browser/conftest.py, loaded by path so that scripts
outside pytest can use this module too).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def browser_fixtures() -> Any:
    """tests/browser/conftest.py as a module (its launchers and process helpers)."""
    name = "codelia_browser_fixtures"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "browser" / "conftest.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def popen_jupyter_server(
    root: Path, env: dict[str, str], port: int, token: str, log_path: Path, *extra: str
) -> subprocess.Popen[bytes]:
    """A real ``jupyter_server`` on loopback ``port`` serving ``root``, logging to ``log_path``
    (tests/acp starts its server with this too)."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--allow-root",
                "--ip=127.0.0.1",
                f"--port={port}",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                *extra,
            ],
            env=env,
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


@dataclass
class JupyterServer:
    url: str
    token: str
    root: Path
    process: subprocess.Popen[bytes]

    def session(self, path: str) -> str:
        """Start a kernel session for the notebook ``path`` (written empty if missing); its
        kernel id."""
        if not (self.root / path).exists():
            (self.root / path).write_text(json.dumps(EMPTY_NOTEBOOK))
        body = {"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}
        request = urllib.request.Request(
            f"{self.url}/api/sessions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return str(json.loads(response.read())["kernel"]["id"])


@contextmanager
def jupyter_server(
    token: str, *, gateway_url: str | None = None, env_extra: dict[str, str] | None = None
) -> Iterator[JupyterServer]:
    """``jupyter server`` with jupyter_codelia on a free loopback port (kernels on
    ``gateway_url`` when given); stopped, kernels and all, on exit."""
    fixtures = browser_fixtures()
    base = Path(tempfile.mkdtemp(prefix="codelia-server-"))
    root, config, runtime, home = base / "root", base / "config", base / "runtime", base / "home"
    for directory in (root, config, runtime, home):
        directory.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_codelia": True}}})
    )
    port = fixtures.free_port()
    env = fixtures._clean_env()
    env.update(
        {
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_RUNTIME_DIR": str(runtime),
            "JUPYTER_CODELIA_HOME": str(home),
            **(env_extra or {}),
        }
    )
    log_path = base / "server.log"
    extra = [f"--gateway-url={gateway_url}"] if gateway_url else []
    process = popen_jupyter_server(root, env, port, token, log_path, *extra)
    url = f"http://127.0.0.1:{port}"
    try:
        fixtures._wait_http_ok(
            f"{url}/api/status?token={token}", process, "the Jupyter server", log_path
        )
        yield JupyterServer(url, token, root, process)
    finally:
        fixtures._stop(process)
