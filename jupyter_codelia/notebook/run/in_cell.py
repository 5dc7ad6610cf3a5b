"""One turn in a cell: a run panel in the cell's output, job cards below it, and the turn run
blocking or in the background (what ``%%codelia`` and the demo call; agents built in a notebook
can call it too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from IPython.core.error import UsageError

from .results import RunHandle, RunInterrupted, RunResult

if TYPE_CHECKING:
    from .runner import NotebookAgent


def run_with_panel(
    nb: NotebookAgent,
    agent: Any,
    prompt: str,
    model: str,
    *,
    background: bool,
    display_id: str | None = None,
) -> Any:
    """Show a panel in the cell output and run the turn blocking or in the background.

    The panel is live widgets where the cell's front end renders them, else static output
    (nbclient, papermill: see ``ui/_viewer``); call this on the cell's own thread. With
    ``display_id`` (an output this cell shows) the panel replaces that output.

    A failed or interrupted blocking run is raised from here, where none of the run's objects
    are local: IPython keeps the last error's traceback (``%debug``), and with it every frame
    it passed through.
    """
    try:
        result = _run_in_cell(nb, agent, prompt, model, background, display_id)
    except RunInterrupted as exc:
        interrupted = exc
    else:
        if isinstance(result, RunResult) and result.status == "error":
            # Fail the cell (so Run All stops) without a traceback; the panel shows the error
            # too and the result stays available as notebook_agent(get_ipython()).last_result.
            raise UsageError(f"codelia run failed: {result.error}")
        return result
    raise interrupted.with_traceback(None)


def _run_in_cell(
    nb: NotebookAgent,
    agent: Any,
    prompt: str,
    model: str,
    background: bool,
    display_id: str | None,
) -> RunResult | RunHandle:
    from ..notebook_tools.cell_tools import revert_edit
    from ..ui._kit import kit_for
    from ..ui._viewer import renders_widgets
    from ..ui.job_cards import JobCards
    from ..ui.panel import RunPanel

    mode: Literal["blocking", "background"] = "background" if background else "blocking"
    kit = kit_for(renders_widgets(nb.shell))

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
        kit=kit,
    )
    panel.show(display_id)
    # Jobs started in this turn get cards below the panel; they keep updating after the turn.
    job_cards = JobCards(nb.jobs, kit)
    job_cards.show(until_jobs=not background)
    if background:
        handle = nb.start_background(agent, prompt, panel)

        def finished(_handle: Any) -> None:
            job_cards.turn_ended(cell_running=False)

        handle.add_done_callback(finished)
        return handle
    try:
        result = nb.run_blocking(agent, prompt, panel)
    finally:
        job_cards.turn_ended(cell_running=True)
    result.panel_shown = True  # the panel above is the cell's output: no Out line repeating it
    return result


def _ignore(_value: Any) -> None:
    """Button callbacks return nothing; a late click on a resolved request is a no-op."""
