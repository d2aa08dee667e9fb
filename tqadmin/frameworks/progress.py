"""Other frameworks' workers as the verdict sees them (:class:`~tqadmin.telemetry.verdict.WorkerView`): what
they run and since when, which proves that a worker whose every slot held the same jobs since before a window
completed nothing in it.

How many jobs a worker runs at once is taken only where its framework says it: RQ runs one at a time,
Sidekiq and others give their ``concurrency``. Celery's events name the tasks a worker runs but not its pool
size; where the profile listens to them (``celery_events``), the tasks that ended, counted over every Celery
worker the listener heard, are each Celery worker's ``completed``: a count that did not move proves that no
Celery task ended anywhere, so none on this queue; one that moved may have been another queue's, which can
only hide a stall, never invent one. An RQ worker counts the jobs it finished (``successful_job_count`` and
``failed_job_count`` of its registry hash), over every queue it serves, with the same caveat. Sidekiq
counts no process's jobs, only every process's together (``stat:processed`` + ``stat:failed``): each live
process serving the queue carries that total, said in the reason. A total that did not move proves that no
Sidekiq job ended anywhere on this Redis; one that rose is a completion on this queue only when every
Sidekiq process tqadmin sees serves this queue alone, otherwise the view says what else it counts and the
verdict is ``unknown`` rather than a guess. Other frameworks count none tqadmin reads: ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from tqadmin.frameworks import sidekiq_workers
from tqadmin.frameworks.summary import CELERY, RQ, SIDEKIQ
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
        counted(foreign_view(w, reading.tasks.get(w.framework)), w.framework, reading, queue)
        for w in reading.workers
        if w.alive and serves(w, queue)
    )


TOTALS = {
    SIDEKIQ: (
        "Sidekiq's stat:processed + stat:failed",
        "every Sidekiq process on this Redis",
        sidekiq_workers.BEAT_S,
    )
}
"""What a framework's total is called in a reason, whose jobs it counts, and how often its workers flush
their counts into it."""
SHOWN_QUEUES = 3  # other queues named in a reason; the rest counted


def counted(view: WorkerView, framework: str, reading: WorkerReading, queue: str) -> WorkerView:
    """``view`` with its framework's total of finished jobs as its completions, where the framework keeps
    only a total (:data:`TOTALS`) and the reading has it; ``shared`` saying what else the total counts."""
    total = reading.totals.get(framework)
    if framework not in TOTALS or total is None:
        return view
    said, _who, flush_s = TOTALS[framework]
    return replace(
        view, completed=total, counted_by=said, shared=shared(reading, framework, queue), flush_s=flush_s
    )


def shared(reading: WorkerReading, framework: str, queue: str) -> str | None:
    """What ``framework``'s total counts besides ``queue``'s jobs: the other queues its processes serve
    (the live ones, and the late ones whose queues are still known), or a live process that names none;
    ``None`` when every one serves ``queue`` alone."""
    bare = queue.removeprefix(f"{framework}:")
    processes = [w for w in reading.workers if w.framework == framework and (w.alive or w.queues)]
    counts = f"it counts {TOTALS[framework][1]}"
    if any(not w.queues for w in processes):
        return f"{counts}, and one of them names no queues"
    others = sorted({f"{framework}:{q}" for w in processes for q in w.queues if q != bare})
    if not others:
        return None
    more = f" and {len(others) - SHOWN_QUEUES} more" if len(others) > SHOWN_QUEUES else ""
    return f"{counts}, and they also serve {', '.join(others[:SHOWN_QUEUES])}{more}"


def serves(worker: ForeignWorker, queue: str) -> bool:
    """Whether ``worker`` takes from the queue listed as ``queue`` (``orders`` or ``rq:orders``): its
    registry names it, or a job it runs came from it (Celery's events name no worker's queues)."""
    bare = queue.removeprefix(f"{worker.framework}:")
    return bool({queue, bare} & {*worker.queues, *(job.queue for job in worker.current_jobs)})
