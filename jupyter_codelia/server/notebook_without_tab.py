"""One kernel's notebook requests answered by the server while no tab of its notebook is open.

The server's kernel peer (``kernel_peer.py``) hands each ``notebook.request`` the kernel sends
with no tab connected to :meth:`NotebookWithoutTab.answer`, which returns the result a tab
would send, or raises a :class:`~jupyter_codelia.server.notebook_doc.NotebookDocError` (a
:class:`~jupyter_codelia.errors.CodeliaError`) whose message the kernel's tool shows. The
notebook is the one the kernel's session names, looked up at each request (a renamed notebook
keeps its kernel); the work on the notebook itself is :class:`~.notebook_doc.NotebookDoc`'s.

>>> answer = NotebookWithoutTab(serverapp, kernel_id).answer
>>> await answer({"type": "notebook.request", "request_id": "r1", "client_id": "server-1",
...               "action": "snapshot", "params": {}})
{'path': 'analysis.ipynb', 'cells': [...], 'active_cell_id': None, ...}
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..wire import NotebookRequest
from .notebook_doc import InvalidNotebookRequestError, NotebookDoc, NotebookNotFoundError, RunCells


class NotebookWithoutTab:
    """The no-tab answers for the notebook of one kernel.

    :param serverapp: the jupyter server (its session manager, contents manager and, when
        jupyter-collaboration is enabled, its shared documents).
    :param kernel_id: the kernel whose requests these are.
    :param run_cells: the hook that runs cells in this kernel (see
        :class:`~.notebook_doc.RunCells`); without it ``run`` is refused.

    Keep one per kernel while the server runs: it keeps one :class:`NotebookDoc` per notebook
    path, whose edit records ``revert`` needs.
    """

    def __init__(self, serverapp: Any, kernel_id: str, *, run_cells: RunCells | None = None):
        self._serverapp = serverapp
        self._kernel_id = kernel_id
        self._run_cells = run_cells
        self._docs: dict[str, NotebookDoc] = {}

    async def notebook_path(self) -> str:
        """The contents-API path of the notebook whose session runs this kernel."""
        sessions = await self._serverapp.session_manager.list_sessions()
        paths = [
            str(session.get("path"))
            for session in sessions
            if (session.get("kernel") or {}).get("id") == self._kernel_id
            and str(session.get("path", "")).endswith(".ipynb")
        ]
        if not paths:
            raise NotebookNotFoundError(
                f"kernel {self._kernel_id} belongs to no notebook session (a console or a "
                "kernel started on its own has no notebook to read or edit)"
            )
        return paths[0]

    async def answer(self, data: dict[str, Any]) -> dict[str, Any]:
        """The result of one ``notebook.request`` (a dict as the kernel sent it)."""
        try:
            request = NotebookRequest.model_validate(data)
        except ValidationError as exc:
            raise InvalidNotebookRequestError(
                f"not a notebook request: {exc.error_count()} problem(s), first: "
                f"{exc.errors()[0]['msg']} at {'.'.join(map(str, exc.errors()[0]['loc']))}"
            ) from None
        path = await self.notebook_path()
        doc = self._docs.get(path)
        if doc is None:
            doc = NotebookDoc.for_server(self._serverapp, path, run_cells=self._run_cells)
            self._docs[path] = doc
        return await doc.serve(request)
