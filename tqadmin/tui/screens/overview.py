"""The first screen: every queue, hottest first, with the workers' telemetry under it.

Retry delay queues are folded into their work queue's "delayed" column; ``t`` lists them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Input, Static

from tqadmin.alerting.conditions import queue_contexts
from tqadmin.frameworks import own_pauses
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.telemetry.verdict import VERDICTS, QueueVerdict
from tqadmin.tui.model import paused_labels
from tqadmin.tui.screens.base import QueueScreen
from tqadmin.tui.text import clean
from tqadmin.tui.widgets.banner import Banner
from tqadmin.tui.widgets.queue_table import COLUMNS, QueueTable, header_text
from tqadmin.tui.widgets.telemetry import TelemetryPanel


def verdicts_line(verdicts: Mapping[str, QueueVerdict]) -> Text | None:
    """``stalled orders: ready 340 for 2m10s, ... · degraded emails: ...``, stalled first, by name."""
    bad = sorted(
        ((v.verdict, name, v.reason) for name, v in verdicts.items() if v.unhealthy),
        key=lambda found: (VERDICTS.index(found[0]), found[1]),
    )
    if not bad:
        return None
    text = Text(" ", end="")
    for index, (verdict, name, reason) in enumerate(bad):
        text.append(" · " if index else "")
        text.append(f"{verdict} ", style="bold red")
        text.append(clean(name), style="bold")
        text.append(f": {clean(reason)}")
    return text


class OverviewScreen(QueueScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse", show=False),
        # Not in the footer (it is full at 140 columns): the status line says "t lists them" when it applies.
        Binding("t", "toggle_delay_queues", "Delay queues", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        *QueueScreen.BINDINGS,
    ]

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        yield Static(id="table-status")
        yield Static(id="verdicts")
        yield Static(id="queue-header")
        yield QueueTable(id="queues")
        yield Input(placeholder="filter queues by name (Enter to apply, Esc to clear)", id="filter")
        yield TelemetryPanel(id="telemetry")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#filter", Input).display = False
        self.tq.queues_changed.subscribe(self, self.show_queues)
        self.tq.side_changed.subscribe(self, self.on_side_changed)
        self.watch(self.table, "scroll_x", lambda _x: self.show_status(), init=False)
        self.show_queues()
        self.show_telemetry()

    @property
    def table(self) -> QueueTable:
        return self.query_one(QueueTable)

    def on_side_changed(self, _: None = None) -> None:
        """Telemetry came: its workers complete the queues' alert conditions (all of a queue's dead)."""
        self.show_telemetry()
        self.show_queues()

    def sync_table(self) -> None:
        telemetry = self.tq.telemetry
        workers = [(w.queue.split(","), w.alive is True) for w in telemetry.workers] if telemetry else []
        contexts = queue_contexts(self.tq.board.stats.values(), workers, self.tq.verdicts)
        paused = own_pauses.labels(self.tq.board.stats.values())  # Sidekiq's own, beside tqadmin's
        paused |= paused_labels(self.tq.pauses[1], self.tq.pauses[0])
        self.table.sync(self.tq.board, self.tq.settings.thresholds, contexts, paused)

    def show_queues(self, _: None = None) -> None:
        table = self.table
        self.sync_table()
        table.set_class(self.tq.poll_state.stale, "stale")
        self.show_status()
        self.show_verdicts()

    def show_verdicts(self) -> None:
        """One line naming the stalled queues, then the degraded ones, each with why; hidden when none."""
        line = verdicts_line(self.tq.verdicts)
        box = self.query_one("#verdicts", Static)
        box.display = line is not None
        box.update(line or "")

    def show_status(self) -> None:
        table = self.table
        header = header_text(table.sort_column, table.sort_reverse, self.tq.span)
        self.query_one("#queue-header", Static).update(header[int(table.scroll_x) :])  # scrolls with the rows
        label = next(c.label for c in COLUMNS if c.key == table.sort_column)
        arrow = "↓" if table.sort_reverse else "↑"
        stats = self.tq.board.stats.values()
        listed = len(work_queues(stats, table.show_delay_queues))
        text = Text(f" {table.row_count:,} of {listed:,} queues · sorted by {label} {arrow}")
        folded = sum(1 for q in stats if q.delay_for is not None)
        if folded and not table.show_delay_queues:
            text.append(f" · {folded:,} retry delay queues in 'delayed' (t lists them)")
        if table.needle:
            text.append(" · filter: ")
            text.append(clean(table.needle), style="bold")
        if table.hot:
            text.append(" · ")
            text.append(f"{table.hot:,} over alert thresholds (red)", style="bold red")
        span = self.tq.span
        if span.tier is not None:
            text.append(f" · trends and telemetry: {span.label}, from history (H: next span)")
            skipped = self.tq.span_reading.skipped if self.tq.span_reading else 0
            if skipped:
                text.append(f" · {skipped:,} unreadable history points skipped", style="bold red")
        if self.tq.span_error:
            text.append(f" · history not read: {self.tq.span_error}", style="bold red")
        state = self.tq.poll_state
        if state.stale:
            known = "last good data" if state.last_ok is not None else "no data yet"
            text.append(f"  STALE: {known}, broker not answering", style="bold red")
        self.query_one("#table-status", Static).update(text)

    def show_telemetry(self) -> None:
        self.query_one(TelemetryPanel).show(
            self.tq.shown_telemetry(), self.tq.telemetry_error, self.tq.settings.thresholds
        )

    def selected_queue(self) -> str | None:
        return self.table.selected_queue()

    def on_queue_table_selected(self, event: QueueTable.Selected) -> None:
        from tqadmin.tui.screens.queue_detail import QueueDetailScreen

        self.app.push_screen(QueueDetailScreen(event.queue))

    def action_sort(self) -> None:
        self.table.cycle_sort()
        self.show_status()

    def action_toggle_delay_queues(self) -> None:
        table = self.table
        table.show_delay_queues = not table.show_delay_queues
        self.sync_table()
        self.show_status()

    def action_reverse(self) -> None:
        self.table.flip_sort()
        self.show_status()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._apply_filter(event.value)
        event.input.display = False
        self.table.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._apply_filter(event.value)

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self._apply_filter("")
        self.table.focus()

    def _apply_filter(self, needle: str) -> None:
        table = self.table
        if table.needle != needle.strip():
            table.needle = needle.strip()
            self.sync_table()
            self.show_status()
