"""A profile's history written by whoever polls it, and read back as a span of the last hour, day or week.

Why no process of its own: the exporter and the dashboard already poll the broker's queues and the
store's workers; each of them hands what it read to a :class:`HistoryRecorder`, which writes at most one
point per kind every :data:`RECORD_EVERY_S` (two writers of one moment write one point, see
:mod:`tqadmin.store.history.base`). Task activity is recorded from the worker processes the store lists, each
with its own figures, never from a poller's totals (:mod:`tqadmin.store.history.increments`): any number of
writers add each run once. A recorder is made only for a profile that is not read-only, opens the store as
a reader (it never creates the embedded file: while nothing has created it there is nothing to record), and
never raises: a store that fails is logged once per outage, points refused for being ahead of the store's
clock once, and the poll goes on.

:class:`HistoryReader` turns the points into what a chart needs: depth cells across the span (a cell with
no point is ``None``, drawn as a gap), each task type's activity over the span (the sum of its buckets'
increments), and how many stored points could not be read and were skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Self, TypedDict, Unpack

from tqadmin.config import Settings
from tqadmin.files.access import Access
from tqadmin.plugin.models import QueueStats
from tqadmin.reading.lazy import Fresh, Lazy, never_fresh, unless_fresh
from tqadmin.show.masking import mask_text
from tqadmin.store.factory import open_history
from tqadmin.store.history.base import (
    DEFAULT_MAX_SERIES,
    QUEUES,
    TASKS,
    TIERS,
    HistoryStore,
    Recorded,
    Tier,
)
from tqadmin.store.history.points import Figures
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.ledger import WorkerFigures

log = logging.getLogger("tqadmin.history")

RECORD_EVERY_S = 5.0
"""Half the finest tier's resolution: a steady poller leaves no 10 s bucket without a point."""

SPAN_REREAD_S = float(TIERS[0].resolution_s)
"""A chart reads its span again at most this often: nothing newer than the finest tier's bucket is there."""

Depths = tuple[int | None, ...]
"""A queue's depth per cell of a span, oldest first; ``None`` where nothing was recorded (a gap)."""


@dataclass(frozen=True, slots=True)
class Span:
    """What the dashboard's charts cover: ``live`` (its own polls since it opened) or a tier's window."""

    name: str
    label: str
    tier: Tier | None = None


SPANS: tuple[Span, ...] = (
    Span("live", "live"),
    Span("1h", "last hour", TIERS[0]),
    Span("1d", "last day", TIERS[1]),
    Span("1w", "last week", TIERS[2]),
)
LIVE = SPANS[0]


def history_name(profile: str | None) -> str:
    """The name a profile's history is kept under: the exporter's ``profile`` label (``default`` when no
    profile is configured), so the dashboard and the exporter write and read the same series."""
    return profile or "default"


def next_span(span: Span) -> Span:
    """The span after ``span``, back to live after the week."""
    return SPANS[(SPANS.index(span) + 1) % len(SPANS)]


class HistoryOptions(TypedDict, total=False):
    timeout_s: float
    fresh: Fresh
    max_series: int
    clock: Callable[[], float]
    connect: Callable[[], HistoryStore]


class ProfileHistory:
    """One profile's history in the store at ``store_url``, opened on first use (never creating the
    embedded file; with :attr:`access`) and again after a failure. ``connect`` opens a history of the
    caller's instead (a test's, on its own clock); ``fresh`` says when a missing embedded file is one
    nothing created yet."""

    access: ClassVar[Access] = Access.READ
    """How the embedded file is opened: read-only (nothing in it or beside it changes) unless this user
    records."""

    def __init__(self, store_url: str, profile: str, **options: Unpack[HistoryOptions]) -> None:
        self.profile = profile
        self._fresh = options.get("fresh", never_fresh)
        self._clock = options.get("clock", time.time)
        timeout_s = options.get("timeout_s", 10.0)
        max_series = options.get("max_series", DEFAULT_MAX_SERIES)
        self._history: Lazy[HistoryStore] = Lazy(
            options.get("connect")
            or (
                lambda: open_history(
                    store_url, timeout_s=timeout_s, access=self.access, max_series=max_series
                )
            )
        )

    @classmethod
    def of(cls, settings: Settings, clock: Callable[[], float] = time.time) -> Self:
        """The history of the profile ``settings`` resolve to, under the exporter's ``profile`` label."""
        return cls(
            settings.store_url,
            history_name(settings.profile),
            timeout_s=settings.timeout_s,
            fresh=settings.not_created_yet,
            clock=clock,
        )

    def close(self) -> None:
        self._history.close()


