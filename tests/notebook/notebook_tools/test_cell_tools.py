"""The notebook tools in a real kernel: a blocking ``%%codelia`` run reads and edits the notebook
through the ``codelia.notebook`` comm, answered the way the labextension answers (``notebook.reply``
through ``bridge.control()`` on a kernel subshell while the magic cell is busy); and the fallback
when no front end answers (nbclient)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from jupyter_codelia.testing import RecordedRequest, ScriptedAnthropicServer, reply, text, tool_use

from ..test_notebook_bridge import _control_on_subshell, _subshell

FRONTEND_MODULE = "jupyter_codelia.notebook.frontend"
TRUSTED = "%load_ext jupyter_codelia\n%config Codelia.approval_mode = 'trusted'"


def tool_results(request: RecordedRequest) -> list[str]:
    """The tool_result texts the request sends back to the model (its last user message)."""
    texts: list[str] = []
    content = request.messages[-1]["content"]
    for block in content if isinstance(content, list) else []:
        if block.get("type") != "tool_result":
            continue
        inner = block.get("content")
        if isinstance(inner, str):
            texts.append(inner)
        else:
            texts.append("".join(b.get("text", "") for b in inner if b.get("type") == "text"))
    return texts


class NotebookFrontEnd:
    """The labextension's side of the codelia.notebook comm over an in-memory notebook."""

    def __init__(self, kernel: Any, cells: list[dict[str, Any]], scratch: Path) -> None:
        self.kernel = kernel
        # What the labextension does when it attaches to a kernel.
        kernel.execute(f"__import__({FRONTEND_MODULE!r}, fromlist=['x']).tab_opened()")
        self.cells = cells
        self.scratch = scratch
        self.subshell = _subshell(kernel)
        self.comm_ids: set[str] = set()
        self.requests: list[dict[str, Any]] = []
        self.finished: list[dict[str, Any]] = []
        self.editing: str | None = None
        self._seen = 0

    def poll(self, kernel: Any) -> None:
        fresh = kernel.iopub[self._seen :]
        self._seen = len(kernel.iopub)
        for msg in fresh:
            content = msg["content"]
            if msg["msg_type"] == "comm_open" and content["target_name"] == "codelia.notebook":
                hello = content["data"]
                if hello["type"] == "output.finished":  # a finished widget's static form
                    self.finished.append(hello)
                    continue
                self.comm_ids.add(content["comm_id"])
                self.reply(hello["request_id"], {"client_id": "tab-1", "subshells": True})
            elif msg["msg_type"] == "comm_msg" and content["comm_id"] in self.comm_ids:
                data = content["data"]
                self.requests.append(data)
                try:
                    result = getattr(self, data["action"])(data["params"])
                except LookupError as exc:
                    self.reply(data["request_id"], error=str(exc))
                else:
                    self.reply(data["request_id"], result)

    def reply(self, reply_to: str, result: Any = None, error: str | None = None) -> None:
        payload: dict[str, Any] = {
            "type": "notebook.reply",
            "request_id": uuid.uuid4().hex,
            "reply_to": reply_to,
            "ok": error is None,
        }
        payload.update({"error": error} if error else {"result": result})
        out = self.scratch / f"reply-{uuid.uuid4().hex}.json"
        answer = _control_on_subshell(self.kernel, self.subshell, payload, out)
        assert answer["ok"], answer

    def snapshot(self, params: dict[str, Any]) -> dict[str, Any]:
        wanted = set(params.get("outputs_for") or [])
        cells = []
        for cell in self.cells:
            view = {k: v for k, v in cell.items() if k != "outputs"}
            view["output_types"] = [o["output_type"] for o in cell.get("outputs", [])]
            if cell["id"] in wanted:
                view["outputs"] = cell.get("outputs", [])
            cells.append(view)
        return {
            "path": "analysis.ipynb",
            "cells": cells,
            "active_cell_id": self.cells[1]["id"],
            "editing_cell_id": self.editing,
            "dirty": True,
        }

    def edit(self, params: dict[str, Any]) -> dict[str, Any]:
        op = params["op"]
        if op == "insert":
            cell = {
                "id": f"new{len(self.cells)}",
                "cell_type": params["cell_type"],
                "source": params["source"],
                "execution_count": None,
                "metadata": {"codelia": params["provenance"]},
            }
            self.cells.insert(params["index"], cell)
            return {"edit_id": "e-ins", "cell_id": cell["id"], "index": params["index"]}
        index = next(i for i, c in enumerate(self.cells) if c["id"] == params["cell_id"])
        if self.cells[index]["source"] != params["expected_source"]:
            raise LookupError(f"cell #{index} changed since it was read")
        self.cells[index]["source"] = params["source"]
        self.cells[index]["metadata"]["codelia"] = params["provenance"]
        return {"edit_id": "e-rep", "cell_id": params["cell_id"], "index": index}


