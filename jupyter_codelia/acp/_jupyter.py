"""The Jupyter server ``codelia-acp`` works through: finding it, and the REST calls it makes.

A client that starts ``codelia-acp`` from inside Jupyter (Jupyter AI's persona) starts it as a
child of the server, so the server is found as an ancestor process among the servers listed in
the runtime directory (``jpserver-<pid>.json``, which hold each server's URL and token). Started
from elsewhere (Zed), the server whose root directory holds the session's ``cwd`` is taken.
``--server-url``/``--token`` or ``JUPYTER_CODELIA_SERVER_URL``/``JUPYTER_CODELIA_SERVER_TOKEN``
name one explicitly.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ._errors import BridgeError, ServerNotFoundError

URL_ENV = "JUPYTER_CODELIA_SERVER_URL"
TOKEN_ENV = "JUPYTER_CODELIA_SERVER_TOKEN"
_TIMEOUT = 60.0


@dataclass(frozen=True)
class JupyterServer:
    """A running Jupyter server: its base URL (ending in ``/``), token and root directory."""

    url: str
    token: str
    root_dir: Path | None = None
    pid: int | None = None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    def ws_url(self, path: str) -> str:
        return "ws" + self.url[len("http") :] + path

    def relative_path(self, path: Path) -> str | None:
        """``path`` relative to the server's root (the form its APIs take), None if outside."""
        if self.root_dir is None:
            return None
        try:
            return path.resolve().relative_to(self.root_dir.resolve()).as_posix()
        except ValueError:
            return None

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """One REST call; the decoded JSON answer (None for an empty one)."""
        request = HTTPRequest(
            self.url + path,
            method=method,
            headers={**self.headers(), "Content-Type": "application/json"},
            body=None if body is None and method == "GET" else json.dumps(body or {}),
            request_timeout=_TIMEOUT,
            allow_nonstandard_methods=True,
        )
        try:
            response = await AsyncHTTPClient().fetch(request)
        except HTTPClientError as exc:
            detail = exc.response.body.decode(errors="replace")[:500] if exc.response else ""
            raise BridgeError(
                f"{method} {path} on {self.url} failed: {exc.code} {detail}"
            ) from None
        except OSError as exc:
            raise BridgeError(f"cannot reach the Jupyter server at {self.url}: {exc}") from None
        return json.loads(response.body) if response.body else None

    # ------------------------------------------------------------------ the calls used

    async def sessions(self) -> list[dict[str, Any]]:
        found = await self.call("GET", "api/sessions")
        return [s for s in found or [] if isinstance(s, dict)]

    async def start_session(self, path: str, kernel_name: str | None = None) -> dict[str, Any]:
        """A notebook session (and its kernel) for ``path``; the server reuses a running one."""
        body: dict[str, Any] = {"path": path, "name": Path(path).name, "type": "notebook"}
        body["kernel"] = {"name": kernel_name} if kernel_name else {}
        session = await self.call("POST", "api/sessions", body)
        if not isinstance(session, dict):
            raise BridgeError(f"the Jupyter server started no session for {path}")
        return session

    async def create_notebook(self, path: str) -> None:
        content = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        await self.call(
            "PUT", f"api/contents/{quote(path)}", {"type": "notebook", "content": content}
        )

    async def exists(self, path: str) -> bool:
        try:
            await self.call("GET", f"api/contents/{quote(path)}?content=0")
        except BridgeError:
            return False
        return True

    async def codelia_sessions(self) -> list[dict[str, Any]]:
        found = await self.call("GET", "codelia/api/sessions")
        sessions = found.get("sessions") if isinstance(found, dict) else None
        return [s for s in sessions or [] if isinstance(s, dict)]

    async def codelia_transcript(self, session_id: str) -> list[dict[str, Any]]:
        found = await self.call("GET", f"codelia/api/sessions/{quote(session_id)}/transcript")
        events = found.get("events") if isinstance(found, dict) else None
        return [e for e in events or [] if isinstance(e, dict)]


def find_server(cwd: Path, url: str | None = None, token: str | None = None) -> JupyterServer:
    """The Jupyter server for a session in ``cwd`` (see the module docstring for the order)."""
    url = url or os.environ.get(URL_ENV)
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    listed = _listed_servers()
    if url:
        base = url if url.endswith("/") else url + "/"
        for info in listed:  # a listed server gives the root directory (and token) for its URL
            if info.url == base:
                chosen = token if token is not None else info.token
                return JupyterServer(base, chosen, info.root_dir, info.pid)
        return JupyterServer(base, token or "", None)
    alive = [info for info in listed if _alive(info)]
    ancestors = _ancestors()
    parents = [s for s in alive if s.pid in ancestors]
    if parents:  # the nearest ancestor: the server that started this process
        return min(parents, key=lambda s: ancestors.index(s.pid or 0))
    holding = [s for s in alive if s.root_dir is not None and _within(cwd, s.root_dir)]
    if holding:
        return max(holding, key=lambda s: len(str(s.root_dir)))
    raise ServerNotFoundError(
        f"no running Jupyter server serves {cwd}: start one (jupyter lab) in that directory or "
        f"above it, or name one with --server-url URL --token TOKEN (or ${URL_ENV} / ${TOKEN_ENV})"
    )


def _listed_servers() -> list[JupyterServer]:
    from jupyter_core.paths import jupyter_runtime_dir

    servers = []
    for file in sorted(Path(jupyter_runtime_dir()).glob("jpserver-*.json")):
        try:
            info = json.loads(file.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or not isinstance(info.get("url"), str):
            continue
        base = info["url"] if info["url"].endswith("/") else info["url"] + "/"
        root = info.get("root_dir")
        pid = info.get("pid")
        servers.append(
            JupyterServer(
                base,
                str(info.get("token") or ""),
                Path(root) if root else None,
                pid if isinstance(pid, int) else None,
            )
        )
    return servers


def _alive(server: JupyterServer) -> bool:
    pid = server.pid
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ancestors() -> list[int]:
    """This process's parent, its parent and so on (nearest first), where /proc tells."""
    chain: list[int] = []
    pid = os.getppid()
    while pid > 1 and pid not in chain:
        chain.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        # The command name (field 2) may hold spaces; the parent id follows its closing ")".
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return chain


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
