"""The panels' views of a reading (:mod:`tqadmin.reading`): telemetry, workers, cron and pauses as the
dashboard's screens show them, and the sources a caller gives the app instead of the profile's store.

The reading itself (connections, the wedged judgement, the fresh machine, failures) is the read service's;
what is here only turns its values into rows and panels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tqadmin.config import Settings
from tqadmin.pipeline.cron.status import CronStatus
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.connect import describe_error
from tqadmin.reading.reader import WINDOW_S, Connections, ProfileReader
from tqadmin.reading.reading import Part, ProfileReading
from tqadmin.reading.recording import SpanReading
from tqadmin.store.completion.base import StateStore
from tqadmin.store.pauses.base import Pause
from tqadmin.telemetry.counters import TaskStats, summed
from tqadmin.telemetry.histogram import Histogram, estimate_of
from tqadmin.telemetry.wedged import Verdict
from tqadmin.telemetry.window import SlidingTotals
from tqadmin.tui.views import (
    CronSource,
    CronView,
    Latency,
    ScheduleView,
    TaskTypeView,
    TelemetrySource,
    TelemetryView,
    WorkerView,
)

TELEMETRY_PARTS = frozenset({Part.WORKERS, Part.TELEMETRY})


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


def foreign_worker_views(
    reading: WorkerReading | None, verdicts: Sequence[Verdict]
) -> tuple[WorkerView, ...]:
    """Other frameworks' workers as rows beside tqadmin's: the current job shown as ``task id``, each with
    the read service's verdict on it (:mod:`tqadmin.frameworks.wedged`)."""
    if reading is None:
        return ()
    views = []
    for w, verdict in zip(reading.workers, verdicts, strict=True):
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


def telemetry_view(reading: ProfileReading, window_s: float = WINDOW_S) -> TelemetryView | None:
    """The telemetry panel and tqadmin's worker rows of a reading; ``None`` when either part is unread."""
    window, records = reading.telemetry, reading.workers
    if window is None or records is None:
        return None
    workers = []
    for record, verdict in zip(records, reading.verdicts, strict=True):
        snap = record.snapshot
        totals = snap.totals()
        workers.append(
            WorkerView(
                snap.worker_id,
                ",".join(snap.queues),
                record.age_s,
                snap.current_job,
                totals.done,
                totals.failed,
                record.alive,
                wedged=verdict.wedged,
                wedged_reason=verdict.short,
            )
        )
    task_types = task_type_views(window.task_types)
    return TelemetryView(window_s, window.throughput, window.failure_rate, task_types, tuple(workers))


def cron_view(status: CronStatus | None) -> CronView:
    """The cron screen's leader, fencing token and schedules; no leader and token 0 where no cron wrote."""
    if status is None:
        return CronView(None, 0)
    schedules = tuple(
        ScheduleView(r.name, r.cron, r.queue, r.next_fire, r.last_fire, r.lateness_s) for r in status.rows
    )
    leader = status.leader.instance if status.leader else None
    return CronView(leader, status.fencing_token, schedules)


@dataclass(frozen=True, slots=True)
class SideViews:
    """The store's panels after one side poll: each ``None`` with its error when it could not be read
    (``pauses`` also ``None`` where the app reads none: its telemetry is the caller's)."""

    telemetry: TelemetryView | None = None
    telemetry_error: str | None = None
    cron: CronView | None = None
    cron_error: str | None = None
    pauses: tuple[float, list[Pause]] | None = None
    pauses_error: str | None = None


def side_views(
    reading: ProfileReading, telemetry: TelemetrySource | None, cron: CronSource | None
) -> SideViews:
    """The panels from a reading of the store's parts, or from the sources the caller gave the app in
    their place (a seeded screen's, the demo's)."""

    def why(*parts: Part) -> str | None:
        return next((reading.unread[p].why for p in parts if p in reading.unread), None)

    if telemetry is not None:
        shown, telemetry_error = _given(telemetry.read)
    else:
        shown, telemetry_error = telemetry_view(reading), why(*TELEMETRY_PARTS)
    if cron is not None:
        cron_shown, cron_error = _given(cron.read)
    else:
        cron_error = why(Part.CRON)
        cron_shown = None if cron_error or Part.CRON not in reading.parts else cron_view(reading.cron)
    pauses = reading.pauses
    return SideViews(
        shown,
        telemetry_error,
        cron_shown,
        cron_error,
        None if pauses is None else (pauses.now_s, list(pauses.standing)),
        why(Part.PAUSES),
    )


T = TypeVar("T")


def _given(read: Callable[[], T]) -> tuple[T | None, str | None]:
    """A source of the caller's read in the poll thread: its value, or why it failed."""
    try:
        return read(), None
    except Exception as exc:  # a poll thread must outlive any source
        return None, describe_error(exc)


class StoreTelemetry:
    """The telemetry of a state store of the caller's (a seeded screen's, on its own clock) as a source,
    read by the read service exactly as the dashboard reads its profile's own."""

    def __init__(self, settings: Settings, connect: Callable[[], StateStore] | None = None) -> None:
        self.reader = ProfileReader(settings, connect=Connections(store=connect))

    def read(self) -> TelemetryView:
        reading = self.reader.read(TELEMETRY_PARTS)
        for part in TELEMETRY_PARTS:
            reading.raise_for(part)
        return telemetry_view(reading) or TelemetryView()

    def close(self) -> None:
        self.reader.close()
