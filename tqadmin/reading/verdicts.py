"""Each queue's verdict, computed once in the read service from its successive readings
(:mod:`tqadmin.telemetry.verdict`), so the dashboard, the exporter and ``tqadmin health`` say the same.

:class:`VerdictJudge` is one of the reader's judges: it turns each reading into one observation per work queue
(tqadmin's workers serving it with their completion counts, other frameworks' workers with what they run,
the queue's standing pause) and keeps the window in a :class:`~tqadmin.telemetry.verdict.QueueWatch`.
A face reads the verdicts back with :func:`verdicts_of`. The dashboard reads the broker and the store in two
threads, so a reading may hold the listing without the workers: the judge keeps the last workers, other
frameworks' workers and pauses it was given and judges each listing with them.

Dead-letter queues and retry delay queues are not judged: no work waits there to be run (a work queue's
DLQ depth and oldest age have their own alert).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from tqadmin.frameworks import own_pauses
from tqadmin.frameworks.progress import foreign_views
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.plugin.models import QueueStats
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.reading import Pauses, ProfileReading
from tqadmin.store.completion.base import WorkerRecord
from tqadmin.store.pauses.base import of_queue
from tqadmin.telemetry.verdict import Observation, QueueVerdict, QueueWatch, VerdictPolicy
from tqadmin.telemetry.verdict_inputs import observation, own_views

JUDGED = "verdicts"
"""The key of :attr:`~tqadmin.reading.reading.ProfileReading.judged` the verdicts are kept under."""


def judged_queues(queues: Iterable[QueueStats]) -> list[QueueStats]:
    """The queues a verdict is given to: the work queues, not their retry delay queues nor their DLQs."""
    listed = work_queues(queues, include_delay_queues=False)
    dead_letters = {q.dlq for q in listed}
    return [q for q in listed if q.name not in dead_letters]


class VerdictJudge:
    """Each work queue's verdict over ``policy``'s window (the profile's ``stall_after_s``)."""

    def __init__(self, policy: VerdictPolicy) -> None:
        self.policy = policy
        self.watch = QueueWatch(policy)
        self._records: tuple[WorkerRecord, ...] = ()
        self._frameworks = WorkerReading()
        self._pauses: Pauses | None = None

    def judge(self, reading: ProfileReading) -> ProfileReading:
        self._records = reading.workers if reading.workers is not None else self._records
        self._frameworks = reading.frameworks or self._frameworks
        self._pauses = reading.pauses or self._pauses
        if reading.listing is None:
            return reading
        found = observations(
            judged_queues(reading.listing.queues), reading.at_s, self._records, self._frameworks, self._pauses
        )
        verdicts = self.watch.observe(found)
        return dataclasses.replace(reading, judged={**reading.judged, JUDGED: verdicts})


def verdicts_of(reading: ProfileReading) -> Mapping[str, QueueVerdict]:
    """The verdicts a :class:`VerdictJudge` gave ``reading``'s queues (none without one)."""
    found = reading.judged.get(JUDGED)
    return found if isinstance(found, dict) else {}


def observations(
    queues: Sequence[QueueStats],
    at: float,
    records: Sequence[WorkerRecord],
    frameworks: WorkerReading,
    pauses: Pauses | None,
) -> list[Observation]:
    """Each of ``queues`` as the verdict sees it at ``at``; a queue is paused by a pause of the whole queue,
    tqadmin's or its own framework's (Sidekiq's ``paused`` set); its paused task types make a stall
    ``paused`` (their work is set aside), said in the reason."""
    own = [(r.snapshot, r.age_s, r.alive) for r in records]
    standing, now = (pauses.standing, pauses.now_s) if pauses is not None else ((), 0.0)
    found = []
    for queue in queues:
        workers = own_views(own, queue.name, at) + foreign_views(frameworks, queue.name)
        mine = of_queue(standing, queue.name)
        whole = [p.describe(now) for p in mine if p.target.task_type is None]
        types = [f"task type {p.target.task_type} {p.describe(now)}" for p in mine if p.target.task_type]
        paused = whole[0] if whole else own_pauses.said(queue)
        found.append(observation(queue, at, workers, paused, "; ".join(types) or None))
    return found
