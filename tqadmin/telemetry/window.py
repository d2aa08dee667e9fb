"""Figures over a window, from two cumulative readings per worker: rates, failure rate, percentiles.

Why deltas: each worker's counters and histograms only grow, so ``latest - baseline`` is exactly what happened
between the two readings, and the deltas of all workers add up (histograms merge bucket by bucket). A poll
reads two snapshots per worker whatever the number of jobs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tqadmin.telemetry.counters import (
    StatsKey,
    TaskStats,
    by_queue,
    by_task_type,
    merge_stats,
    subtract_stats,
    summed,
)
from tqadmin.telemetry.snapshot import WorkerHistory

MIN_SPAN_S = 1.0  # a worker born a moment ago does not turn its first job into a huge rate


@dataclass(frozen=True, slots=True)
class WindowStats:
    """What happened over ``window_s`` seconds, merged across workers.

    ``span_s`` is the time the deltas actually cover: the window, more when the newest reading before the
    window's start is older than the start, less when every worker is younger than the window.
    ``throughput`` is done runs per second.
    """

    window_s: float
    span_s: float
    workers: int
    by_key: Mapping[StatsKey, TaskStats]

    @property
    def task_types(self) -> dict[str, TaskStats]:
        return by_task_type(self.by_key)

    @property
    def queues(self) -> dict[str, TaskStats]:
        return by_queue(self.by_key)

    @property
    def total(self) -> TaskStats:
        return summed(self.by_key.values())

    @property
    def throughput(self) -> float:
        return self.total.done / self.span_s if self.span_s > 0 else 0.0

    @property
    def failure_rate(self) -> float:
        """Failed runs over finished runs, a fraction from 0 to 1 (0 when nothing ran)."""
        total = self.total
        finished = total.done + total.failed
        return total.failed / finished if finished else 0.0

    def to_json(self) -> dict[str, Any]:
        """docs/interface.md's ``stats`` document, plus per-queue figures and the other counters."""
        return {
            "window_s": self.window_s,
            "span_s": round(self.span_s, 3),
            "workers": self.workers,
            "throughput": round(self.throughput, 3),
            "failure_rate": round(self.failure_rate, 6),
            "task_types": {name: figures_json(stats) for name, stats in sorted(self.task_types.items())},
            "queues": {name: figures_json(stats) for name, stats in sorted(self.queues.items())},
        }


def figures_json(stats: TaskStats) -> dict[str, Any]:
    return {
        **stats.counts(),
        "dead_letter_reasons": stats.by_reason(),
        "wait": _rounded(stats.wait.percentiles()),
        "run": _rounded(stats.run.percentiles()),
    }


def _rounded(values: Mapping[str, float | None]) -> dict[str, float | None]:
    return {k: (None if v is None else round(v, 6)) for k, v in values.items()}


def window_stats(now_s: float, window_s: float, histories: Iterable[WorkerHistory]) -> WindowStats:
    """Merge every worker's ``latest - baseline`` over the window ending at ``now_s`` (the store's clock).

    A worker with no baseline, one born inside the window, or one whose id was reused by a process started
    since the baseline, is counted from zero: everything its counters hold happened inside the window. The
    span starts at the oldest reading used, or at the first worker's birth when every worker is younger than
    the window, so a pipeline started ten seconds ago shows its real rate rather than a sixth of it.
    """
    start = now_s - window_s
    deltas: list[dict[StatsKey, TaskStats]] = []
    covered_from: float | None = None
    count = 0
    for history in histories:
        count += 1
        latest = history.latest.snapshot
        baseline = history.baseline
        restarted = baseline is not None and baseline.snapshot.started_at != latest.started_at
        if baseline is None or restarted or latest.started_at >= start:
            deltas.append({key: stats.copy() for key, stats in latest.stats.items()})
            begin = max(start, min(latest.started_at, now_s - MIN_SPAN_S))
        else:
            deltas.append(subtract_stats(latest.stats, baseline.snapshot.stats))
            begin = min(start, baseline.at_s)
        covered_from = begin if covered_from is None else min(covered_from, begin)
    span = now_s - (start if covered_from is None else covered_from)
    return WindowStats(window_s=window_s, span_s=span, workers=count, by_key=merge_stats(deltas))


class SlidingTotals:
    """Cumulative figures read now and then (another framework's, folded from its events since a listener
    started) turned into the figures of the last ``window_s``, as tqadmin's own workers' are shown."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._readings: deque[tuple[float, Mapping[str, TaskStats]]] = deque()

    def update(self, now_s: float, totals: Mapping[str, TaskStats]) -> dict[str, TaskStats]:
        """The activity between the newest reading at least ``window_s`` old (or the first one) and now."""
        self._readings.append((now_s, totals))
        while len(self._readings) > 1 and self._readings[1][0] <= now_s - self.window_s:
            self._readings.popleft()
        _, base = self._readings[0]
        if base is totals:  # the first reading: what the listener saw since it started
            return {name: stats.copy() for name, stats in totals.items()}
        return {name: stats.minus(base.get(name, TaskStats())) for name, stats in totals.items()}
