"""Other frameworks' workers as a plugin reads them from their broker: who exists, who lives, what each runs.

A plugin that finds them (Redis: RQ, Sidekiq, Dramatiq) reads the registries those frameworks keep and never
writes a byte, not even the clean-ups the frameworks' own APIs run on a read. One registry that cannot be
read does not hide the others: it is named in :attr:`WorkerReading.unreadable` and the rest are listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tqadmin.telemetry.counters import TaskStats


@dataclass(frozen=True, slots=True)
class CurrentJob:
    """A job a worker holds now: its id, its task's name where the framework records one, where it came from
    and since when (epoch seconds) where that is known."""

    id: str
    task: str | None = None
    queue: str | None = None
    started_at: float | None = None


@dataclass(frozen=True, slots=True)
class ForeignWorker:
    """One worker process of another framework.

    ``alive`` is ``None`` where nothing can tell (a Celery worker seen by its control queue alone, without
    task events). ``heartbeat_age_s`` is ``None`` where the framework keeps no heartbeat the reader could
    find; a dead worker says why in ``dead_reason`` (its heartbeat past the framework's own time-to-live,
    its registry hash gone). ``state`` is the framework's own word (RQ's ``busy``/``idle``, Sidekiq's
    ``quiet``).
    """

    framework: str
    name: str
    alive: bool | None
    heartbeat_age_s: float | None
    dead_reason: str | None = None
    queues: tuple[str, ...] = ()
    current_jobs: tuple[CurrentJob, ...] = ()
    host: str | None = None
    pid: int | None = None
    state: str | None = None
    concurrency: int | None = None
    started_at: float | None = None


def liveness(alive: bool | None) -> str:
    """``live``, ``dead`` or ``unknown``: the ``state`` label of ``tqadmin_workers`` and the screen's word."""
    return "unknown" if alive is None else "live" if alive else "dead"


@dataclass(frozen=True, slots=True)
class WorkerReading:
    """Every worker a plugin's registries hold, and the registries it could not read, each with why.

    ``tasks`` are other frameworks' figures per task name where their events give them (Celery with task
    events on), cumulative since the listener started, by framework; ``wait_from`` says per framework what
    their wait time is measured from (``sent``: comparable with tqadmin's published -> started;
    ``received``: the worker's own prefetch wait only); ``folded`` how many task names each listener
    folded into ``(other)`` past its cap.
    """

    workers: tuple[ForeignWorker, ...] = ()
    unreadable: tuple[str, ...] = ()
    tasks: Mapping[str, Mapping[str, TaskStats]] = field(default_factory=dict)
    wait_from: Mapping[str, str] = field(default_factory=dict)
    folded: Mapping[str, int] = field(default_factory=dict)
