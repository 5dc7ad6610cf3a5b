"""Python background jobs in the live namespace.

``python`` with ``background: true`` starts the code on its own thread here; a foreground call
that outlives its timeout is adopted the same way (:func:`adopt_python_job`). The job's thread
keeps its own output routing (see ``_execute``), so its prints, warnings and ``display()`` calls
land in the job, never in whatever cell happens to be running. Stopping raises an exception in
the job's thread at its next Python step.

Their cards are drawn by ``ui/job_cards.py`` and announced to the side panel by
``run/job_updates.py``.
"""

from __future__ import annotations

from typing import Any

from ..._text import clip_chars
from ...standard_tools.jobs import Job, JobRegistry, png_of_display
from ._execute import MAX_STREAM_CHARS, Capture, start_thread, stop_thread


class _JobForward:
    """Routes a capture's output into a job and records the end of the code there."""

    def __init__(self, job: Job, format_value: Any) -> None:
        self.job = job
        self.format_value = format_value

    def write(self, stream: str, text: str) -> None:
        self.job.write(text)

    def display(self, data: dict[str, Any]) -> None:
        png = png_of_display(data)
        if png is not None:
            self.job.output.add_image(png)
        elif "text/plain" in data:
            self.job.write(f"{data['text/plain']}\n")

    def finished(self, capture: Capture) -> None:
        if capture.error is not None:
            self.job.write(capture.error + "\n")
            last = capture.error.strip().splitlines()[-1] if capture.error.strip() else "error"
            self.job.finish("failed", last[:200])
            return
        if capture.has_result:
            text = self.format_value(capture.result)
            self.job.write("[result]\n" + clip_chars(text, MAX_STREAM_CHARS) + "\n")
        self.job.finish("completed")


def start_python_job(
    registry: JobRegistry,
    code: str,
    namespace: dict[str, Any],
    shell: Any,
    format_value: Any,
) -> Job:
    """Run ``code`` in ``namespace`` on a new thread as a background job."""
    capture = Capture()
    job = registry.create("python", code, lambda: stop_thread(capture))
    capture.adopt(_JobForward(job, format_value))
    start_thread(code, namespace, shell, capture, name=f"codelia-{job.job_id}")
    return job


def adopt_python_job(
    registry: JobRegistry, code: str, capture: Capture, format_value: Any
) -> Job | None:
    """Turn a foreground call that timed out into a job; None if it ended meanwhile.

    What the call printed so far is the job's first output, already shown to the model.
    """
    job = registry.create("python", code, lambda: stop_thread(capture), announce=False)
    for text in (*capture.stdout, *capture.stderr):
        job.write(text)
    job.model_cursor = job.output.end
    if not capture.adopt(_JobForward(job, format_value)):
        registry.discard(job.job_id)
        return None
    registry.announce(job)
    return job
