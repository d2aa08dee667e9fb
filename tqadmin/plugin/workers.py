"""Other frameworks' workers as a plugin reads them from their broker: who exists, who lives, what each runs.

A plugin that finds them (Redis: RQ, Sidekiq, Dramatiq) reads the registries those frameworks keep and never
writes a byte, not even the clean-ups the frameworks' own APIs run on a read. One registry that cannot be
read does not hide the others: it is named in :attr:`WorkerReading.unreadable` and the rest are listed. Nor
does one entry of a registry hide the rest of it: a worker whose keys hold what its framework would not
write is skipped and named (:class:`Skipped`), and the others are listed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from tqadmin.show.broker_text import escaped
from tqadmin.telemetry.counters import TaskStats

T = TypeVar("T")
P = ParamSpec("P")
MAX_NAMED_SKIPS = 10  # entries named one by one in a reading; the rest are counted
MAX_SKIP_CHARS = 300  # one named entry, with why: a hostile name is clipped


class MalformedEntry(ValueError):
    """A registry entry that is not what its framework writes; the message names the field and what it
    should be (``info.queues is not a list``)."""


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
    ``quiet``). ``usual_run_s`` is the framework's own figure of how long this worker's jobs take, where it
    keeps one (RQ: its total working time over the jobs it ran), for the wedged verdict; ``ended`` how many
    jobs it finished, where its framework counts them (RQ), for the stall verdict.
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
    usual_run_s: float | None = None
    ended: int | None = None  # jobs it finished (done or failed) where its framework counts them (RQ)


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
    folded into ``(other)`` past its cap. ``totals`` are the jobs a framework's workers finished all together,
    by framework, where it keeps only such a total (Sidekiq's ``stat:processed`` + ``stat:failed``), for the
    stall verdict.
    """

    workers: tuple[ForeignWorker, ...] = ()
    unreadable: tuple[str, ...] = ()
    tasks: Mapping[str, Mapping[str, TaskStats]] = field(default_factory=dict)
    wait_from: Mapping[str, str] = field(default_factory=dict)
    folded: Mapping[str, int] = field(default_factory=dict)
    totals: Mapping[str, int] = field(default_factory=dict)


class Skipped:
    """The entries of the registries read at one poll that could not be read, each named with its source
    and why (``sidekiq process web-1:12:ab: info.queues is not a list``): the first :data:`MAX_NAMED_SKIPS`,
    clipped and with control characters escaped, and the rest counted by source, so that a registry of a
    million bad entries still gives a short reading."""

    def __init__(self) -> None:
        self._named: list[str] = []
        self._more: dict[str, int] = {}

    def decoded(
        self, source: str, entry: str, decode: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T | None:
        """``decode(*args, **kwargs)``, or ``None`` with ``source entry`` named: an entry its framework
        would not write (:class:`MalformedEntry`), a key of another type (the reply is an error), or any
        other exception, since no entry may hide the others."""
        try:
            return decode(*args, **kwargs)
        except MalformedEntry as exc:
            self.add(source, entry, str(exc))
        except Exception as exc:  # a reader outlives any entry: this one is named, the others listed
            self.add(source, entry, f"{type(exc).__name__}: {exc}")
        return None

    def add(self, source: str, entry: str, why: str) -> None:
        if len(self._named) < MAX_NAMED_SKIPS:
            self._named.append(escaped(f"{source} {entry}: {why}"[:MAX_SKIP_CHARS]))
        else:
            self._more[source] = self._more.get(source, 0) + 1

    def lines(self) -> tuple[str, ...]:
        """What :attr:`WorkerReading.unreadable` says of them."""
        counted = (f"{source}: {n} more entries skipped" for source, n in self._more.items())
        return (*self._named, *counted)
