"""Telemetry, cron state and pauses from the state store, as the TUI's sources read them in their poll thread.

Both connect lazily (in the worker thread, on the first read) and reconnect after a failure, so a store
that is down when the dashboard opens shows as an error line and recovers by itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from tqadmin.file_access import Access
from tqadmin.frameworks.wedged import judge_foreign
from tqadmin.pipeline.cron.status import read_status
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.connect import describe_error
from tqadmin.reading.lazy import Fresh, Lazy, never_fresh, unless_fresh
from tqadmin.reading.recording import SpanReading
from tqadmin.store.base import StateStore
from tqadmin.store.factory import open_store
from tqadmin.store.lease import CronStore, open_cron_store
from tqadmin.store.pauses import Pause, PauseStore, open_pauses
from tqadmin.telemetry.counters import TaskStats, summed
from tqadmin.telemetry.histogram import Histogram, estimate_of
from tqadmin.telemetry.ledger import WorkerFigures, WorkerLedger
from tqadmin.telemetry.wedged import WedgePolicy, judge_all
from tqadmin.telemetry.window import SlidingTotals, window_stats
from tqadmin.tui.views import CronView, Latency, ScheduleView, TaskTypeView, TelemetryView, WorkerView

WINDOW_S = 60.0  # the telemetry panel's window: the last minute of every framework's tasks

# Histogram bars: upper bounds in seconds shared by every task type; slower values count in the last one.
BOUNDS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


def buckets(histogram: Histogram) -> tuple[tuple[float, int], ...]:
    """The histogram's fine buckets regrouped on :data:`BOUNDS_S`; empty when nothing was recorded."""
    if histogram.count == 0:
        return ()
    counts = [0] * len(BOUNDS_S)
    counts[0] += histogram.zero
    for index, n in histogram.buckets.items():
        value = estimate_of(index)
        slot = next((i for i, bound in enumerate(BOUNDS_S) if value <= bound), len(BOUNDS_S) - 1)
        counts[slot] += n
    return tuple(zip(BOUNDS_S, counts, strict=True))


def latency(histogram: Histogram) -> Latency:
    p = histogram.percentiles()
    return Latency(p["p50"], p["p95"], p["p99"], buckets(histogram))


class StoreTelemetry:
    """Every worker that beat within ``window_s``: rates and latencies from two readings per worker.

    ``connect`` opens a store of the caller's instead of ``store_url`` (a test's store on its own clock).
    """

    def __init__(
        self,
        store_url: str,
        timeout_s: float = 10.0,
        window_s: float = WINDOW_S,
        fresh: Fresh = never_fresh,
        *,
        connect: Callable[[], StateStore] | None = None,
        wedge_policy: WedgePolicy | None = None,
    ) -> None:
        self.window_s = window_s
        self._wedge_policy = wedge_policy or WedgePolicy()
        self._fresh = fresh
        self._store: Lazy[StateStore] = Lazy(
            connect or (lambda: open_store(store_url, timeout_s=timeout_s, access=Access.READ))
        )
        self._ledger = WorkerLedger()

    def workers(self) -> list[WorkerFigures]:
        """The worker processes the last read listed, each with its own cumulative figures: what the
        dashboard records in the history."""
        return self._ledger.workers()

    def read(self) -> TelemetryView:
        return unless_fresh(lambda: self._store.use(self._read), self._fresh, TelemetryView(self.window_s))

    def close(self) -> None:
        self._store.close()

    def _read(self, store: StateStore) -> TelemetryView:
        now, histories = store.history(self.window_s)
        window = window_stats(now, self.window_s, histories)
        task_types = task_type_views(window.task_types)
        workers = []
        records = store.workers()
        self._ledger.update(record.snapshot for record in records)
        verdicts = judge_all([(r.snapshot, r.age_s, r.alive) for r in records], self._wedge_policy)
        for record, verdict in zip(records, verdicts, strict=True):
            snap = record.snapshot
            totals = snap.totals()
            queues = ",".join(snap.queues)
            workers.append(
                WorkerView(
                    snap.worker_id,
                    queues,
                    record.age_s,
                    snap.current_job,
                    totals.done,
                    totals.failed,
                    record.alive,
                    wedged=verdict.wedged,
                    wedged_reason=verdict.short,
                )
            )
        return TelemetryView(
            self.window_s, window.throughput, window.failure_rate, task_types, tuple(workers)
        )


