"""What the verdict (:mod:`tqadmin.telemetry.verdict`) is given, built from what a poll reads: a queue's
figures from its broker and, for each tqadmin worker serving it, what its heartbeat says of its progress.

A worker's times are on its own clock; they are moved onto the observer's by the heartbeat's age (its
``heartbeat_at`` plus its age by the store's clock is "now" for the worker), as the wedged verdict does.
A worker that serves several queues tells its last completion but not on which queue: that time is used
for a queue only when the worker serves it alone (its per-queue completion counts still count).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Protocol

from tqadmin.telemetry.counters import by_queue
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.telemetry.verdict import Observation, WorkerView


class QueueFigures(Protocol):
    """The figures of one queue that a verdict reads: the plugin contract's ``QueueStats`` has them. Named
    here rather than imported because the plugin contract reads telemetry's types, never the other way."""

    @property
    def name(self) -> str: ...
    @property
    def ready(self) -> int: ...
    @property
    def unacked(self) -> int: ...
    @property
    def consumers(self) -> int | None: ...
    @property
    def ack_rate(self) -> float | None: ...
    @property
    def publish_rate(self) -> float | None: ...
    @property
    def delayed(self) -> int | None: ...
    @property
    def growing(self) -> bool | None: ...
    @property
    def drain_s(self) -> float | None: ...


def own_view(snapshot: WorkerSnapshot, age_s: float, queue: str, at: float) -> WorkerView:
    """A live tqadmin worker's progress on ``queue``, seen at ``at`` (the observer's epoch seconds)."""
    offset = at - (snapshot.heartbeat_at + max(age_s, 0.0))
    stats = by_queue(snapshot.stats).get(queue)
    completed = 0 if stats is None else stats.done + stats.failed + stats.deduplicated + stats.dead_lettered
    progress = snapshot.progress
    if progress is None:
        return WorkerView(snapshot.worker_id, completed)
    last = progress.last_completion_at
    alone = tuple(snapshot.queues) == (queue,)
    return WorkerView(
        snapshot.worker_id,
        completed,
        last_completion_at=last + offset if last is not None and alone else None,
        slots=progress.threads,
        busy_since=tuple(b.since + offset for b in progress.busy),
    )


def own_views(
    workers: Iterable[tuple[WorkerSnapshot, float, bool]], queue: str, at: float
) -> tuple[WorkerView, ...]:
    """The live ones of ``(snapshot, heartbeat age, alive)`` that serve ``queue``, as views."""
    return tuple(own_view(s, age_s, queue, at) for s, age_s, alive in workers if alive and queue in s.queues)


def observation(
    stats: QueueFigures,
    at: float,
    workers: Sequence[WorkerView] = (),
    paused: str | None = None,
    paused_types: str | None = None,
) -> Observation:
    """One queue's observation at ``at`` from its figures (``drain_s`` and ``growing`` filled by a
    :class:`~tqadmin.reading.drain.DrainWindow` over the same window), its workers and its standing pause."""
    return Observation(
        name=stats.name,
        at=at,
        ready=stats.ready,
        unacked=stats.unacked,
        consumers=stats.consumers,
        workers=tuple(workers),
        ack_rate=stats.ack_rate,
        publish_rate=stats.publish_rate,
        delayed=stats.delayed,
        growing=stats.growing,
        drain_s=stats.drain_s,
        paused=paused,
        paused_types=paused_types,
    )


def recorded(
    current: Observation,
    points: Sequence[tuple[int, Mapping[str, float]]],
    resolution_s: float,
    window_s: float,
    before: Sequence[WorkerView] = (),
) -> list[Observation] | None:
    """A queue's window read back from its recorded history (points of ``resolution_s`` buckets, each the
    latest figures of its bucket, taken at the bucket's end), ending with ``current``, the reading just made;
    ``None`` when the points do not cover the window without a gap (then the window has to be watched).

    The history keeps no consumer counts nor per-worker figures: the current consumers stand for the
    window's, and ``before``, the workers as they were at the window's start (their completion counts from
    the store's baseline heartbeats), for every recorded point, so a count that rose shows at the end.
    """
    start = current.at - window_s
    timed = sorted((min(bucket + resolution_s, current.at), figures) for bucket, figures in points)
    timed = [(at, figures) for at, figures in timed if at < current.at]
    anchor = [i for i, (at, _) in enumerate(timed) if at <= start]
    if not anchor:
        return None
    kept = timed[anchor[-1] :]
    steps = [b - a for (a, _), (b, _) in pairwise([*kept, (current.at, {})])]
    if any(step > 2 * resolution_s for step in steps) or any("ready" not in f for _, f in kept):
        return None
    return [
        replace(
            current,
            at=at,
            ready=int(figures["ready"]),
            unacked=int(figures.get("in_flight", 0)),
            workers=tuple(before),
            ack_rate=figures.get("ack_rate"),
            publish_rate=figures.get("publish_rate"),
            growing=None,
            drain_s=None,
        )
        for at, figures in kept
    ] + [current]
