"""The distributed cron: who leads, with which fencing token, and when each schedule fires next; a paused
schedule's name is followed by its pause (``paused 12m left: <reason>``), its ticks skipped meanwhile."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Static

from tqadmin.tui.model import human_duration
from tqadmin.tui.screens.base import DashboardScreen
from tqadmin.tui.text import clean, literal
from tqadmin.tui.widgets.banner import Banner


def when(epoch: float | None, now: float) -> str:
    if epoch is None:
        return "-"
    stamp = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    delta = epoch - now
    relative = f"in {human_duration(delta)}" if delta >= 0 else f"{human_duration(-delta)} ago"
    return f"{stamp} ({relative})"


class CronScreen(DashboardScreen):
    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        yield Static(id="cron-leader")
        table: DataTable[Text] = DataTable(id="schedules", cursor_type="row", zebra_stripes=True)
        table.add_columns("schedule", "cron", "queue", "next fire", "last fire", "late")
        yield table
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.tq.side_changed.subscribe(self, lambda _none: self.show_cron())
        self.show_cron()

    def show_cron(self) -> None:
        table = self.query_one("#schedules", DataTable)
        table.clear()
        leader = self.query_one("#cron-leader", Static)
        view, error = self.tq.cron, self.tq.cron_error
        if error:
            leader.update(Text(f" cannot read the cron state: {error}", style="bold red"))
            return
        if view is None:
            leader.update(
                Text(" no cron state: run `tqadmin cron --schedule FILE.toml` to start one", style="dim")
            )
            return
        text = Text(" leader ")
        text.append(clean(view.leader or "none"), style="bold green" if view.leader else "bold red")
        text.append(f"   fencing token {view.fencing_token if view.fencing_token is not None else '-'}")
        if not view.schedules:
            text.append("   no schedules registered: start `tqadmin cron --schedule FILE.toml`", style="dim")
        leader.update(text)
        now = self.tq.clock()
        paused_at, standing = self.tq.pauses
        paused = {p.target.schedule: p for p in standing if p.target.schedule is not None}
        for s in view.schedules:
            late = s.lateness_s or 0.0
            name = literal(s.name, "bold")
            if s.name in paused:  # the leader skips its ticks (docs/cron.md)
                name.append_text(literal(f" {paused[s.name].describe(paused_at)}", "yellow"))
            table.add_row(
                name,
                literal(s.cron),
                literal(s.queue),
                Text(when(s.next_fire, now)),
                Text(when(s.last_fire, now)),
                Text(f"{late:.1f}s" if late else "-", style="yellow" if late > 1 else "", justify="right"),
            )
