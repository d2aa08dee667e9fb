"""Dead-letter queues, their messages grouped by reason and error, and actions on a whole group."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Static

from tqadmin.admin.dead_letters import DeadGroup, group_dead_letters
from tqadmin.plugin.models import QueueStats
from tqadmin.reading.connect import describe_error
from tqadmin.tui.events import MessagesPeeked, PeekFailed
from tqadmin.tui.model import human_count
from tqadmin.tui.screens.base import QueueScreen
from tqadmin.tui.text import clean, literal
from tqadmin.tui.widgets.banner import Banner
from tqadmin.tui.widgets.peek_cost import cost_notice

SAMPLE = 500


def dead_letter_queues(stats: Mapping[str, QueueStats]) -> list[str]:
    """The queues listed that another queue dead-letters into (its ``QueueStats.dlq``, as its plugin names
    and finds it: ``Q.dlq``, ``Q-dlq`` on SQS, whatever a redrive policy says), except those with a DLQ of
    their own: a retry queue dead-letters back into its work queue on expiry, and that work queue is no
    dead-letter queue."""
    targets = {s.dlq for s in stats.values() if s.dlq is not None} & set(stats)
    return sorted(name for name in targets if stats[name].dlq is None)


class DeadLettersScreen(QueueScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "app.focus_next", "Switch pane", show=False),
        Binding("j", "cursor('down')", "Down", show=False),
        Binding("k", "cursor('up')", "Up", show=False),
        Binding("r", "load", "Reload groups"),
        *QueueScreen.BINDINGS,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.groups: list[DeadGroup] = []
        self.loaded: str | None = None

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        with Horizontal(id="dead-panes"):
            with Vertical(id="dlq-pane"):
                yield Static(Text(" dead-letter queues", style="bold"))
                dlqs: DataTable[Text] = DataTable(id="dlqs", cursor_type="row")
                dlqs.add_columns("queue", "messages")
                yield dlqs
            with Vertical(id="group-pane"):
                yield Static(" select a dead-letter queue", id="group-title")
                yield Static(id="group-cost")
                groups: DataTable[Text] = DataTable(id="groups", cursor_type="row", zebra_stripes=True)
                groups.add_columns("count", "reason", "task type", "error")
                yield groups
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.tq.queues_changed.subscribe(self, self.show_dlqs)
        self.show_dlqs()

    def show_dlqs(self, _: None = None) -> None:
        table = self.query_one("#dlqs", DataTable)
        stats = self.tq.board.stats
        names = dead_letter_queues(stats)
        selected = self._dlq_cursor()
        table.clear()
        for name in names:
            count = stats[name].messages
            table.add_row(
                literal(name),
                Text(human_count(count), style="bold red" if count else "", justify="right"),
                key=name,
            )
        if selected in names:
            table.move_cursor(row=names.index(selected))
        if self.loaded is None and names:
            self.action_load()

    def _dlq_cursor(self) -> str | None:
        table = self.query_one("#dlqs", DataTable)
        if table.row_count == 0:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Moving the cursor never peeks (each peek counts a delivery): it says how to load the groups."""
        queue = event.row_key.value
        if event.data_table.id != "dlqs" or queue == self.loaded or queue != self._dlq_cursor():
            return
        hint = Text(
            f" {clean(queue)}: press Enter or r to group its messages (peeks up to {SAMPLE})", style="dim"
        )
        self.query_one("#group-title", Static).update(hint)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "dlqs":
            self.action_load()

    def action_load(self) -> None:
        queue = self._dlq_cursor()
        if queue is None:
            return
        self.loaded = queue
        self.query_one("#group-title", Static).update(Text(f" grouping {clean(queue)}…", style="dim"))
        self.query_one("#group-cost", Static).update("")
        self.run_peek(queue)

    @work(thread=True, exclusive=True, exit_on_error=False, group="peek")
    def run_peek(self, queue: str) -> None:
        try:
            with self.tq.borrowed_admin() as admin:
                result = admin.peek(queue, SAMPLE)
                deaths = tuple(admin.deaths(m) for m in result.messages)
                self.post_message(MessagesPeeked(result, admin.capabilities, deaths))
        except Exception as exc:
            self.post_message(PeekFailed(queue, describe_error(exc)))

    def on_messages_peeked(self, event: MessagesPeeked) -> None:
        self.groups = group_dead_letters(event.result.messages, event.deaths_of)
        table = self.query_one("#groups", DataTable)
        table.clear()
        for index, group in enumerate(self.groups):
            table.add_row(
                Text(str(group.count), justify="right"),
                literal(group.reason, "bold"),
                literal(group.task_type),
                literal(group.error, "red"),
                key=str(index),
            )
        title = Text(" ", end="")
        title.append(clean(event.result.queue), style="bold")
        title.append(
            f": {len(event.result.messages)} messages in {len(self.groups)} groups (sampled up to {SAMPLE})"
        )
        self.query_one("#group-title", Static).update(title)
        self.query_one("#group-cost", Static).update(cost_notice(event.result, event.capabilities))

    def on_peek_failed(self, event: PeekFailed) -> None:
        self.query_one("#group-cost", Static).update("")
        self.query_one("#group-title", Static).update(Text(f" cannot group: {event.error}", style="bold red"))

    def action_cursor(self, direction: str) -> None:
        focused = self.focused
        if isinstance(focused, DataTable):
            focused.action_cursor_down() if direction == "down" else focused.action_cursor_up()

    def selected_queue(self) -> str | None:
        return self._dlq_cursor()

    def selected_filter(self) -> str | None:
        """Actions apply to the highlighted group when the groups pane has focus, else the whole queue."""
        table = self.query_one("#groups", DataTable)
        if self.focused is not table or table.row_count == 0 or not self.groups:
            return None
        row = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.groups[int(row or 0)].filter_expression()
