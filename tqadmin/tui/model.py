"""What the dashboard knows between polls, kept apart from widgets so it is tested without a terminal.

Memory is bounded by construction: each queue keeps a fixed-length ring buffer of depths, and queues that
disappear from the broker are forgotten on the next poll, so the board weighs the same after a week as after
a minute.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from tqadmin.plugin.models import Alarm, QueueListing, QueueStats
from tqadmin.reading.recording import LIVE, Depths, Span
from tqadmin.show import tables
from tqadmin.store.pauses.base import Pause, of_queue

human_duration = tables.human_duration  # its home is below every face: the judges' reasons use it too
HISTORY_LEN = 30
_BARS = "▁▂▃▄▅▆▇█"
GAP_CELL = "·"
"""A cell of a span in which nothing polled the queue: not a zero, not an interpolation."""


def paused_labels(pauses: Iterable[Pause], now: float) -> dict[str, str]:
    """What each paused queue's row says: ``paused 12m left: <reason>`` for the whole queue, ``charge paused
    12m left: <reason>`` for a task type, several joined by ``; ``."""
    standing = list(pauses)
    queues = {p.target.queue for p in standing if p.target.queue is not None}
    return {
        queue: "; ".join(
            f"{p.target.task_type} {p.describe(now)}" if p.target.task_type else p.describe(now)
            for p in of_queue(standing, queue)
        )
        for queue in queues
    }


@dataclass(slots=True)
class QueueBoard:
    """The latest figures of every queue plus a bounded depth history per queue, and the span its trends
    show: ``live`` (the ring of this dashboard's own polls) or a span read from the stored history."""

    history_len: int = HISTORY_LEN
    stats: dict[str, QueueStats] = field(default_factory=dict)
    history: dict[str, deque[int]] = field(default_factory=dict)
    alarms: tuple[Alarm, ...] = ()
    broker: str = ""
    span: Span = LIVE
    span_cells: dict[str, Depths] = field(default_factory=dict)

    def apply(self, listing: QueueListing) -> None:
        """Fold one poll in; queues the broker no longer lists are forgotten with their history."""
        stats = {queue.name: queue for queue in listing.queues}
        for name in [n for n in self.stats if n not in stats]:
            del self.history[name]
        for queue in listing.queues:
            ring = self.history.get(queue.name)
            if ring is None:
                ring = self.history[queue.name] = deque(maxlen=self.history_len)
            ring.append(queue.messages)
        self.stats = stats
        self.alarms = listing.alarms
        self.broker = listing.broker

    def show_span(self, span: Span, cells: dict[str, Depths]) -> None:
        self.span, self.span_cells = span, cells

    def trend(self, queue: str) -> Iterable[int | None]:
        """The depths a queue's trend draws: its live ring, or its cells of the span shown."""
        if self.span is LIVE:
            return self.history.get(queue, ())
        return self.span_cells.get(queue, ())


def sparkline(values: Iterable[int | None], width: int = 12) -> str:
    """Depth history as block characters scaled to its own maximum; ``None`` (nothing polled) is a gap.

    Zero is an empty cell and a flat non-zero series a low flat line: a full block would read as "maxed
    out" when the depth merely did not change.
    """
    points = list(values)[-width:]
    known = [v for v in points if v is not None]
    top = max(known, default=0)
    flat = top <= 0 or min(known) == top
    steps = len(_BARS) - 1

    def cell(v: int | None) -> str:
        if v is None:
            return GAP_CELL
        if v <= 0:
            return " "
        return _BARS[1] if flat else _BARS[max(1, min(steps, int(v * steps / top + 0.5)))]

    return "".join(cell(v) for v in points)


def human_rate(rate: float | None) -> str:
    if rate is None:
        return "-"
    return f"{rate:.0f}/s" if rate >= 10 else f"{rate:.1f}/s"


def human_count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def matches_filter(name: str, needle: str) -> bool:
    """The ``/`` filter: every space-separated word must appear in the name (case-insensitive)."""
    lowered = name.lower()
    return all(word in lowered for word in needle.lower().split())


def sort_value(queue: QueueStats, column: str) -> tuple[int, float | str]:
    """A key that sorts unknown figures (None) last whatever the direction of numbers."""
    value = getattr(queue, column)
    if value is None:
        return (0, 0.0)
    if isinstance(value, str):
        return (1, value.lower())
    return (1, float(value))
