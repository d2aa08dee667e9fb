"""One profile read once per interval: its broker's queues, its store's workers and cron.

Scrapes never reach a broker: they are served the last reading (:class:`Reading`), however many scrapers
there are. A part that cannot be read keeps its last values, the reading is marked failed
(``tqadmin_up`` 0), one line is logged when the outage starts and one when it ends, and the next poll comes
after :func:`~tqadmin.backoff.poll_retry_delay` as the dashboard's does. Nothing is peeked or consumed: the
listing is the broker's own figures, the store is opened as a reader (never creating the embedded file).
Unless the profile is read-only, each poll's queues and task totals also go to the profile's history
(:mod:`tqadmin.reading.recording`), so the dashboard can chart what the exporter saw.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

from tqadmin.backoff import poll_retry_delay
from tqadmin.config import Settings
from tqadmin.file_access import Access
from tqadmin.frameworks.wedged import judge_foreign
from tqadmin.masking import mask_text
from tqadmin.pipeline.cron.status import CronStatus, read_status
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.delays import work_queues
from tqadmin.plugin.drain import DrainWindow
from tqadmin.plugin.models import QueueStats
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.workers import WorkerReading, liveness
from tqadmin.reading.deadline import PollDeadline
from tqadmin.reading.lazy import Lazy, unless_fresh
from tqadmin.reading.recording import history_name, recorder_for
from tqadmin.store import open_store
from tqadmin.store.base import StateStore, WorkerRecord
from tqadmin.store.lease import CronStore, open_cron_store
from tqadmin.store.pauses import Pause, PauseStore, open_pauses
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.ledger import WorkerLedger
from tqadmin.telemetry.metric_names import FRAMEWORK
from tqadmin.telemetry.wedged import judge_all

log = logging.getLogger("tqadmin.exporter")

CRON_NAMESPACE = "default"  # what ``tqadmin cron`` runs under unless told otherwise
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Reading:
    """What the exporter serves of one profile: the last values read of each part (``None`` until a part
    was read once), and how the polls went."""

    profile: str
    queues: tuple[QueueStats, ...] | None = None
    tasks: dict[str, TaskStats] = field(default_factory=dict)
    workers: Counter[str] = field(default_factory=Counter)  # by state: live, dead
    worker_queues: tuple[tuple[tuple[str, ...], bool], ...] = ()  # each worker's queues, and if it is alive
    framework_workers: Counter[tuple[str, str]] = field(default_factory=Counter)  # (framework, state)
    wedged: Counter[str] = field(default_factory=Counter)  # live workers judged wedged, by framework
    framework_tasks: Mapping[str, Mapping[str, TaskStats]] = field(default_factory=dict)  # from events
    folded_task_types: int = 0  # task types the listed workers folded into "(other)", added up
    framework_folded: Mapping[str, int] = field(default_factory=dict)  # the same by their listeners
    cron: CronStatus | None = None
    pauses: tuple[Pause, ...] = ()
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
        self._fresh = settings.not_created_yet
        self._wedge_policy = settings.wedged
        timeout = settings.timeout_s
        self._admin: Lazy[BrokerAdmin] = Lazy(
            connect_admin or (lambda: plugin_for_url(settings.broker_url).admin(settings.broker_config()))
        )
        self._store: Lazy[StateStore] = Lazy(
            lambda: open_store(settings.store_url, timeout_s=timeout, access=Access.READ)
        )
        self._pauses: Lazy[PauseStore] = Lazy(
            lambda: open_pauses(settings.store_url, timeout_s=timeout, access=Access.READ)
        )
        self._cron: Lazy[CronStore] = Lazy(
            lambda: open_cron_store(settings.store_url, cron_namespace, timeout, access=Access.READ)
        )
        self._ledger = WorkerLedger()
        self._drain = DrainWindow(clock=clock)
        self._recorder = recorder_for(settings, clock)
        self._lock = threading.Lock()
        self._reading = Reading(self.profile)
        self._failures = 0  # polls failed in a row
        self._failing: set[str] = set()  # the parts that failed at the last poll
        self.deadline = PollDeadline(timeout)

    def reading(self) -> Reading:
        """The last reading; down while the poll under way is past its deadline (a hung broker)."""
        with self._lock:
            reading = self._reading
        return replace(reading, up=False) if reading.up and self.deadline.overdue() else reading

    def run(self, stop: threading.Event) -> None:
        """Poll every interval (sooner after a failure, then backing off) until ``stop`` is set."""
        while not stop.is_set():
            self.poll()
            stop.wait(poll_retry_delay(self._failures, self.interval_s))

    def close(self) -> None:
        for part in (self._admin, self._store, self._cron, self._pauses):
            part.close()
        if self._recorder is not None:
            self._recorder.close()

    def poll(self) -> bool:
        """Read every part once; ``True`` when all of them answered."""
        self.deadline.started()
        try:
            return self._poll()
        finally:
            self.deadline.ended()

    def _poll(self) -> bool:
        started = time.monotonic()
        failed: dict[str, str] = {}  # part -> why
        no_queues: tuple[QueueStats, ...] = ()
        no_workers: list[WorkerRecord] = []
        queues = self._part("broker", self._queues, no_queues, failed)
        records = self._part(
            "state store", lambda: self._store.use(lambda s: s.workers()), no_workers, failed
        )
        cron = self._part("cron", lambda: self._cron.use(read_status), None, failed)
        no_pauses: tuple[Pause, ...] = ()
        pauses = self._part("pauses", lambda: self._pauses.use(_standing), no_pauses, failed)
        others = self._part(
            "worker registries", lambda: self._admin.use(_framework_workers), WorkerReading(), failed
        )
        if records is not None:
            self._ledger.update(record.snapshot for record in records)
        tasks = self._ledger.totals()
        if self._recorder is not None:
            if queues is not None:
                self._recorder.record_queues(queues)
            if records is not None:
                self._recorder.record_tasks(self._ledger.workers())
        with self._lock:
            last = self._reading
            self._reading = Reading(
                self.profile,
                queues=last.queues if queues is None else queues,
                tasks=tasks,
                workers=last.workers if records is None else _by_state(records),
                worker_queues=last.worker_queues if records is None else _served(records),
                framework_workers=last.framework_workers if others is None else _by_framework(others),
                wedged=self._wedged(last.wedged, records, others),
                framework_tasks=last.framework_tasks if others is None else others.tasks,
                folded_task_types=last.folded_task_types if records is None else _folded(records),
                framework_folded=last.framework_folded if others is None else others.folded,
                cron=last.cron if "cron" in failed else cron,
                pauses=last.pauses if pauses is None else pauses,
                up=not failed,
                last_success_s=last.last_success_s if failed else self._clock(),
                duration_s=time.monotonic() - started,
                errors=last.errors + bool(failed),
                version=last.version + 1,
            )
        self._say(failed)
        return not failed

    def _queues(self) -> tuple[QueueStats, ...]:
        return self._drain.observe(self._admin.use(_listed))

    def _wedged(
        self, last: Counter[str], records: list[WorkerRecord] | None, others: WorkerReading | None
    ) -> Counter[str]:
        """Live workers judged wedged, by framework; a part that could not be read keeps its last count."""
        policy = self._wedge_policy
        if others is None:
            wedged = Counter({framework: n for framework, n in last.items() if framework != FRAMEWORK})
        else:
            now = self._clock()
            wedged = Counter(
                w.framework
                for w in others.workers
                if judge_foreign(w, policy, now, others.tasks.get(w.framework)).wedged is True
            )
        if records is None:
            wedged[FRAMEWORK] = last[FRAMEWORK]
        else:
            judged = judge_all([(r.snapshot, r.age_s, r.alive) for r in records], policy)
            wedged[FRAMEWORK] = sum(verdict.wedged is True for verdict in judged)
        return wedged

    def _part(self, what: str, read: Callable[[], T], empty: T, failed: dict[str, str]) -> T | None:
        """``read()`` (``empty`` while the embedded file is not created yet), or ``None`` when it failed:
        the failure goes to ``failed`` with its reason, said once per outage by :meth:`_say`. Any exception
        counts: no answer may stop the poller's thread."""
        try:
            return unless_fresh(read, self._fresh, empty)
        except Exception as exc:  # a poller thread must outlive any answer
            failed[what] = mask_text(str(exc)) or type(exc).__name__
            return None

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


def _standing(store: PauseStore) -> tuple[Pause, ...]:
    return tuple(store.standing()[1])


def profile_label(settings: Settings) -> str:
    """The ``profile`` label of a profile's series (``default`` when none is configured), and the name its
    history is kept under."""
    return history_name(settings.profile)


def _listed(admin: BrokerAdmin) -> tuple[QueueStats, ...]:
    return tuple(work_queues(admin.list_queues().queues))


def _framework_workers(admin: BrokerAdmin) -> WorkerReading:
    """Other frameworks' workers, where the plugin reads their registries."""
    if not type(admin).capabilities.worker_registries:
        return WorkerReading()
    return admin.framework_workers()


def _by_framework(reading: WorkerReading) -> Counter[tuple[str, str]]:
    return Counter((w.framework, liveness(w.alive)) for w in reading.workers)


def _served(records: list[WorkerRecord]) -> tuple[tuple[tuple[str, ...], bool], ...]:
    return tuple((record.snapshot.queues, record.alive) for record in records)


def _folded(records: list[WorkerRecord]) -> int:
    return sum(record.snapshot.folded_task_types for record in records)


def _by_state(records: list[WorkerRecord]) -> Counter[str]:
    return Counter("live" if record.alive else "dead" for record in records)