class HistoryRecorder(ProfileHistory):
    """Writes one profile's queue figures and task totals into the history, at most every
    :data:`RECORD_EVERY_S` per kind."""

    access: ClassVar[Access] = Access.WRITE

    def __init__(self, store_url: str, profile: str, **options: Unpack[HistoryOptions]) -> None:
        super().__init__(store_url, profile, **options)
        self._last: dict[str, float] = {}  # kind -> when it was last written
        self._failing = False
        self.refused = 0  # points refused for being ahead of the store's clock, since it was made
        self._writing = threading.Lock()  # held for the whole of one write: what :meth:`stop` waits for
        self._stopped = False

    def record_queues(self, stats: Sequence[QueueStats]) -> None:
        self._write(QUEUES, lambda history, now: history.record_queues(self.profile, now, stats))

    def record_tasks(self, workers: Sequence[WorkerFigures]) -> None:
        """``workers``: the worker processes the store lists now, each with its own cumulative figures
        (:meth:`~tqadmin.telemetry.ledger.WorkerLedger.workers`)."""
        if workers:
            self._write(TASKS, lambda history, now: history.record_tasks(self.profile, now, workers))

    def stop(self, timeout_s: float) -> bool:
        """No write starts after this; one under way is waited for, up to ``timeout_s``, and then the
        history is closed. ``True`` when none is under way any more (a process may end now and leave every
        write done or not started); ``False`` when one still is past ``timeout_s`` (a store that does not
        answer: its own timeout ends it)."""
        self._stopped = True
        if not self._writing.acquire(timeout=max(timeout_s, 0.0)):
            return False
        try:
            self.close()
        finally:
            self._writing.release()
        return True

    def _write(self, kind: str, write: Callable[[HistoryStore, float], Recorded]) -> None:
        with self._writing:
            if not self._stopped:
                self._write_now(kind, write)

    def _write_now(self, kind: str, write: Callable[[HistoryStore, float], Recorded]) -> None:
        now = self._clock()
        if now - self._last.get(kind, float("-inf")) < RECORD_EVERY_S:
            return
        self._last[kind] = now
        try:
            done = unless_fresh(
                lambda: self._history.use(lambda history: write(history, now)), self._fresh, Recorded(0)
            )
        except Exception as exc:  # a poller's thread must outlive any store failure
            if not self._failing:
                why = mask_text(str(exc)) or type(exc).__name__
                log.warning(
                    "writing the history of profile %s failed: %s; the polls go on", self.profile, why
                )
            self._failing = True
        else:
            if self._failing:
                log.warning("writing the history of profile %s works again", self.profile)
            self._failing = False
            self._say_refused(done)

    def _say_refused(self, done: Recorded) -> None:
        """Counted always, said once: a recorder whose clock is ahead is refused at every write."""
        if done.refused and not self.refused:
            if done.ahead_s > 0:
                why = f"this recorder's clock is {done.ahead_s:,.0f} s ahead of the state store's"
            else:
                why = "they started more than a minute after the state store's clock (their runs are kept)"
            log.warning("the history of profile %s refused %d points: %s", self.profile, done.refused, why)
        self.refused += done.refused


def recorder_for(settings: Settings, clock: Callable[[], float] = time.time) -> HistoryRecorder | None:
    """The history writer of a profile, or ``None`` when it is read-only: a read-only profile writes
    nothing anywhere, history included (it reads what others wrote)."""
    return None if settings.read_only else HistoryRecorder.of(settings, clock)


@dataclass(frozen=True, slots=True)
class SpanReading:
    """A span read back: each queue's depth cells and each task type's activity over ``covered_s``, and
    how many stored points could not be read (``skipped``: the rest is shown, and the face says so)."""

    span: Span
    depths: dict[str, Depths] = field(default_factory=dict)
    tasks: dict[str, TaskStats] = field(default_factory=dict)
    covered_s: float = 0.0  # how much of the span the task points cover (less after a first start)
    skipped: int = 0


class HistoryReader(ProfileHistory):
    """Reads one profile's history as spans; raises what the store raises (the caller shows it)."""

    def read(self, span: Span, queues: Sequence[str], width: int) -> SpanReading:
        """``queues``' depths in ``width`` cells across ``span``, and every recorded task type's activity."""
        if span.tier is None:
            return SpanReading(span)
        tier = span.tier
        return unless_fresh(
            lambda: self._history.use(lambda history: self._read(history, span, tier, queues, width)),
            self._fresh,
            SpanReading(span),
        )

    def _read(
        self, history: HistoryStore, span: Span, tier: Tier, queues: Sequence[str], width: int
    ) -> SpanReading:
        now = self._clock()
        queue_points = history.queue_histories(self.profile, queues, tier)
        depths = {name: depth_cells(points, tier, now, width) for name, points in queue_points.items()}
        tasks: dict[str, TaskStats] = {}
        covered = 0.0
        task_points = history.task_histories(self.profile, history.task_types(self.profile), tier)
        for name, points in task_points.items():
            tasks[name], seconds = activity(points, now - tier.span_s)
            covered = max(covered, seconds)
        return SpanReading(span, depths, tasks, covered, queue_points.skipped + task_points.skipped)


def depth_cells(points: Iterable[tuple[int, Figures]], tier: Tier, now_s: float, width: int) -> Depths:
    """The span ending at ``now_s`` cut into ``width`` cells, each the highest depth recorded in it (a
    spike between two cells' ends is what on-call looks for), ``None`` where nothing was recorded."""
    cells: list[int | None] = [None] * width
    start = now_s - tier.span_s
    cell_s = tier.span_s / width
    for bucket, figures in points:
        depth = figures.get("messages")
        if depth is None or bucket + tier.resolution_s <= start or bucket > now_s:
            continue
        index = min(width - 1, max(0, int((bucket - start) // cell_s)))
        known = cells[index]
        cells[index] = int(depth) if known is None else max(known, int(depth))
    return tuple(cells)


def activity(points: Sequence[tuple[int, TaskStats]], since_s: float) -> tuple[TaskStats, float]:
    """What a task type did after ``since_s`` and how many seconds that covers: the sum of the increments
    of the buckets that start after it (one ahead of the reader's clock included: its runs happened),
    covering from the last bucket at or before ``since_s`` (else the oldest) to the newest."""
    kept = [(bucket, stats) for bucket, stats in points if bucket > since_s]
    total = TaskStats()
    for _, stats in kept:
        total.add(stats)
    if not kept:
        return total, 0.0
    start = max((bucket for bucket, _ in points if bucket <= since_s), default=kept[0][0])
    return total, float(kept[-1][0] - start)
