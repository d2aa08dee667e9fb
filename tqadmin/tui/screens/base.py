"""What every screen that shows queues shares: the banner, and action keys on the selected queue."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual.binding import Binding, BindingType
from textual.screen import Screen

from tqadmin.tui.widgets.banner import Banner

if TYPE_CHECKING:
    from tqadmin.tui.app import TqadminApp

ACTION_BINDINGS: list[BindingType] = [
    Binding("R", "queue_action('replay')", "Replay", tooltip="Replay: send dead letters back to their queue"),
    Binding("m", "queue_action('move')", "Move", tooltip="Move: move messages to another queue"),
    Binding("X", "queue_action('purge')", "Purge", tooltip="Purge: delete every message (type the name)"),
    Binding("e", "queue_action('export')", "Export", tooltip="Export: copy messages to a file, leave them"),
    # Not in the footer (it is full): the help screen lists it, and a paused row says how to look.
    Binding("p", "pause_queue", "Pause / resume", show=False),
]


class DashboardScreen(Screen[None]):
    """Subscribes its banner to the app's poll state."""

    @property
    def tq(self) -> TqadminApp:
        return cast("TqadminApp", self.app)

    def on_mount(self) -> None:
        self.tq.queues_changed.subscribe(self, lambda _: self.refresh_banner())
        self.refresh_banner()

    def refresh_banner(self) -> None:
        for banner in self.query(Banner):
            banner.show(self.tq.poll_state, self.tq.clock())


class QueueScreen(DashboardScreen):
    """A screen with a selected queue the action keys apply to."""

    BINDINGS: ClassVar[list[BindingType]] = ACTION_BINDINGS

    def selected_queue(self) -> str | None:
        raise NotImplementedError

    def selected_filter(self) -> str | None:
        return None

    def action_queue_action(self, action: str) -> None:
        self.tq.start_action(action, self.selected_queue(), self.selected_filter())

    def action_pause_queue(self) -> None:
        self.tq.start_pause(self.selected_queue())
