"""Workers: who is alive, what each is running, and which ones stopped sending heartbeats."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from tqadmin.tui.model import human_duration
from tqadmin.tui.screens.base import DashboardScreen
from tqadmin.tui.text import literal
from tqadmin.tui.widgets.banner import Banner


class WorkersScreen(DashboardScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor('down')", "Down", show=False),
        Binding("k", "cursor('up')", "Up", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        yield Static(id="workers-status")
        table: DataTable[Text] = DataTable(id="workers", cursor_type="row", zebra_stripes=True)
        table.add_columns("worker", "state", "queue", "heartbeat", "current job", "done", "failed")
        yield table
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.tq.side_changed.subscribe(self, lambda _none: self.show_workers())
        self.show_workers()

    def show_workers(self) -> None:
        table = self.query_one("#workers", DataTable)
        table.clear()
        view, error = self.tq.telemetry, self.tq.telemetry_error
        workers = view.workers if view else ()
        status = self.query_one("#workers-status", Static)
        if error:
            status.update(Text(f" cannot read worker heartbeats: {error}", style="bold red"))
        elif not workers:
            status.update(Text(" no workers reporting", style="dim italic"))
        else:
            dead = sum(1 for w in workers if not w.alive)
            text = Text(f" {len(workers) - dead} live")
            if dead:
                text.append(
                    f", {dead} dead (no heartbeat; their in-flight jobs return to the queue)",
                    style="bold red",
                )
            status.update(text)
        for w in sorted(workers, key=lambda w: (w.alive, w.id)):
            state = (
                Text(" live ", style="black on green")
                if w.alive
                else Text(" DEAD ", style="bold white on red")
            )
            table.add_row(
                literal(w.id, "" if w.alive else "red"),
                state,
                literal(w.queue),
                Text(human_duration(w.heartbeat_age_s), justify="right", style="" if w.alive else "bold red"),
                literal(w.current_job or "idle", "" if w.current_job else "dim"),
                Text(str(w.done), justify="right"),
                Text(str(w.failed), justify="right", style="red" if w.failed else ""),
            )

    def action_cursor(self, direction: str) -> None:
        table = self.query_one("#workers", DataTable)
        table.action_cursor_down() if direction == "down" else table.action_cursor_up()
