"""The pause dialog (``p`` on a queue): pause the queue or one task type of it for a while, or resume it.

The same write as ``tqadmin pause`` and ``resume`` (:mod:`tqadmin.admin.pausing`): the duration is required
(``forever`` said as such), the record goes to the profile's state store and the audit log (``via`` ``tui``).
The app refuses before the dialog opens in a read-only profile or on another framework's queue.
"""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from tqadmin.admin import pausing
from tqadmin.errors import TqadminError
from tqadmin.reading.connect import describe_error
from tqadmin.store.factory import open_pauses
from tqadmin.store.pauses.base import Pause, Target, parse_duration
from tqadmin.tui.model import paused_labels
from tqadmin.tui.text import clean

if TYPE_CHECKING:
    from tqadmin.tui.app import TqadminApp


class PauseScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel / close")]

    def __init__(self, queue: str, standing: list[Pause], now: float) -> None:
        super().__init__()
        self.queue = queue
        self.standing = paused_labels(standing, now).get(queue, "")

    @property
    def tq(self) -> TqadminApp:
        return cast("TqadminApp", self.app)

    def compose(self) -> ComposeResult:
        with Vertical(id="action-dialog"):
            title = Text(" pause ", style="bold black on yellow")
            title.append(" ")
            title.append(clean(self.queue), style="bold")
            yield Static(title, id="pause-title")
            yield Static(clean(self.standing) or "not paused", id="pause-standing")
            yield Input(placeholder="task type (empty: the whole queue)", id="pause-task-type")
            yield Input(placeholder="for how long: 30s, 10m, 2h, 1d or forever (required)", id="pause-for")
            yield Input(placeholder="why (shown to everyone who looks)", id="pause-reason")
            yield Static("", id="pause-error")
            yield Button("Pause", id="pause", variant="warning")
            yield Button("Resume", id="resume", variant="primary")
            yield Static(Text("Enter pauses · Esc cancels", style="dim"), id="action-hint")

    def on_mount(self) -> None:
        self.query_one("#pause-for", Input).focus()

    def _value(self, name: str) -> str:
        return self.query_one(f"#pause-{name}", Input).value.strip()

    def _target(self) -> Target:
        return Target(queue=self.queue, task_type=self._value("task-type") or None)

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.pause()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "resume":
            self.write("resume", self._target(), "", None)
        else:
            self.pause()

    def pause(self) -> None:
        try:
            for_s = parse_duration(self._value("for"))
        except TqadminError as exc:
            self.query_one("#pause-error", Static).update(Text(str(exc), style="bold red"))
            return
        self.write("pause", self._target(), self._value("reason"), for_s)

    @work(thread=True, exclusive=True, exit_on_error=False, group="pause")
    def write(self, action: str, target: Target, reason: str, for_s: float | None) -> None:
        settings = self.tq.settings
        try:
            with closing(open_pauses(settings.store_url, timeout_s=settings.timeout_s)) as store:
                if action == "pause":
                    written, warnings = pausing.pause(
                        settings, store, target, reason=reason, for_s=for_s, via="tui"
                    )
                    said = f"paused {target.describe()}: {written.describe(store.now())}"
                else:
                    ended, warnings = pausing.resume(settings, store, target, via="tui")
                    said = (
                        f"resumed {target.describe()}" if ended else f"no pause stood on {target.describe()}"
                    )
        except Exception as exc:
            self.app.call_from_thread(self.failed, describe_error(exc))
            return
        self.app.call_from_thread(self.done, said, warnings)

    def failed(self, error: str) -> None:
        self.query_one("#pause-error", Static).update(Text(clean(error), style="bold red"))

    def done(self, said: str, warnings: list[str]) -> None:
        for warning in warnings:
            self.app.notify(clean(warning), severity="warning")
        self.app.notify(clean(said), title="pause")
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
