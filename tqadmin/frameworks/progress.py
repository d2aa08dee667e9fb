"""Other frameworks' workers as the verdict sees them (:class:`~tqadmin.telemetry.verdict.WorkerView`): what
they run and since when, which proves that a worker whose every slot held the same jobs since before a window
completed nothing in it. They count no completions tqadmin can read per queue, so ``completed`` is ``None``.

How many jobs a worker runs at once is taken only where its framework says it: RQ runs one at a time,
Sidekiq and others give their ``concurrency``. Celery's events name the tasks a worker runs but not its pool
size, so a Celery worker proves nothing here (the broker's ack rate still does, on RabbitMQ).
"""

from __future__ import annotations

from tqadmin.frameworks.summary import RQ
from tqadmin.plugin.workers import ForeignWorker
from tqadmin.telemetry.verdict import WorkerView


def foreign_view(worker: ForeignWorker) -> WorkerView:
    """``worker`` (alive) as a view; its jobs' start times are its own clock's, taken as they are."""
    starts = tuple(job.started_at for job in worker.current_jobs if job.started_at is not None)
    complete = len(starts) == len(worker.current_jobs)
    slots = 1 if worker.framework == RQ else worker.concurrency
    return WorkerView(
        f"{worker.framework}:{worker.name}", slots=slots if complete else None, busy_since=starts
    )


def foreign_views(workers: tuple[ForeignWorker, ...], queue: str) -> tuple[WorkerView, ...]:
    """The live ones of ``workers`` that serve ``queue``, as views (liveness unknown counts as not live).
    A framework's queue is listed under its framework's name (``rq:orders``), its workers name it bare."""
    return tuple(foreign_view(w) for w in workers if w.alive and serves(w, queue))


def serves(worker: ForeignWorker, queue: str) -> bool:
    """Whether ``worker`` takes from the queue listed as ``queue`` (``orders`` or ``rq:orders``)."""
    return queue in worker.queues or queue.removeprefix(f"{worker.framework}:") in worker.queues
