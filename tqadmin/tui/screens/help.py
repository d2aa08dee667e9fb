"""Every key of every screen, generated from the bindings themselves so it cannot go out of date."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

VIM_AND_ARROWS = "j/k or ↓/↑ move · g/G or Home/End jump · Enter opens · Esc goes back"


def screens() -> list[tuple[str, list[BindingType]]]:
    from tqadmin.tui.app import TqadminApp
    from tqadmin.tui.screens.action import ActionScreen
    from tqadmin.tui.screens.cron import CronScreen
    from tqadmin.tui.screens.dead_letters import DeadLettersScreen
    from tqadmin.tui.screens.inspector import InspectorScreen
    from tqadmin.tui.screens.overview import OverviewScreen
    from tqadmin.tui.screens.profiles import ProfilesScreen
    from tqadmin.tui.screens.queue_detail import QueueDetailScreen
    from tqadmin.tui.screens.workers import WorkersScreen
    from tqadmin.tui.widgets.queue_table import QueueTable

    return [
        ("everywhere", TqadminApp.BINDINGS),
        ("overview", [*OverviewScreen.BINDINGS, *QueueTable.BINDINGS]),
        ("queue detail", QueueDetailScreen.BINDINGS),
        ("message inspector", InspectorScreen.BINDINGS),
        ("dead letters", DeadLettersScreen.BINDINGS),
        ("workers", WorkersScreen.BINDINGS),
        ("cron", CronScreen.BINDINGS),
        ("profiles", ProfilesScreen.BINDINGS),
        ("action dialog", ActionScreen.BINDINGS),
    ]


KEY_NAMES = {
    "question_mark": "?",
    "slash": "/",
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "escape": "Esc",
    "enter": "Enter",
    "tab": "Tab",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "ctrl+r": "Ctrl+R",
}


def key_label(keys: str) -> str:
    """``"up,k"`` as ``"↑ / k"``: the names a person types, not Textual's."""
    return " / ".join(KEY_NAMES.get(key, key) for key in keys.split(","))


def bindings_table() -> Table:
    table = Table(box=None, padding=(0, 2), header_style="bold")
    table.add_column("screen", style="cyan")
    table.add_column("key", style="bold")
    table.add_column("does")
    for screen, bindings in screens():
        shown = [b for b in bindings if isinstance(b, Binding)]
        for index, binding in enumerate(shown):
            does = binding.tooltip or binding.description or binding.action
            last = index == len(shown) - 1
            table.add_row(screen if index == 0 else "", key_label(binding.key), does, end_section=last)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
        Binding("j", "scroll('down')", "Down", show=False),
        Binding("k", "scroll('up')", "Up", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("tqadmin keys", style="bold"))
            yield Static(Text(VIM_AND_ARROWS, style="dim"))
            yield Static(bindings_table())
            yield Static(
                Text(
                    "Writes (replay, move, purge) are refused in read-only profiles; every action shows a "
                    "dry run first and is written to the audit log.",
                    style="dim",
                )
            )

    def action_scroll(self, direction: str) -> None:
        view = self.query_one("#help", VerticalScroll)
        view.scroll_down() if direction == "down" else view.scroll_up()
