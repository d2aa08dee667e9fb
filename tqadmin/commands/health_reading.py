"""A window of ``tqadmin health`` read back from the profile's recorded history, where the dashboard or the
exporter recorded one: when every queue's 10 s points cover the window without a gap, the verdict is given
at once from them and one reading (the workers' completion counts at the window's start from the store's
baseline heartbeats); otherwise the command watches the window (docs/health.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from tqadmin.config import Settings
from tqadmin.errors import TqadminError
from tqadmin.files.access import Access
from tqadmin.plugin.models import QueueStats
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.drain import estimate
from tqadmin.reading.reading import ProfileReading
from tqadmin.reading.recording import history_name
from tqadmin.reading.verdicts import observations
from tqadmin.store import open_store
from tqadmin.store.factory import open_history
from tqadmin.store.history.base import TIERS
from tqadmin.store.history.points import Figures
from tqadmin.telemetry.verdict import QueueVerdict, VerdictPolicy, WorkerView, judge
from tqadmin.telemetry.verdict_inputs import own_views, recorded

FINEST = TIERS[0]


def from_history(
    settings: Settings, reading: ProfileReading, queues: Sequence[QueueStats], policy: VerdictPolicy
) -> dict[str, QueueVerdict] | None:
    """Each of ``queues``' verdict from the recorded history and ``reading``, or ``None`` when the history
    does not cover the window for every one of them (or cannot be read)."""
    if policy.window_s < 2 * FINEST.resolution_s or not queues:
        return None
    try:
        points, before = _recorded(settings, [q.name for q in queues], policy.window_s, reading.at_s)
    except TqadminError:
        return None
    now = observations(
        queues, reading.at_s, reading.workers or (), reading.frameworks or WorkerReading(), reading.pauses
    )
    verdicts = {}
    for queue, current in zip(queues, now, strict=True):
        found = points.get(queue.name, [])
        window = recorded(current, found, FINEST.resolution_s, policy.window_s, before.get(queue.name, ()))
        if window is None:
            return None
        drain = estimate([(o.at, o.waiting) for o in window], queue, policy.window_s)
        window[-1] = dataclasses.replace(current, growing=drain.growing, drain_s=drain.drain_s)
        verdicts[queue.name] = judge(window, policy)
    return verdicts


def _recorded(
    settings: Settings, names: list[str], window_s: float, at: float
) -> tuple[Mapping[str, list[tuple[int, Figures]]], dict[str, tuple[WorkerView, ...]]]:
    """The queues' finest points, and per queue the live workers as they were at the window's start."""
    history = open_history(settings.store_url, timeout_s=settings.timeout_s, access=Access.READ)
    try:
        points = history.queue_histories(history_name(settings.profile), names, FINEST)
    finally:
        history.close()
    store = open_store(settings.store_url, timeout_s=settings.timeout_s, access=Access.READ)
    try:
        store_now, workers = store.history(window_s)
    finally:
        store.close()
    baselines = [(w.baseline.snapshot, store_now - w.baseline.at_s, True) for w in workers if w.baseline]
    return points, {name: own_views(baselines, name, at - window_s) for name in names}