def foreign_worker_views(
    reading: WorkerReading | None, policy: WedgePolicy, now_s: float
) -> tuple[WorkerView, ...]:
    """Other frameworks' workers as rows beside tqadmin's: the current job shown as ``task id``, each judged
    wedged or not at ``now_s`` by what its framework exposes (:mod:`tqadmin.frameworks.wedged`)."""
    if reading is None:
        return ()
    views = []
    for w in reading.workers:
        verdict = judge_foreign(w, policy, now_s, reading.tasks.get(w.framework))
        views.append(
            WorkerView(
                w.name,
                ",".join(w.queues),
                w.heartbeat_age_s,
                ", ".join(" ".join(filter(None, (job.task, job.id))) for job in w.current_jobs) or None,
                None,
                None,
                w.alive,
                w.framework,
                w.dead_reason,
                wedged=verdict.wedged,
                wedged_reason=verdict.short,
            )
        )
    return tuple(views)


def task_type_views(
    task_types: Mapping[str, TaskStats], framework: str = "tqadmin"
) -> tuple[TaskTypeView, ...]:
    return tuple(
        TaskTypeView(name, s.done, s.failed, latency(s.wait), latency(s.run), framework)
        for name, s in sorted(task_types.items())
    )


class FrameworkTasks:
    """Other frameworks' task figures (cumulative, from their events) as the last ``window_s`` of them."""

    def __init__(self, window_s: float) -> None:
        self._window_s = window_s
        self._windows: dict[str, SlidingTotals] = {}

    def update(self, now_s: float, reading: WorkerReading | None) -> tuple[TaskTypeView, ...]:
        views: list[TaskTypeView] = []
        for framework, totals in sorted((reading.tasks if reading else {}).items()):
            window = self._windows.setdefault(framework, SlidingTotals(self._window_s))
            wait_from = reading.wait_from.get(framework, "sent") if reading else "sent"
            shown = framework if wait_from == "sent" else f"{framework}, wait from {wait_from}"
            views += task_type_views(window.update(now_s, totals), shown)
        return tuple(views)


def span_view(reading: SpanReading, live: TelemetryView | None) -> TelemetryView:
    """The telemetry panel over a span of history: the task types' activity from the stored points, the
    workers as the live poll sees them (history keeps no worker)."""
    tier = reading.span.tier
    seconds = reading.covered_s
    total = summed(reading.tasks.values())
    finished = total.done + total.failed
    return TelemetryView(
        window_s=tier.span_s if tier else seconds,
        throughput=total.done / seconds if seconds > 0 else 0.0,
        failure_rate=total.failed / finished if finished else 0.0,
        task_types=task_type_views(reading.tasks),
        workers=live.workers if live else (),
    )


def framework_workers(admin: BrokerAdmin) -> tuple[WorkerReading | None, str | None]:
    """Other frameworks' workers where the plugin reads their registries (``None`` where it reads none),
    or the one line saying why they could not be read: the queues polled with them are shown either way."""
    if not type(admin).capabilities.worker_registries:
        return None, None
    try:
        return admin.framework_workers(), None
    except Exception as exc:
        return None, describe_error(exc)


class StorePauses:
    """The pauses standing in the store: the store's clock when read, and the pauses."""

    def __init__(self, store_url: str, timeout_s: float = 10.0, fresh: Fresh = never_fresh) -> None:
        self._fresh = fresh
        self._store: Lazy[PauseStore] = Lazy(
            lambda: open_pauses(store_url, timeout_s=timeout_s, access=Access.READ)
        )

    def read(self) -> tuple[float, list[Pause]]:
        empty: tuple[float, list[Pause]] = (time.time(), [])
        return unless_fresh(lambda: self._store.use(lambda s: s.standing()), self._fresh, empty)

    def close(self) -> None:
        self._store.close()


class StoreCron:
    """The cron leader, fencing token and the schedules running instances registered in the store."""

    def __init__(
        self, store_url: str, timeout_s: float = 10.0, namespace: str = "default", fresh: Fresh = never_fresh
    ) -> None:
        self._fresh = fresh
        self._store: Lazy[CronStore] = Lazy(
            lambda: open_cron_store(store_url, namespace, timeout_s, access=Access.READ)
        )

    def read(self) -> CronView:
        return unless_fresh(lambda: self._store.use(self._read), self._fresh, CronView(None, 0))

    def close(self) -> None:
        self._store.close()

    def _read(self, store: CronStore) -> CronView:
        status = read_status(store)
        schedules = tuple(
            ScheduleView(r.name, r.cron, r.queue, r.next_fire, r.last_fire, r.lateness_s) for r in status.rows
        )
        leader = status.leader.instance if status.leader else None
        return CronView(leader, status.fencing_token, schedules)
