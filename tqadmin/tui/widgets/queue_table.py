"""The queues table: updated cell by cell, so a refresh of 10,000 queues touches only what moved.

Rows are keyed by queue name. A poll adds and removes rows for queues that appeared or vanished and rewrites
only the cells whose rendering changed; the whole table is rebuilt only when the filter changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from tqadmin.config import Thresholds
from tqadmin.plugin.models import QueueStats
from tqadmin.tui.model import (
    BoardDelta,
    QueueBoard,
    alerts,
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


COLUMNS = (
    Column("name", "queue", 28),
    Column("ready", "ready", 8),
    Column("unacked", "in flight", 9),
    Column("messages", "total", 8),
    Column("publish_rate", "pub/s", 7),
    Column("deliver_rate", "dlv/s", 7),
    Column("ack_rate", "ack/s", 7),
    Column("oldest_age_s", "oldest", 7),
    Column("consumers", "cons", 4),
    Column("dlq_messages", "DLQ", 5),
    Column("trend", "depth trend", 12),
)
SORTABLE = tuple(c.key for c in COLUMNS if c.key != "trend")


class QueueName(Text):
    """The name cell; it remembers the raw queue name so sorting never depends on the cleaned text."""

    def __init__(self, queue: str, style: str) -> None:
        super().__init__(clean(queue), style=style, no_wrap=True, end="")
        self.queue = queue


def render_row(queue: QueueStats, board: QueueBoard, thresholds: Thresholds) -> tuple[Text, ...]:
    """The cells of one queue; every string from the broker goes through :func:`clean` into a ``Text``."""
    hot = bool(alerts(queue, thresholds))
    style = "bold red" if hot else ""
    numbers = (
        human_count(queue.ready),
        human_count(queue.unacked),
        human_count(queue.messages),
        human_rate(queue.publish_rate),
        human_rate(queue.deliver_rate),
        human_rate(queue.ack_rate),
        human_duration(queue.oldest_age_s),
        human_count(queue.consumers),
        human_count(queue.dlq_messages),
    )
    cells: list[Text] = [QueueName(queue.name, style)]
    cells += [Text(value, style=style, justify="right", end="") for value in numbers]
    cells.append(Text(sparkline(board.history.get(queue.name, ())), style="cyan", end=""))
    return tuple(cells)


class QueueTable(DataTable[Text]):
    """Queues with vim keys; ``s`` cycles the sort column and ``S`` flips its direction."""

    BINDINGS = [  # noqa: RUF012 - Textual reads bindings as a class attribute
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.sort_column = "messages"
        self.sort_reverse = True
        self.needle = ""
        self._cells: dict[str, tuple[Text, ...]] = {}
        self._board: QueueBoard | None = None

    def on_mount(self) -> None:
        for column in COLUMNS:
            self.add_column(column.label, key=column.key, width=column.width)

    def selected_queue(self) -> str | None:
        if self.row_count == 0:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def sync(self, board: QueueBoard, delta: BoardDelta | None, thresholds: Thresholds) -> None:
        """Bring the table up to date with ``board``; ``delta=None`` rebuilds (first paint, new filter)."""
        self._board = board
        if delta is None:
            self._rebuild(board, thresholds)
        else:
            for name in delta.removed:
                if name in self._cells:
                    del self._cells[name]
                    self.remove_row(name)
            for name in delta.added:
                if matches_filter(name, self.needle):
                    self._cells[name] = render_row(board.stats[name], board, thresholds)
                    self.add_row(*self._cells[name], key=name)
            for name in delta.changed:
                if name in self._cells:
                    self._update_row(name, render_row(board.stats[name], board, thresholds))
        self.apply_sort()

    def _rebuild(self, board: QueueBoard, thresholds: Thresholds) -> None:
        selected = self.selected_queue()
        self.clear()
        self._cells = {
            name: render_row(stats, board, thresholds)
            for name, stats in board.stats.items()
            if matches_filter(name, self.needle)
        }
        for name, cells in self._cells.items():
            self.add_row(*cells, key=name)
        if selected in self._cells:
            self.move_cursor(row=self.get_row_index(selected))

    def _update_row(self, name: str, cells: tuple[Text, ...]) -> None:
        old = self._cells[name]
        for column, before, after in zip(COLUMNS, old, cells, strict=True):
            if before.plain != after.plain or before.style != after.style:
                self.update_cell(name, column.key, after)
        self._cells[name] = cells

    def apply_sort(self) -> None:
        board = self._board
        if board is None or self.row_count == 0:
            return
        column = self.sort_column
        stats = board.stats
        self.sort("name", key=lambda cell: sort_value(stats[cell.queue], column), reverse=self.sort_reverse)

    def cycle_sort(self) -> str:
        index = SORTABLE.index(self.sort_column)
        self.sort_column = SORTABLE[(index + 1) % len(SORTABLE)]
        self.sort_reverse = self.sort_column != "name"
        self.apply_sort()
        return self.sort_column

    def flip_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self.apply_sort()
