"""Which codelia session each ACP session id stands for, kept across ``codelia-acp`` restarts.

ACP gives a session its id at ``session/new``, before any run; codelia makes its session at the
first run. A client that reopens a chat (Jupyter AI after a server restart) loads the ACP id it
was given, so the pair is written to ``acp-sessions.json`` in the codelia home.
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

from .._private import make_private_dirs, write_private
from ..session import default_home

FILE_NAME = "acp-sessions.json"


class SessionAliases:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> SessionAliases:
        return cls(default_home() / FILE_NAME)

    @staticmethod
    def new_id() -> str:
        return f"acp-{uuid.uuid4()}"

    def get(self, acp_id: str) -> str | None:
        value = self._read().get(acp_id)
        return value if isinstance(value, str) else None

    def set(self, acp_id: str, codelia_id: str) -> None:
        with self._lock:
            known = self._read()
            known[acp_id] = codelia_id
            make_private_dirs(self.path.parent)
            write_private(self.path, json.dumps(known, indent=1).encode())

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}