HOSTILE_EDITS: list[dict[str, Any]] = [
    {"action": "insert", "index": 99, "source": "x"},
    {"action": "insert"},
    {"action": "move", "cell_id": "c3"},
    {"action": "replace", "cell_id": "c3", "source": "a", "old_string": "b", "new_string": "c"},
    {"action": "replace", "cell_id": "c3", "old_string": "raise"},
    {"action": "replace", "cell_id": "c4", "old_string": "nothing like this", "new_string": "x"},
    {"action": "replace", "cell_id": "md0", "old_string": "#", "new_string": "%"},
    {"action": "replace", "cell_id": "c3"},
    {"action": "replace"},
]
HOSTILE_MESSAGES = [
    "index=99 is past the end (the notebook has 6).",
    "notebook_edit insert needs source (the new cell's text).",
    "notebook_edit move needs index between 0 and 5.",
    "notebook_edit replace: give source OR old_string/new_string.",
    "notebook_edit replace with old_string also needs new_string.",
    "old_string was not found in cell c4.",
    "old_string occurs 3 times in cell md0; include more surrounding text so it is unique.",
    "notebook_edit replace needs source, or old_string and new_string.",
    "notebook_edit replace needs cell_id (see notebook_read for ids).",
]


def _code(cell_id: str, source: str, count: int | None) -> dict[str, Any]:
    return {
        "id": cell_id,
        "cell_type": "code",
        "source": source,
        "execution_count": count,
        "metadata": {},
    }


def _cells() -> list[dict[str, Any]]:
    error = {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": "boom",
        "traceback": ["\x1b[31mTraceback\x1b[0m", "ValueError: boom"],
    }
    return [
        {"id": "md0", "cell_type": "markdown", "source": "# Sales\n## Loading", "metadata": {}},
        {"id": "c1", "cell_type": "code", "source": "x = 1", "execution_count": 2, "metadata": {}},
        {
            "id": "c2",
            "cell_type": "code",
            "source": "y = x + 2",
            "execution_count": 3,
            "metadata": {},
        },
        {
            "id": "c3",
            "cell_type": "code",
            "source": "raise ValueError('boom')",
            "execution_count": 9,
            "metadata": {},
            "outputs": [error],
        },
        {
            "id": "c4",
            "cell_type": "code",
            "source": "z = 3",
            "execution_count": None,
            "metadata": {},
        },
    ]


