"""Other frameworks' workers judged wedged by what they expose, under tqadmin's rule
(:func:`tqadmin.telemetry.wedged.stuck`: every slot busy, each run past its task's limit), never by a guess:

- RQ: a worker runs one job at a time; it is wedged when that job has run past ``factor`` x the worker's own
  mean run time (RQ's ``total_working_time`` over its jobs), at least ``min_s``; ``no_history_s`` before it
  finished any;
- Sidekiq: every one of its ``concurrency`` threads busy on a job whose ``run_at`` is older than
  ``no_history_s`` (Sidekiq keeps no run times in Redis);
- Celery (task events on): every task it has started and not finished is past ``factor`` x that task's p95
  run time from the events, at least ``min_s``; the events give no pool size, so the tasks it runs stand for
  its pool;
- Dramatiq: its registry does not say which held message runs nor since when: ``wedged`` is ``None``, and the
  reason says so; so is a worker whose liveness is unknown or whose jobs carry no start.

The start times are the other framework's, written by its worker's clock: a clock far off skews the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping

from tqadmin.frameworks.summary import CELERY, DRAMATIQ, RQ, SIDEKIQ
from tqadmin.plugin.workers import ForeignWorker
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.progress import BusyThread
from tqadmin.telemetry.wedged import NOT_WEDGED, Verdict, WedgePolicy, stuck, usual_of

UNNAMED_TASK = "(unnamed)"
SAYS_NOTHING = {
    DRAMATIQ: "Dramatiq's registry does not say which held message runs, nor since when",
}


def judge_foreign(
    worker: ForeignWorker,
    policy: WedgePolicy,
    now_s: float,
    tasks: Mapping[str, TaskStats] | None = None,
) -> Verdict:
    """The verdict on another framework's ``worker`` at ``now_s`` (epoch seconds); ``tasks`` are its
    framework's figures by task name where its events give them (Celery), for the usual run times."""
    if worker.alive is False:
        return NOT_WEDGED
    if worker.alive is None:
        return Verdict(None, "whether it lives is unknown")
    if worker.framework in SAYS_NOTHING:
        return Verdict(None, SAYS_NOTHING[worker.framework])
    busy = [
        BusyThread(job.id, job.task or UNNAMED_TASK, job.started_at)
        for job in worker.current_jobs
        if job.started_at is not None
    ]
    if len(busy) < len(worker.current_jobs):
        return Verdict(None, f"{len(worker.current_jobs) - len(busy)} of its jobs carry no start time")
    threads, usual, what = _slots(worker, busy, tasks or {})
    if threads is None:
        return Verdict(None, f"{worker.framework} does not say how many jobs it runs at once")
    usual_name = "mean" if worker.framework == RQ else "p95"
    found = stuck(threads, busy, now_s, usual, policy, what=what, usual_name=usual_name)
    if found is None:
        return NOT_WEDGED
    return Verdict(True, found[0], found[1])


def _slots(
    worker: ForeignWorker, busy: list[BusyThread], tasks: Mapping[str, TaskStats]
) -> tuple[int | None, dict[str, float], str]:
    """How many jobs ``worker`` runs at once, the usual run time by task, and what its slots are called."""
    if worker.framework == RQ:
        usual = {} if worker.usual_run_s is None else {b.task_type: worker.usual_run_s for b in busy}
        return 1, usual, "job slots"  # one job at a time, in a forked work horse
    if worker.framework == CELERY:
        return len(busy), usual_of(tasks), "running tasks"
    if worker.framework == SIDEKIQ:
        return worker.concurrency, {}, "threads"
    return worker.concurrency, {}, "job slots"
