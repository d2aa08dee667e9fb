"""A profile's history written by whoever polls it, and read back as a span of the last hour, day or week.

Why no process of its own: the exporter and the dashboard already poll the broker's queues and the
store's workers; each of them hands what it read to a :class:`HistoryRecorder`, which writes at most one
point per kind every :data:`RECORD_EVERY_S` (two writers of one moment write one point, see
:mod:`tqadmin.store.history`). A recorder is made only for a profile that is not read-only, opens the
store as a reader (it never creates the embedded file: while nothing has created it there is nothing to
record), and never raises: a store that fails is logged once per outage, and the poll goes on.

:class:`HistoryReader` turns the points into what a chart needs: depth cells across the span (a cell with
no point is ``None``, drawn as a gap) and each task type's activity over the span (the sum of the
differences of neighbouring cumulative points, so a writer that restarted with lower totals costs one step,
never a negative count).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar, Self, TypedDict, Unpack

from tqadmin.config import Settings
from tqadmin.file_access import Access
from tqadmin.masking import mask_text
from tqadmin.plugin.models import QueueStats
from tqadmin.store.history import (
    DEFAULT_MAX_SERIES,
    QUEUES,
    TASKS,
    TIERS,
    Figures,
    HistoryStore,
    Tier,
    open_history,
)
from tqadmin.store.readers import Fresh, Lazy, never_fresh, unless_fresh
from tqadmin.telemetry.counters import TaskStats

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

    def record_queues(self, stats: Sequence[QueueStats]) -> None:
        self._write(QUEUES, lambda history, now: history.record_queues(self.profile, now, stats))

    def record_tasks(self, totals: Mapping[str, TaskStats]) -> None:
        """``totals``: each task type's cumulative figures over every worker, departed ones included
        (:class:`~tqadmin.telemetry.ledger.WorkerLedger`)."""
        if totals:
            self._write(TASKS, lambda history, now: history.record_tasks(self.profile, now, totals))

    def _write(self, kind: str, write: Callable[[HistoryStore, float], int]) -> None:
        now = self._clock()
        if now - self._last.get(kind, float("-inf")) < RECORD_EVERY_S:
            return
        self._last[kind] = now
        try:
            unless_fresh(lambda: self._history.use(lambda history: write(history, now)), self._fresh, 0)
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


def recorder_for(settings: Settings, clock: Callable[[], float] = time.time) -> HistoryRecorder | None:
    """The history writer of a profile, or ``None`` when it is read-only: a read-only profile writes
    nothing anywhere, history included (it reads what others wrote)."""
    return None if settings.read_only else HistoryRecorder.of(settings, clock)


@dataclass(frozen=True, slots=True)
class SpanReading:
    """A span read back: each queue's depth cells and each task type's activity over ``covered_s``."""

    span: Span
    depths: dict[str, Depths] = field(default_factory=dict)
    tasks: dict[str, TaskStats] = field(default_factory=dict)
    covered_s: float = 0.0  # how much of the span the task points cover (less after a first start)


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
        depths = {
            name: depth_cells(points, tier, now, width)
            for name, points in history.queue_histories(self.profile, queues, tier).items()
        }
        tasks: dict[str, TaskStats] = {}
        covered = 0.0
        since = now - tier.span_s
        types = history.task_types(self.profile)
        for name, points in history.task_histories(self.profile, types, tier).items():
            tasks[name], seconds = activity(points, since)
            covered = max(covered, seconds)
        return SpanReading(span, depths, tasks, covered)


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
    """What a task type did after ``since_s`` and how many seconds that covers: the sum of the differences
    of neighbouring points from the last one at or before ``since_s`` (else the first) to the newest."""
    start = 0
    for index, (bucket, _) in enumerate(points):
        if bucket <= since_s:
            start = index
    kept = points[start:]
    total = TaskStats()
    for (_, earlier), (_, later) in pairwise(kept):
        total.add(later.minus(earlier))
    covered = float(kept[-1][0] - kept[0][0]) if kept else 0.0
    return total, covered