def test_blocking_run_reads_edits_and_sees_stale_cells(start_kernel: Any, tmp_path: Path) -> None:
    script = [
        reply(tool_use("notebook_read", {})),
        reply(tool_use("notebook_read", {"search": "boom"})),
        reply(tool_use("kernel_history", {})),
        reply(
            tool_use(
                "notebook_edit",
                {"action": "replace", "cell_id": "c2", "old_string": "+ 2", "new_string": "+ 1"},
            )
        ),
        reply(
            tool_use(
                "notebook_edit",
                {"action": "insert", "cell_id": "c1", "cell_type": "markdown", "source": "Note"},
            )
        ),
        reply(tool_use("notebook_edit", {"action": "replace", "cell_id": "c1", "source": "x=9"})),
        reply(tool_use("notebook_edit", {"action": "delete", "cell_id": "nope"})),
        *(reply(tool_use("notebook_edit", args)) for args in HOSTILE_EDITS),
        reply(text("Fixed cell c2.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute(TRUSTED)
        kernel.execute("x = 1")
        kernel.execute("y = x + 1")
        front = NotebookFrontEnd(kernel, _cells(), tmp_path)
        front.editing = "c1"  # the person is typing in c1: the agent must not overwrite it
        run = kernel.execute("%%codelia\ntidy the notebook", during=front.poll)
        assert run.status == "ok", run.reply
        results = [tool_results(r) for r in server.requests[1:]]
        first_prompt = json.dumps(server.requests[0].messages[-1]["content"])
        # The notebook changed (the agent edited it): the next turn carries the new outline;
        # a turn after that, with nothing changed, carries none.
        server.add(reply(text("ok")), reply(text("ok")))
        kernel.execute("%%codelia\nagain", during=front.poll)
        kernel.execute("%%codelia\nonce more", during=front.poll)
        listed = kernel.execute("%codelia provenance", during=front.poll)
        control = '__import__("jupyter_codelia.notebook.bridge", fromlist=["x"]).control'
        late = {"type": "notebook.reply", "request_id": "r", "reply_to": "gone", "ok": True}
        stale_reply = kernel.execute(f"print({control}({json.dumps(late)!r}))")
        bad = {"type": "notebook.reply", "request_id": "r", "ok": True}
        missing_field = kernel.execute(f"print({control}({json.dumps(bad)!r}))")
        second_prompt = json.dumps(server.requests[-2].messages[-1]["content"])
        third_prompt = json.dumps(server.requests[-1].messages[-1]["content"])

    # The outline is a text block of its own after the prompt (front ends show the prompt alone).
    assert '"text": "tidy the notebook"}, {"type": "text", "text": "<notebook_outline>' in (
        first_prompt
    )
    assert "<notebook_outline>\\nNotebook analysis.ipynb" in first_prompt
    assert "Stale (source changed after it ran): #2" in first_prompt
    assert "<notebook_outline>" in second_prompt and "Agent-edited: #2-3" in second_prompt
    assert "<notebook_outline>" not in third_prompt and "once more" in third_prompt
    assert json.loads(stale_reply.stream_text())["error"] == (
        "notebook.reply: no open kernel request 'gone'"
    )
    assert json.loads(missing_field.stream_text())["error"] == (
        "notebook.reply: missing field 'reply_to'"
    )
    table = next(m for m in listed.messages if m["msg_type"] == "display_data")
    html = table["content"]["data"]["text/html"]
    assert html.startswith("<p>2 agent-edited cell(s) in the live notebook:</p>")
    assert "tidy the notebook" in html and "text-align:left" in html
    plain = table["content"]["data"]["text/plain"].splitlines()
    assert plain[1].split()[:4] == ["cell", "id", "action", "at"]
    assert plain[2].split()[:3] == ["#2", "new5", "insert"]
    assert plain[3].split()[:3] == ["#3", "c2", "replace"]

    outline = results[0][0]
    assert "analysis.ipynb (live, unsaved changes): 5 cells (4 code, 1 markdown)" in outline
    assert "#0 Sales" in outline and "  #0 Loading" in outline
    assert "Active cell: #1 (id c1)" in outline
    assert "Stale (source changed after it ran): #2" in outline
    assert "Outputs from an earlier kernel: #3" in outline
    assert "Never ran: #4" in outline
    assert "Errors: #3" in outline
    assert len(outline.encode()) < 2000

    found = results[1][0]
    assert "--- cell #3 · id c3 · code · ran as [9] · output from an earlier kernel" in found
    assert "[error] ValueError: boom\nTraceback\nValueError: boom" in found  # ANSI stripped
    assert "cell #1" not in found

    history = results[2][0]
    assert "In [2]: x = 1" in history and "In [3]: y = x + 1" in history
    assert "cell #2 (id c2) ran as [3]; what ran:\n    y = x + 1" in history

    replaced = json.loads(results[3][0])
    assert replaced["summary"] == "Replaced the source of cell #2 (id c2)."
    assert replaced["edit_id"] == "e-rep" and replaced["cell_id"] == "c2"
    assert "-y = x + 2\n+y = x + 1" in replaced["diff"]
    by_id = {cell["id"]: cell for cell in front.cells}
    assert by_id["c2"]["source"] == "y = x + 1"
    provenance = by_id["c2"]["metadata"]["codelia"]
    assert provenance["action"] == "replace"
    assert provenance["prompt"] == "tidy the notebook"
    assert provenance["tool_call_id"] and provenance["run_id"] and provenance["session_id"]
    assert provenance["model"].startswith("claude")

    inserted = json.loads(results[4][0])
    assert inserted["summary"] == "Inserted markdown cell #2 (id new5)."
    assert "+Note" in inserted["diff"]
    assert [c["id"] for c in front.cells] == ["md0", "c1", "new5", "c2", "c3", "c4"]
    assert front.cells[2]["source"] == "Note"

    assert results[5][0] == (
        "Error executing tool: The user is typing in cell #1 (id c1) right now; it was not "
        "changed. Tell them the change you suggest, or edit it after they leave the cell."
    )
    assert front.cells[1]["source"] == "x = 1"
    assert results[6][0] == (
        "Error executing tool: notebook_edit delete: no cell with id 'nope'; call "
        "notebook_read() for the current ids."
    )
    for got, expected in zip(results[7:16], HOSTILE_MESSAGES, strict=True):
        assert got[0].startswith("Error executing tool: " + expected), got
    assert [c["source"] for c in front.cells][3:] == [
        "y = x + 1",
        "raise ValueError('boom')",
        "z = 3",
    ]


def test_without_a_front_end_tools_degrade_with_clear_messages(
    tmp_path: Path, codelia_home: Path
) -> None:
    """nbclient runs the notebook headless: nothing answers the codelia.notebook comm."""
    script = [
        reply(tool_use("notebook_read", {})),
        reply(tool_use("notebook_read", {"cell_ids": ["answer"]})),
        reply(tool_use("notebook_edit", {"action": "insert", "source": "print(1)"})),
        reply(tool_use("notebook_run", {"cell_ids": ["answer"]})),
        reply(tool_use("kernel_history", {"last": 3})),
        reply(text("Read the saved notebook.")),
        reply(tool_use("notebook_read", {})),
        reply(text("Cannot read it.")),
    ]
    path = tmp_path / "headless.ipynb"
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("x = 41\nx + 1", id="answer")
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Headless", id="title"),
        nbformat.v4.new_code_cell(TRUSTED.replace("trusted", "full-access"), id="load"),
        answer,
        nbformat.v4.new_code_cell("%%codelia\nwhat is in the notebook?", id="ask"),
        nbformat.v4.new_code_cell("%codelia provenance", id="provenance"),
        nbformat.v4.new_code_cell(
            "import os\ndel __session__\nos.environ.pop('JPY_SESSION_NAME')", id="forget"
        ),
        nbformat.v4.new_code_cell("%%codelia\nand now?", id="ask2"),
    ]
    nbformat.write(nb, path)
    with ScriptedAnthropicServer(script) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            {
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "test-key",
                "JUPYTER_CODELIA_HOME": str(codelia_home),
                "JPY_SESSION_NAME": str(path),
            }
        )
        client = NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(tmp_path)}})
        client.execute(env=env)
        results = [tool_results(r) for r in server.requests[1:]]

    outline = results[0][0]
    assert outline.startswith(
        "Notebook headless.ipynb (last SAVED state read from disk: no live notebook answered, "
        "so unsaved edits and outputs are missing): 7 cells (6 code, 1 markdown)."
    )
    assert "#0 Headless" in outline
    cell = results[1][0]
    assert "--- cell #2 · id answer · code · never ran\nx = 41\nx + 1" in cell
    assert results[2][0].startswith(
        "Error executing tool: notebook_edit needs the live notebook and no JupyterLab or "
        "Notebook 7 tab with the jupyter-codelia extension answered for this kernel"
    )
    assert results[2][0].endswith(
        "Nothing was changed. Show the user the code to paste instead, or write a file with the "
        "file tools."
    )
    assert "notebook_run needs the live notebook and no JupyterLab" in results[3][0]
    assert "Nothing was run; use the python tool" in results[3][0]
    history = results[4][0]
    assert "In [2]: x = 41\n        x + 1\nOut[2]: 42" in history
    assert "Stale cells (saved file): none" in history
    assert results[6][0].startswith(
        "Error executing tool: Cannot read the notebook: no JupyterLab or Notebook 7 tab"
    )
    assert "does not know which .ipynb file it belongs to" in results[6][0]
    assert json.dumps(nb.cells[3].outputs).count("Read the saved notebook.") >= 1
    assert nb.cells[4].outputs[0]["text"] == (
        "No cell of headless.ipynb (as saved) was made or changed by the agent.\n"
    )
