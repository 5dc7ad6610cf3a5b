"""The offline demo (``%codelia --demo``): a canned turn played by a ScriptedAnthropicServer.

It needs no API key and is clearly not Claude: the replies are scripted. The turn plans with
todos, runs Python that builds a small table and a matplotlib plot in the notebook's namespace,
edits a file in a scratch directory (shown as a coloured diff) and ends with a short summary, so
a newcomer sees every part of the panel. The script checks what its tools returned
(``testing.play``): if the plot or the edit did not happen, it says so instead of the summary.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Settings

if TYPE_CHECKING:
    from .run.runner import NotebookAgent

DEMO_LABEL = "OFFLINE DEMO: scripted replies from a local test server, not Claude."

DEMO_FILE = "analysis.py"
DEMO_SOURCE = '''"""Monthly sales summary."""

TAX_RATE = 0.2


def net(gross):
    return gross * (1 - TAX_RATE)
'''

_PLOT_CODE = """import matplotlib.pyplot as plt
demo_sales = {"Jan": 120, "Feb": 95, "Mar": 140, "Apr": 160}
fig, ax = plt.subplots(figsize=(4, 2.5))
ax.bar(list(demo_sales), list(demo_sales.values()), color="#4c72b0")
ax.set_title("Demo sales by month")
print("total:", sum(demo_sales.values()))
"""


def demo_script() -> list[Any]:
    """The canned turns: todos, a python plot, an edit with a diff, a summary."""
    from ..testing import REAL_MODEL_HINT, reply, text, tool_use

    todos = [
        {"id": "1", "content": "Plot the monthly sales", "status": "in_progress"},
        {"id": "2", "content": "Lower the tax rate in analysis.py", "status": "pending"},
        {"id": "3", "content": "Summarise", "status": "pending"},
    ]
    return [
        reply(
            text("This is the **offline demo**. I'll plan the work first."),
            tool_use("todo_new", {"todos": todos}),
        ),
        reply(
            text("Now a plot, run in your kernel:"),
            tool_use("python", {"code": _PLOT_CODE}, expect="total: 515"),
        ),
        reply(
            tool_use(
                "todo_patch",
                {
                    "updates": [
                        {"id": "1", "status": "completed"},
                        {"id": "2", "status": "in_progress"},
                    ]
                },
            ),
        ),
        reply(
            text("Next, an edit (you will see its diff):"),
            tool_use(
                "edit",
                {
                    "file_path": DEMO_FILE,
                    "old_string": "TAX_RATE = 0.2",
                    "new_string": "TAX_RATE = 0.15  # lowered in the demo",
                },
                expect="TAX_RATE = 0.15",
            ),
        ),
        reply(
            tool_use(
                "todo_patch",
                {
                    "updates": [
                        {"id": "2", "status": "completed"},
                        {"id": "3", "status": "completed"},
                    ]
                },
            ),
        ),
        reply(
            text(
                "Done. In this demo I:\n\n"
                "1. planned with a **todo list**,\n"
                "2. ran Python in your namespace (`demo_sales` now exists) and looked at "
                "the plot,\n"
                f"3. edited `{DEMO_FILE}`.\n\n"
                f"{REAL_MODEL_HINT} Then ask anything with `%%codelia <your question>`."
            )
        ),
    ]


def make_workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="codelia-demo-"))
    (root / DEMO_FILE).write_text(DEMO_SOURCE, encoding="utf-8")
    return root


def run_demo(
    nb: NotebookAgent,
    settings: Settings,
    prompt: str | None,
    *,
    background: bool,
    display_id: str | None = None,
) -> Any:
    """Play the demo turn with the panel; the server stops when the turn ends."""
    from IPython.display import HTML, display

    from ..llm.anthropic.chat import AnthropicChat
    from ..testing import ScriptedAnthropicServer, play
    from .run.in_cell import run_with_panel

    root = make_workspace()
    server = ScriptedAnthropicServer(play(demo_script())).start()
    display(HTML(f'<div style="color:#e37400;font-weight:600">{DEMO_LABEL}</div>'))
    demo_settings = settings.with_overrides(root=str(root))
    llm = AnthropicChat(
        model=demo_settings.model, base_url=server.url, api_key="demo-not-a-real-key"
    )
    agent = nb.build_detached(demo_settings, llm)
    text = prompt or "Show me what you can do (demo)."
    try:
        outcome = run_with_panel(
            nb,
            agent,
            text,
            f"{settings.model} (demo)",
            background=background,
            display_id=display_id,
        )
    except BaseException:
        server.stop()
        raise
    if background:
        outcome.add_done_callback(lambda _handle: server.stop())
    else:
        server.stop()
    return outcome
