"""One profile read once per interval through the read service, and served to every scrape.

Scrapes never reach a broker: they are served the last values (:class:`Served`), however many scrapers there
are. Each poll is one reading of the profile (:class:`~tqadmin.reading.reader.ProfileReader`: its broker's
queues, its store's workers and cron, other frameworks' workers; the history recorded there, unless the
profile is read-only; each queue's verdict over the profile's ``stall_after_s``, judged there). A part that
cannot be read keeps its last values, the profile is marked failed (``tqadmin_up`` 0), one line is logged
when the outage starts and one when it ends, and the next poll comes after
:func:`~tqadmin.connect.backoff.poll_retry_delay` as the dashboard's does. Nothing is peeked or consumed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from tqadmin.config import Settings
from tqadmin.connect.backoff import poll_retry_delay
from tqadmin.pipeline.cron.status import CronStatus
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.plugin.models import QueueStats
from tqadmin.plugin.workers import liveness
from tqadmin.reading.deadline import PollDeadline
from tqadmin.reading.reader import CRON_NAMESPACE, Connections, ProfileReader
from tqadmin.reading.reading import Part, ProfileReading
from tqadmin.reading.recording import history_name
from tqadmin.reading.verdicts import VerdictJudge, verdicts_of
from tqadmin.store.completion.base import WorkerRecord
from tqadmin.store.pauses.base import Pause
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.metric_names import FRAMEWORK
from tqadmin.telemetry.verdict import QueueVerdict, VerdictPolicy

log = logging.getLogger("tqadmin.exporter")

PARTS = frozenset(Part) - {Part.TELEMETRY}  # rates come from the workers' totals, not a window


@dataclass(frozen=True, slots=True)
class Served:
    """What the exporter serves of one profile: the last values read of each part (``None`` until a part
    was read once), and how the polls went."""

    profile: str
    queues: tuple[QueueStats, ...] | None = None
    tasks: Mapping[str, TaskStats] = field(default_factory=dict)
    workers: Counter[str] = field(default_factory=Counter)  # by state: live, dead
    worker_queues: tuple[tuple[tuple[str, ...], bool], ...] = ()  # each worker's queues, and if it is alive
    framework_workers: Counter[tuple[str, str]] = field(default_factory=Counter)  # (framework, state)
    wedged: Counter[str] = field(default_factory=Counter)  # live workers judged wedged, by framework
    framework_tasks: Mapping[str, Mapping[str, TaskStats]] = field(default_factory=dict)  # from events
    folded_task_types: int = 0  # task types the listed workers folded into "(other)", added up
    framework_folded: Mapping[str, int] = field(default_factory=dict)  # the same by their listeners
    cron: CronStatus | None = None
    pauses: tuple[Pause, ...] = ()
    verdicts: Mapping[str, QueueVerdict] = field(default_factory=dict)  # by queue (docs/health.md)
    up: bool = False
    last_success_s: float | None = None  # wall clock
    duration_s: float | None = None
    errors: int = 0
    version: int = 0  # one more each poll: what a scrape's encoding is kept by


class ProfilePoller:
    """Reads one profile; :meth:`run` polls until stopped, :meth:`poll` once (tests, the first poll)."""

    def __init__(
        self,
        settings: Settings,
        interval_s: float,
        *,
        clock: Callable[[], float] = time.time,
        connect_admin: Callable[[], BrokerAdmin] | None = None,
        cron_namespace: str = CRON_NAMESPACE,
    ) -> None:
        self.profile = profile_label(settings)
        self.interval_s = interval_s
        self._clock = clock
        self._reader = ProfileReader(
            settings,
            clock=clock,
            connect=Connections(admin=connect_admin),
            record=True,
            cron_namespace=cron_namespace,
            judges=[VerdictJudge(VerdictPolicy(settings.stall_after_s))],
        )
        self._lock = threading.Lock()
        self._served = Served(self.profile)
        self._failures = 0  # polls failed in a row
        self._failing: set[str] = set()  # the parts that failed at the last poll
        self.deadline = PollDeadline(settings.timeout_s)

    def reading(self) -> Served:
        """The last values; down while the poll under way is past its deadline (a hung broker)."""
        with self._lock:
            served = self._served
        return replace(served, up=False) if served.up and self.deadline.overdue() else served

    def run(self, stop: threading.Event) -> None:
        """Poll every interval (sooner after a failure, then backing off) until ``stop`` is set."""
        while not stop.is_set():
            self.poll()
            stop.wait(poll_retry_delay(self._failures, self.interval_s))

    def close(self) -> None:
        self._reader.close()

    def stop_recording(self, timeout_s: float) -> bool:
        """No history write starts after this; one under way is waited for, up to ``timeout_s``."""
        return self._reader.stop_recording(timeout_s)

    def poll(self) -> bool:
        """Read every part once; ``True`` when all of them answered."""
        self.deadline.started()
        try:
            return self._poll()
        finally:
            self.deadline.ended()

    def _poll(self) -> bool:
        started = time.monotonic()
        r = self._reader.read(PARTS)
        with self._lock:
            last = self._served
            records, others = r.workers, r.frameworks
            self._served = Served(
                self.profile,
                queues=last.queues if r.listing is None else tuple(work_queues(r.listing.queues)),
                tasks=r.tasks,
                workers=last.workers if records is None else _by_state(records),
                worker_queues=last.worker_queues if records is None else _served(records),
                framework_workers=last.framework_workers if others is None else _by_framework(r),
                wedged=_wedged(last.wedged, r),
                framework_tasks=last.framework_tasks if others is None else others.tasks,
                folded_task_types=last.folded_task_types if records is None else _folded(records),
                framework_folded=last.framework_folded if others is None else others.folded,
                cron=last.cron if Part.CRON in r.unread else r.cron,
                pauses=last.pauses if r.pauses is None else r.pauses.standing,
                verdicts=last.verdicts if r.listing is None else verdicts_of(r),
                up=r.complete,
                last_success_s=last.last_success_s if r.unread else self._clock(),
                duration_s=time.monotonic() - started,
                errors=last.errors + bool(r.unread),
                version=last.version + 1,
            )
        self._say({str(part): unread.why for part, unread in r.unread.items()})
        return r.complete

    def _say(self, failed: dict[str, str]) -> None:
        if failed:
            self._failures += 1
            if set(failed) != self._failing:  # an outage starts, or another part fails: one line
                what = "; ".join(f"{part}: {why}" for part, why in failed.items())
                log.warning(
                    "profile %s: %s; serving the last values as stale (tqadmin_up 0)", self.profile, what
                )
            self._failing = set(failed)
        elif self._failing:
            log.warning("profile %s: read again after %d failed polls", self.profile, self._failures)
            self._failing, self._failures = set(), 0


def profile_label(settings: Settings) -> str:
    """The ``profile`` label of a profile's series (``default`` when none is configured), and the name its
    history is kept under."""
    return history_name(settings.profile)


def _wedged(last: Counter[str], reading: ProfileReading) -> Counter[str]:
    """Live workers judged wedged, by framework; a part that could not be read keeps its last count."""
    if reading.frameworks is None:
        wedged = Counter({framework: n for framework, n in last.items() if framework != FRAMEWORK})
    else:
        judged = zip(reading.frameworks.workers, reading.framework_verdicts, strict=True)
        wedged = Counter(worker.framework for worker, verdict in judged if verdict.wedged is True)
    if reading.workers is None:
        wedged[FRAMEWORK] = last[FRAMEWORK]
    else:
        wedged[FRAMEWORK] = sum(verdict.wedged is True for verdict in reading.verdicts)
    return wedged


def _by_framework(reading: ProfileReading) -> Counter[tuple[str, str]]:
    workers = reading.frameworks.workers if reading.frameworks else ()
    return Counter((w.framework, liveness(w.alive)) for w in workers)


def _served(records: tuple[WorkerRecord, ...]) -> tuple[tuple[tuple[str, ...], bool], ...]:
    return tuple((record.snapshot.queues, record.alive) for record in records)


def _folded(records: tuple[WorkerRecord, ...]) -> int:
    return sum(record.snapshot.folded_task_types for record in records)


def _by_state(records: tuple[WorkerRecord, ...]) -> Counter[str]:
    return Counter("live" if record.alive else "dead" for record in records)
