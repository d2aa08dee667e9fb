"""The queues table: a virtual list that renders only the rows on screen, so 10,000 queues stay cheap.

Textual's DataTable keeps a renderable per cell and measures every cell it is given; at 10,000 queues that is
seconds per refresh. This widget keeps only the order of queue names; a line is built from the board when it
scrolls into view, so a poll costs one pass over the board (to sort) and a repaint of the visible lines,
whatever the number of queues.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tqadmin.alerting.conditions import NO_CONTEXT, QueueContext, queue_alerts
from tqadmin.config import Thresholds
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.plugin.models import QueueStats
from tqadmin.reading.recording import LIVE, Span
from tqadmin.tui.model import (
    QueueBoard,
    human_count,
    human_duration,
    human_rate,
    matches_filter,
    sort_value,
    sparkline,
)
from tqadmin.tui.text import clean


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    width: int
    fmt: Callable[[QueueStats], str]
    right: bool = True


COLUMNS = (
    Column("name", "queue", 30, lambda q: clean(q.name), right=False),
    Column("ready", "ready", 8, lambda q: human_count(q.ready)),
    Column("unacked", "in flight", 9, lambda q: human_count(q.unacked)),
    Column("messages", "total", 8, lambda q: human_count(q.messages)),
    Column("delayed", "delayed", 7, lambda q: human_count(q.delayed)),
    Column("publish_rate", "pub/s", 7, lambda q: human_rate(q.publish_rate)),
    Column("deliver_rate", "dlv/s", 7, lambda q: human_rate(q.deliver_rate)),
    Column("ack_rate", "ack/s", 7, lambda q: human_rate(q.ack_rate)),
    Column("oldest_age_s", "oldest", 7, lambda q: human_duration(q.oldest_age_s)),
    Column("consumers", "cons", 4, lambda q: human_count(q.consumers)),
    Column("dlq_messages", "DLQ", 6, lambda q: human_count(q.dlq_messages)),
)
SORTABLE = tuple(c.key for c in COLUMNS)
VERDICT_WIDTH = 11  # "no consumer": the verdict column, after the queue's name (tqadmin.reading.verdicts)
TREND_WIDTH = 14
GAP = 2  # two spaces, so neighbouring headers ("ready", "in flight") never read as one
VERDICT_STYLES = {"no consumer": "yellow", "unknown": "dim", "paused": "yellow"}  # stalled, degraded: red


def fit(text: str, width: int, right: bool) -> str:
    if len(text) > width:
        return text[: width - 1] + "…"
    return text.rjust(width) if right else text.ljust(width)


def header_text(sort_column: str, reverse: bool, span: Span = LIVE) -> Text:
    text = Text(end="", no_wrap=True)
    for column in COLUMNS:
        label = column.label + ((" ↓" if reverse else " ↑") if column.key == sort_column else "")
        text.append(fit(label, column.width, column.right) + " " * GAP, style="bold")
        if column is COLUMNS[0]:
            text.append(fit("verdict", VERDICT_WIDTH, False) + " " * GAP, style="bold")
    text.append("depth trend" if span is LIVE else f"depth {span.name}", style="bold")
    return text


def row_text(
    queue: QueueStats,
    board: QueueBoard,
    thresholds: Thresholds,
    context: QueueContext = NO_CONTEXT,
    paused: str | None = None,
) -> Text:
    """One queue as a line; broker strings go through :func:`clean` and into ``Text``, never markup;
    ``paused`` ("paused 12m left: <reason>") follows the trend."""
    # a queue another framework owns is shown dim: it can be looked at, not written
    style = "bold red" if queue_alerts(queue, thresholds, context) else ("dim" if queue.read_only else "")
    text = Text(end="", no_wrap=True)
    verdict = context.verdict.verdict if context.verdict else ""
    for column in COLUMNS:
        text.append(fit(column.fmt(queue), column.width, column.right) + " " * GAP, style=style)
        if column is COLUMNS[0]:
            shown = style or VERDICT_STYLES.get(verdict, "")
            text.append(fit(verdict, VERDICT_WIDTH, False) + " " * GAP, style=shown)
    text.append(sparkline(board.trend(queue.name), TREND_WIDTH), style="cyan")
    if paused:
        text.append("  " + clean(paused), style="bold yellow")
    return text


class QueueTable(ScrollView, can_focus=True):
    """Queues in the current sort order, with a cursor; vim keys and arrows move it, Enter opens it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Open"),
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "jump(0)", "Top", show=False),
        Binding("end,G", "jump(-1)", "Bottom", show=False),
        Binding("left,h", "scroll_left", "Left", show=False),
        Binding("right,l", "scroll_right", "Right", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"queue-table--cursor", "queue-table--zebra"}

    cursor_row: reactive[int] = reactive(0)

    class Selected(Message):
        """Enter (or a click on the selected row) on a queue."""

        def __init__(self, queue: str) -> None:
            super().__init__()
            self.queue = queue

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort_column = "messages"
        self.sort_reverse = True
        self.needle = ""
        self.show_delay_queues = False  # retry delay queues are folded into their work queue's "delayed"
        self.order: list[str] = []
        self.hot = 0  # listed queues over an alert threshold, counted at each sync
        self.board = QueueBoard()
        self.thresholds = Thresholds()
        self.contexts: Mapping[str, QueueContext] = {}
        self.paused: Mapping[str, str] = {}  # queue -> what its pauses say

    @property
    def row_count(self) -> int:
        return len(self.order)

    def selected_queue(self) -> str | None:
        return self.order[self.cursor_row] if self.order else None

    def sync(
        self,
        board: QueueBoard,
        thresholds: Thresholds,
        contexts: Mapping[str, QueueContext] | None = None,
        paused: Mapping[str, str] | None = None,
    ) -> None:
        """Re-derive the visible order from ``board`` and repaint; the cursor stays on its queue. ``contexts``
        (which queues are dead-letter queues, each queue's workers) completes the alert conditions."""
        selected = self.selected_queue()
        self.board, self.thresholds = board, thresholds
        if contexts is not None:
            self.contexts = contexts
        if paused is not None:
            self.paused = paused
        stats = board.stats
        names = [q.name for q in work_queues(stats.values(), self.show_delay_queues)]
        if self.needle:
            names = [n for n in names if matches_filter(n, self.needle)]
        column = self.sort_column
        names.sort(key=lambda n: sort_value(stats[n], column), reverse=self.sort_reverse)
        self.order = names
        self.hot = sum(1 for name in names if queue_alerts(stats[name], thresholds, self.context(name)))
        width = sum(c.width + GAP for c in COLUMNS) + VERDICT_WIDTH + GAP + TREND_WIDTH
        self.virtual_size = Size(width, len(names))
        if selected in stats and selected is not None and (not self.needle or selected in names):
            self.set_reactive(QueueTable.cursor_row, names.index(selected))
        self.cursor_row = max(0, min(self.cursor_row, len(names) - 1))
        self.refresh()

    def context(self, name: str) -> QueueContext:
        return self.contexts.get(name, NO_CONTEXT)

    def cycle_sort(self) -> None:
        index = SORTABLE.index(self.sort_column)
        self.sort_column = SORTABLE[(index + 1) % len(SORTABLE)]
        self.sort_reverse = self.sort_column != "name"
        self.sync(self.board, self.thresholds)

    def flip_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self.sync(self.board, self.thresholds)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        if index >= len(self.order):
            return Strip.blank(width, self.rich_style)
        queue = self.board.stats.get(self.order[index])
        if queue is None:
            return Strip.blank(width, self.rich_style)
        text = row_text(
            queue, self.board, self.thresholds, self.context(queue.name), self.paused.get(queue.name)
        )
        base = self.rich_style
        on_cursor = index == self.cursor_row
        if on_cursor:  # the cursor's colours win over the row's own, so it stays readable
            base += self.get_component_rich_style("queue-table--cursor")
        elif index % 2:
            base += self.get_component_rich_style("queue-table--zebra")
        segments = [
            Segment(s.text, (s.style + base if on_cursor else base + s.style) if s.style else base)
            for s in text.render(self.app.console)
        ]
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, base)

    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh_line(old - self.scroll_offset.y)
        self.refresh_line(new - self.scroll_offset.y)
        self.scroll_to_region(Region(0, new, 1, 1), animate=False, force=True, immediate=True)

    def refresh_line(self, y: int) -> None:
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def action_move(self, step: int) -> None:
        if self.order:
            self.cursor_row = max(0, min(len(self.order) - 1, self.cursor_row + step))

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 1))

    def action_jump(self, where: int) -> None:
        if self.order:
            self.cursor_row = where % len(self.order)

    def action_select(self) -> None:
        queue = self.selected_queue()
        if queue is not None:
            self.post_message(self.Selected(queue))

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < len(self.order):
            if index == self.cursor_row and event.chain >= 2:
                self.action_select()
            self.cursor_row = index
