"""One reading of one profile: what every face presents, as one immutable value per poll.

A reading holds the parts it was asked for (:class:`Part`), each as it was read at this poll, or ``None`` with
the reason in :attr:`ProfileReading.unread` when it could not be read; a part not asked for is ``None`` and
not unread. What a face does with a part that failed (keep its last values and mark them stale, list the
rest and exit 5, fail the command) is the face's: the reading only says what was read and what was not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from tqadmin.pipeline.cron.status import CronStatus
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import QueueListing
from tqadmin.plugin.workers import WorkerReading
from tqadmin.store.completion.base import WorkerRecord
from tqadmin.store.pauses.base import Pause
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.wedged import Verdict
from tqadmin.telemetry.window import WindowStats


class Part(StrEnum):
    """A part of a reading, named as a failure names it (``state store: connection refused``)."""

    QUEUES = "broker"
    """The broker's listing (the drain window applied) and its plugin's capabilities."""
    FRAMEWORKS = "worker registries"
    """Other frameworks' workers and tasks, where the plugin reads their registries."""
    WORKERS = "state store"
    """tqadmin's workers from the store, each judged wedged or not, and their cumulative task totals."""
    TELEMETRY = "telemetry"
    """tqadmin's workers' figures over the reader's window (rates, failure rate, latencies)."""
    CRON = "cron"
    """The cron lease's status (``None`` as well where no cron has written: a fresh machine)."""
    PAUSES = "pauses"


EVERY_PART = frozenset(Part)


@dataclass(frozen=True, slots=True)
class Unread:
    """A part that could not be read: ``why`` in one masked line, and the error itself (a command exits
    with its code)."""

    why: str
    error: Exception


@dataclass(frozen=True, slots=True)
class Pauses:
    """The pauses standing in the store, and the store's clock when they were read (their time left)."""

    now_s: float
    standing: tuple[Pause, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileReading:
    """What was read of one profile at one poll (``at_s``: the reader's clock when it ended).

    ``note`` is what a fresh machine adds (where the embedded file will be): the parts that live in a file
    nothing created yet read as empty, never as failed. ``judged`` holds what the reader's judges derived
    from this reading and the ones before it (:class:`~tqadmin.reading.reader.Judge`), by judge name.
    """

    profile: str
    at_s: float
    parts: frozenset[Part] = frozenset()  # the parts asked for
    listing: QueueListing | None = None
    capabilities: Capabilities | None = None
    frameworks: WorkerReading | None = None
    framework_verdicts: tuple[Verdict, ...] = ()  # one per ``frameworks.workers``
    workers: tuple[WorkerRecord, ...] | None = None
    verdicts: tuple[Verdict, ...] = ()  # one per ``workers``
    tasks: Mapping[str, TaskStats] = field(default_factory=dict)  # tqadmin's cumulative totals by task type
    telemetry: WindowStats | None = None
    cron: CronStatus | None = None
    pauses: Pauses | None = None
    unread: Mapping[Part, Unread] = field(default_factory=dict)
    note: str | None = None
    judged: Mapping[str, object] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every part asked for was read."""
        return not self.unread

    def failure(self, part: Part) -> Exception | None:
        """The error that kept ``part`` from being read, ``None`` when it was read (or not asked for)."""
        unread = self.unread.get(part)
        return None if unread is None else unread.error

    def raise_for(self, part: Part) -> None:
        """Raise what kept ``part`` from being read: a command that cannot go on without it."""
        error = self.failure(part)
        if error is not None:
            raise error
