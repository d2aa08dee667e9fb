"""The dashboard's telemetry panel during a demo: this run's workers only, over a sliding window.

The state store may hold workers of earlier demos and of other deployments; the panel shows the workers this
demo started (after it began, on its queues), so the figures on screen are the ones its summary will add up.
It is the dashboard's own telemetry (the read service's, :mod:`tqadmin.reading`) narrowed to this demo.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tqadmin.demo.layout import Layout
from tqadmin.store.completion.base import StateStore
from tqadmin.telemetry.window import WindowStats, window_stats

if TYPE_CHECKING:
    from tqadmin.tui.views import TelemetryView


class DemoTelemetry:
    """A ``TelemetrySource`` for :class:`~tqadmin.tui.TqadminApp`, read in the app's poll thread."""

    def __init__(
        self,
        store: StateStore,
        layout: Layout,
        started_at: float,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._layout = layout
        self._started_at = started_at
        self._window_s = window_s
        self._clock = clock

    def _ours(self, queues: tuple[str, ...], started_at: float) -> bool:
        return started_at >= self._started_at and any(self._layout.owns(q) for q in queues)

    def read(self) -> TelemetryView:
        # The TUI's types, imported here: this module is loaded without Textual, used only with the dashboard.
        from tqadmin.tui.sources import latency
        from tqadmin.tui.views import TaskTypeView, TelemetryView, WorkerView

        now, histories = self._store.history(self._window_s)
        mine = [h for h in histories if self._ours(h.latest.snapshot.queues, h.latest.snapshot.started_at)]
        merged = window_stats(now, self._window_s, mine)
        window = WindowStats(
            merged.window_s,
            merged.span_s,
            merged.workers,
            {key: stats for key, stats in merged.by_key.items() if self._layout.owns(key[0])},
        )
        task_types = tuple(
            TaskTypeView(name, stats.done, stats.failed, latency(stats.wait), latency(stats.run))
            for name, stats in sorted(window.task_types.items())
        )
        workers = tuple(
            WorkerView(
                id=record.snapshot.worker_id,
                queue=", ".join(record.snapshot.queues),
                heartbeat_age_s=record.age_s,
                current_job=record.snapshot.current_job,
                done=record.snapshot.totals().done,
                failed=record.snapshot.totals().failed,
                alive=record.alive,
            )
            for record in self._store.workers()
            if self._ours(record.snapshot.queues, record.snapshot.started_at)
        )
        return TelemetryView(
            window_s=self._window_s,
            throughput=window.throughput,
            failure_rate=window.failure_rate,
            task_types=task_types,
            workers=workers,
        )
