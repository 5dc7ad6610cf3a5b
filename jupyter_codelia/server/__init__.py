"""The jupyter-server extension: the side panel's REST endpoints and the MCP endpoint.

``GET /codelia/api/sessions`` lists past sessions from the session store and
``GET /codelia/api/sessions/<id>/transcript`` returns one session's run envelopes (the same shapes
the ``codelia`` comm sends), so the panel can show and resume history before any kernel runs.
``/codelia/mcp`` serves the kernels' own tools to agents outside them (mcp_endpoint.py).
Enabled on install through ``jupyter-config/server-config/jupyter_codelia.json``.
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_codelia.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from ._handlers import setup_handlers
    from .mcp_endpoint import setup_mcp

    setup_handlers(serverapp.web_app)
    setup_mcp(serverapp.web_app, serverapp)
    serverapp.log.info(
        "jupyter_codelia: side-panel REST endpoints under /codelia/api, MCP at /codelia/mcp"
    )


# The pre-2.0 name, still looked up by some launchers.
load_jupyter_server_extension = _load_jupyter_server_extension
