"""How long each queue will take to drain, from successive readings of its depth.

A depth alone says nothing about whether the backlog is being worked off: 5,000 messages that fall by 100 a
second are fine, 50 that rise on every poll are not. :class:`DrainWindow` keeps each queue's depth over the
last ``window_s`` seconds and fits a line through it:

- the depth falls: ``drain_s`` is the depth over the rate it falls at (least squares over the window, so one
  noisy poll does not swing it);
- the depth never fell through the window and ended higher (at least :data:`MIN_GROWING_READINGS` readings
  spanning at least half the window, so a queue just looked at is not called growing): ``growing``, and no
  drain estimate;
- an empty queue: ``drain_s`` 0;
- otherwise (flat, or rising and falling): no estimate, ``None``, never a guess.

With a single reading (a one-shot ``tqadmin queues``) the estimate comes from the broker's rates instead:
depth over acks less publishes, when both are known and acks are ahead; ``growing`` stays ``None`` (unknown),
because one reading cannot show a rise throughout anything.

It sits below every face (the queue listing, the dashboard, the exporter) and the read service, which each
hold one window per profile and pass every listing through :meth:`DrainWindow.apply`. Memory is bounded:
a queue absent from a listing is forgotten, and each queue keeps at most :data:`MAX_READINGS` readings.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Iterable

from tqadmin.plugin.models import QueueListing, QueueStats

DEFAULT_WINDOW_S = 60.0
MIN_GROWING_READINGS = 3
MAX_READINGS = 120


@dataclasses.dataclass(frozen=True, slots=True)
class Drain:
    """One queue's estimate: seconds to empty at the present pace (``None``: no estimate), and whether its
    depth rose throughout the window (``None``: too few readings to tell)."""

    drain_s: float | None
    growing: bool | None


class DrainWindow:
    """Depth readings per queue over the last ``window_s`` seconds; not thread-safe (one per poller)."""

    def __init__(
        self, window_s: float = DEFAULT_WINDOW_S, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not window_s > 0:
            raise ValueError("the drain window must be a positive number of seconds")
        self.window_s = window_s
        self._clock = clock
        self._depths: dict[str, deque[tuple[float, int]]] = {}

    def apply(self, listing: QueueListing) -> QueueListing:
        """The listing with each queue's ``drain_s`` and ``growing`` from this and earlier readings."""
        return dataclasses.replace(listing, queues=self.observe(listing.queues))

    def observe(self, queues: Iterable[QueueStats]) -> tuple[QueueStats, ...]:
        """Record one reading of ``queues`` (taken now) and return them with their estimates."""
        now = self._clock()
        seen: dict[str, deque[tuple[float, int]]] = {}
        result = []
        for queue in queues:
            readings = seen[queue.name] = self._depths.get(queue.name) or deque(maxlen=MAX_READINGS)
            while readings and now <= readings[-1][0]:
                readings.pop()  # a clock that did not move (or stepped back): the newer reading stands
            readings.append((now, queue.messages))
            while len(readings) > 1 and readings[0][0] < now - self.window_s:
                readings.popleft()
            drain = estimate(readings, queue, self.window_s)
            result.append(dataclasses.replace(queue, drain_s=drain.drain_s, growing=drain.growing))
        self._depths = seen
        return tuple(result)


def drain_text(queue: QueueStats, duration: Callable[[float | None], str | None]) -> str | None:
    """How every face writes the estimate: ``growing``, the time to drain in the face's own duration
    format, or ``None`` (no estimate: the face's blank)."""
    if queue.growing:
        return "growing"
    return None if queue.drain_s is None else duration(queue.drain_s)


def estimate(readings: Iterable[tuple[float, int]], queue: QueueStats, window_s: float) -> Drain:
    """The drain of ``queue`` from its ``(time, depth)`` readings, oldest first, ending with its own."""
    points = list(readings)
    depth = queue.messages
    if depth <= 0:
        return Drain(0.0, False if len(points) > 1 else None)
    if len(points) < 2:
        return Drain(_from_rates(queue), None)
    if _rose_throughout(points, window_s):
        return Drain(None, True)
    slope = _slope(points)
    drain_s = depth / -slope if slope < 0 else None
    return Drain(drain_s if drain_s is not None and math.isfinite(drain_s) else None, False)


def _rose_throughout(points: list[tuple[float, int]], window_s: float) -> bool:
    if len(points) < MIN_GROWING_READINGS or points[-1][0] - points[0][0] < window_s / 2:
        return False
    return points[-1][1] > points[0][1] and all(b[1] >= a[1] for a, b in itertools.pairwise(points))


def _from_rates(queue: QueueStats) -> float | None:
    acks, publishes = queue.ack_rate, queue.publish_rate
    if acks is None or publishes is None or not math.isfinite(acks - publishes) or acks <= publishes:
        return None
    return queue.messages / (acks - publishes)


def _slope(points: list[tuple[float, int]]) -> float:
    """Messages a second, least squares through the readings (times relative to the first)."""
    t0 = points[0][0]
    xs = [t - t0 for t, _ in points]
    ys = [float(d) for _, d in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread <= 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
