"""One turn in a cell: a run panel in the cell's output, job cards below it, and the turn run
blocking or in the background (what ``%%codelia`` and the demo call; agents built in a notebook
can call it too)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from .runner import NotebookAgent


def run_with_panel(
    nb: NotebookAgent, agent: Any, prompt: str, model: str, *, background: bool
) -> Any:
    """Show a panel in the cell output and run the turn blocking or in the background."""
    from IPython.display import display

    from ..notebook_tools.cell_tools import revert_edit
    from ..ui import _static
    from ..ui.panel import RunPanel

    mode: Literal["blocking", "background"] = "background" if background else "blocking"

    def stop() -> None:
        if nb.active is not None:
            nb.cancel(nb.active.run_id)

    panel = RunPanel(
        model=model,
        session_id=agent.session_id,
        mode=mode,
        prompt=prompt,
        on_stop=stop,
        on_decision=lambda rid, decision, reason, content: _ignore(
            nb.respond(rid, decision, reason, content)
        ),
        demo=nb.is_demo(agent),
        on_undo=nb.undo.undo,
        on_revert=lambda edit_id: revert_edit(nb.frontend, edit_id),
    )
    panel.show()
    # Jobs started in this turn get cards below the panel; they keep updating after the turn.
    from ..ui.job_cards import JobCards

    job_cards = JobCards(nb.jobs)
    jobs_display = uuid.uuid4().hex
    display(job_cards.box, display_id=jobs_display)
    if background:
        handle = nb.start_background(agent, prompt, panel)
        handle.add_done_callback(lambda _handle: job_cards.stop_following())
        return handle
    try:
        result = nb.run_blocking(agent, prompt, panel)
    finally:
        job_cards.stop_following()
        if job_cards.empty:
            # No job to follow: the empty box would stay a live widget and, saved, a
            # "VBox(...)" line in nbconvert and GitHub.
            _static.display_static(jobs_display, {"text/plain": ""})
            _static.close_tree(job_cards.box)
    if result.status == "error":
        # Fail the cell (so Run All stops) without a traceback; the panel shows the error too
        # and the result stays available as notebook_agent(get_ipython()).last_result.
        raise UsageError(f"codelia run failed: {result.error}")
    return result


def _ignore(_value: Any) -> None:
    """Button callbacks return nothing; a late click on a resolved request is a no-op."""
