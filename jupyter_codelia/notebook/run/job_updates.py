"""``job.updated`` notices: the side panel's live view of background jobs.

:class:`JobNotifier` sends a job when it starts, when its output or state changes and when it
ends, refreshed by the same ticker as the job cards.
"""

from __future__ import annotations

from typing import Any

from ...standard_tools.jobs import Job, JobRegistry
from ...wire import JobProgress, JobUpdated, JobView
from ..ui.job_cards import watch


def job_view(job: Job) -> JobView:
    """A job as the side panel sees it: state, elapsed time, last lines and progress."""
    progress = job.output.progress()
    return JobView(
        job_id=job.job_id,
        kind=job.kind,
        title=job.title,
        state=job.state,
        elapsed_s=round(job.elapsed_seconds, 1),
        summary=job.summary,
        last_lines=job.output.last_lines(),
        progress=None
        if progress is None
        else JobProgress(percent=progress.percent, done=progress.done, total=progress.total),
    )


class JobNotifier:
    """Broadcasts ``job.updated`` envelopes to the comm listeners while jobs run (and their end).

    Driven by the same ticker as the cards: at most one envelope per job per refresh, and only
    when its output or state changed (front ends count the elapsed time on from ``elapsed_s``).
    """

    def __init__(self, registry: JobRegistry, broadcast: Any) -> None:
        self.registry = registry
        self.broadcast = broadcast
        self._sent: dict[str, tuple[int, str]] = {}
        registry.subscribe(lambda job: self._started(job))

    def _started(self, job: Job) -> None:
        self._send(job)
        watch(self)

    def _send(self, job: Job) -> None:
        self._sent[job.job_id] = (job.output.end, job.state)
        self.broadcast(JobUpdated(job=job_view(job)).dump())

    def refresh(self) -> bool:
        alive = False
        for job in self.registry.jobs():
            last = self._sent.get(job.job_id)
            if last is not None and last[1] != "running":
                continue  # its end was sent already
            if last != (job.output.end, job.state):
                self._send(job)
            alive = alive or job.running
        return alive
