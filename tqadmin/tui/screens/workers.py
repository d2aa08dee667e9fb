"""Workers of every framework: who is alive, what each is running, which ones stopped beating and which are
wedged (alive yet making no progress: docs/pipeline.md), and why.

tqadmin's own come from the state store (with their counts), RQ's, Sidekiq's and Dramatiq's from their
registries on the broker, read with each poll of the queues and never written.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from tqadmin.plugin.workers import liveness
from tqadmin.tui.model import human_duration
from tqadmin.tui.screens.base import DashboardScreen
from tqadmin.tui.sources import foreign_worker_views
from tqadmin.tui.text import literal
from tqadmin.tui.widgets.banner import Banner

STATE_CELLS = {
    "live": Text(" live ", style="black on green"),
    "dead": Text(" DEAD ", style="bold white on red"),
    "unknown": Text("  ?   ", style="black on yellow"),
}
WEDGED_CELL = Text("WEDGED", style="bold black on dark_orange")


class WorkersScreen(DashboardScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor('down')", "Down", show=False),
        Binding("k", "cursor('up')", "Up", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        yield Static(id="workers-status")
        table: DataTable[Text] = DataTable(id="workers", cursor_type="row", zebra_stripes=True)
        table.add_columns(
            "worker",
            "framework",
            "state",
            "heartbeat",
            "why dead or wedged",
            "queue",
            "current job",
            "done",
            "failed",
        )
        yield table
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.tq.side_changed.subscribe(self, lambda _none: self.show_workers())
        self.tq.queues_changed.subscribe(self, lambda _none: self.show_workers())
        self.show_workers()

    def show_workers(self) -> None:
        table = self.query_one("#workers", DataTable)
        table.clear()
        view = self.tq.telemetry
        others = foreign_worker_views(self.tq.foreign_workers, self.tq.foreign_verdicts)
        workers = (*(view.workers if view else ()), *others)
        errors = [
            *([f"tqadmin's heartbeats: {self.tq.telemetry_error}"] if self.tq.telemetry_error else []),
            *(
                [f"other frameworks' workers: {self.tq.foreign_workers_error}"]
                if self.tq.foreign_workers_error
                else []
            ),
            *(self.tq.foreign_workers.unreadable if self.tq.foreign_workers else ()),
        ]
        status = self.query_one("#workers-status", Static)
        text = Text()
        if not workers:
            text.append(" no workers reporting", style="dim italic")
        else:
            states = Counter(liveness(w.alive) for w in workers)
            frameworks = sorted({w.framework for w in workers})
            text.append(f" {states['live']} live")
            if states["dead"]:
                text.append(f", {states['dead']} dead (see why)", style="bold red")
            wedged = sum(bool(w.wedged) for w in workers)
            if wedged:
                text.append(f", {wedged} wedged (see why)", style="bold dark_orange")
            if states["unknown"]:
                text.append(f", {states['unknown']} unknown (Celery without task events)", style="yellow")
            text.append(f" · {', '.join(frameworks)}", style="dim")
        for error in errors:
            text.append(f"\n cannot read {error}", style="bold red")
        status.update(text)
        for w in sorted(
            workers,
            key=lambda w: (w.alive is not False, not w.wedged, w.framework != "tqadmin", w.framework, w.id),
        ):
            state = WEDGED_CELL if w.wedged else STATE_CELLS[liveness(w.alive)]
            why = w.dead_reason or ("no heartbeat" if w.alive is False else "")
            if w.wedged and w.wedged_reason:
                why = w.wedged_reason
            age = "-" if w.heartbeat_age_s is None else human_duration(w.heartbeat_age_s)
            table.add_row(
                literal(w.id, "red" if w.alive is False else ""),
                literal(w.framework, "dim" if w.framework == "tqadmin" else "bold"),
                state,
                Text(age, justify="right", style="bold red" if w.alive is False else ""),
                literal(why, "dark_orange" if w.wedged else "red"),
                literal(w.queue),
                literal(w.current_job or "idle", "" if w.current_job else "dim"),
                Text("-" if w.done is None else str(w.done), justify="right"),
                Text(
                    "-" if w.failed is None else str(w.failed),
                    justify="right",
                    style="red" if w.failed else "",
                ),
            )

    def action_cursor(self, direction: str) -> None:
        table = self.query_one("#workers", DataTable)
        table.action_cursor_down() if direction == "down" else table.action_cursor_up()
