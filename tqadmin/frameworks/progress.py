"""Other frameworks' workers as the verdict sees them (:class:`~tqadmin.telemetry.verdict.WorkerView`): what
they run and since when, which proves that a worker whose every slot held the same jobs since before a window
completed nothing in it.

How many jobs a worker runs at once is taken only where its framework says it: RQ runs one at a time,
Sidekiq and others give their ``concurrency``. Celery's events name the tasks a worker runs but not its pool
size; where the profile listens to them (``celery_events``), the tasks that ended, counted over every Celery
worker the listener heard, are each Celery worker's ``completed``: a count that did not move proves that no
Celery task ended anywhere, so none on this queue; one that moved may have been another queue's, which can
only hide a stall, never invent one. An RQ worker counts the jobs it finished (``successful_job_count`` and
``failed_job_count`` of its registry hash), over every queue it serves, with the same caveat; other
frameworks count none tqadmin reads: ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tqadmin.frameworks.summary import CELERY, RQ
from tqadmin.plugin.workers import ForeignWorker, WorkerReading
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.verdict import WorkerView


def foreign_view(worker: ForeignWorker, tasks: Mapping[str, TaskStats] | None = None) -> WorkerView:
    """``worker`` (alive) as a view, ``tasks`` its framework's figures by task name where its events give
    them; its jobs' start times are its own clock's, taken as they are."""
    starts = tuple(job.started_at for job in worker.current_jobs if job.started_at is not None)
    complete = len(starts) == len(worker.current_jobs)
    slots = 1 if worker.framework == RQ else worker.concurrency
    ended = worker.ended
    if worker.framework == CELERY and tasks is not None:
        ended = sum(t.done + t.failed for t in tasks.values())
    name = f"{worker.framework}:{worker.name}"
    return WorkerView(name, ended, slots=slots if complete else None, busy_since=starts)


def foreign_views(reading: WorkerReading, queue: str) -> tuple[WorkerView, ...]:
    """The live workers of ``reading`` that serve ``queue``, as views (liveness unknown counts as not
    live). A framework's queue is listed under its framework's name (``rq:orders``), its workers name it
    bare."""
    return tuple(
        foreign_view(w, reading.tasks.get(w.framework))
        for w in reading.workers
        if w.alive and serves(w, queue)
    )


def serves(worker: ForeignWorker, queue: str) -> bool:
    """Whether ``worker`` takes from the queue listed as ``queue`` (``orders`` or ``rq:orders``): its
    registry names it, or a job it runs came from it (Celery's events name no worker's queues)."""
    bare = queue.removeprefix(f"{worker.framework}:")
    return bool({queue, bare} & {*worker.queues, *(job.queue for job in worker.current_jobs)})
