"""The dialog every action goes through: where to, dry-run count, confirmation, progress with cancel.

Purge asks for the queue name to be typed; the others for a press of Enter once the dry run has said how
many messages will be touched. The work runs in a thread worker; cancel stops it between batches, leaving
every message not yet confirmed at its destination where it was.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, ProgressBar, Static

from tqadmin.admin.records import record_action
from tqadmin.admin.reports import describe_report
from tqadmin.files import private_file
from tqadmin.plugin.models import ActionReport
from tqadmin.reading.connect import describe_error
from tqadmin.tui import actions
from tqadmin.tui.events import ActionFinished, ActionPlanned, ActionProgressed
from tqadmin.tui.text import clean

if TYPE_CHECKING:
    from tqadmin.tui.app import TqadminApp

PAST = {"replay": "replayed", "move": "moved", "purge": "purged", "export": "exported"}
PROMPTS = {
    "move": "move to queue:",
    "export": "export to file (JSONL):",
    "replay": "replay to queue (empty: each message's original queue):",
}


class ActionScreen(ModalScreen[ActionReport | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel / close"),
    ]

    def __init__(self, request: actions.ActionRequest, default_target: str = "") -> None:
        super().__init__()
        self.request = request
        self.default_target = default_target
        self.plan: ActionReport | None = None
        self.cancel_event = threading.Event()
        self.running = False
        self.replace_asked: str | None = None  # the export file the user was asked about replacing

    @property
    def tq(self) -> TqadminApp:
        return cast("TqadminApp", self.app)

    def compose(self) -> ComposeResult:
        with Vertical(id="action-dialog"):
            yield Static(self._title(), id="action-title")
            yield Static(PROMPTS.get(self.request.action, ""), id="target-prompt")
            yield Input(value=self.default_target, id="target")
            yield Static("", id="plan")
            yield Static("", id="confirm-prompt")
            yield Input(placeholder="type the queue name to confirm", id="confirm-name")
            yield Button("Run", id="run", variant="error" if self.request.action == "purge" else "primary")
            yield ProgressBar(id="progress", show_eta=False)
            yield Static(Text("Esc cancels", style="dim"), id="action-hint")

    def _title(self) -> Text:
        text = Text(f" {self.request.action} ", style="bold white on dark_red")
        text.append(" ")
        text.append(clean(self.request.source), style="bold")
        if self.request.filter:
            text.append("  where ")
            text.append(clean(self.request.filter), style="italic")
        return text

    def on_mount(self) -> None:
        for widget_id in ("#confirm-prompt", "#confirm-name", "#run", "#progress"):
            self.query_one(widget_id).display = False
        if self.request.action in PROMPTS:
            self.query_one("#target", Input).focus()
        else:
            self.query_one("#target-prompt").display = False
            self.query_one("#target").display = False
            self.start_plan()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "target":
            target = event.value.strip()
            if self.request.needs_target and not target:
                self.notify("a destination is needed", severity="warning")
                return
            force = self.request.action == "export" and target == self.replace_asked
            if self.request.action == "export" and not self._may_write(target, force):
                return
            self.request = actions.ActionRequest(
                self.request.action, self.request.source, target or None, self.request.filter, force
            )
            event.input.disabled = True
            self.start_plan()
        elif event.input.id == "confirm-name":
            if event.value != self.request.source:
                self.notify("the name typed does not match the queue; nothing purged", severity="warning")
                return
            self.start_run()

    def _may_write(self, target: str, force: bool) -> bool:
        """An export file that exists is replaced only after a second Enter on the same name; a symbolic
        link never (:mod:`tqadmin.files.private_file`)."""
        refused = private_file.refusal(Path(target), force=force)
        if isinstance(refused, private_file.FileExists):
            self.replace_asked = target
            ask = Text(f"{clean(target)} exists: ", style="bold yellow")
            ask.append("Enter again replaces it with a new file (0600); or type another name.")
            self.query_one("#plan", Static).update(ask)
            return False
        if refused is not None:
            self.notify(str(refused), title="export refused", severity="warning")
            return False
        return True

    def start_plan(self) -> None:
        self.query_one("#plan", Static).update(Text("dry run: counting…", style="dim"))
        self.plan_transfer()

    @work(thread=True, exclusive=True, exit_on_error=False, group="action")
    def plan_transfer(self) -> None:
        try:
            with self.tq.borrowed_admin() as admin:
                report = actions.plan(admin, self.request)
        except Exception as exc:
            self.post_message(ActionFinished(None, describe_error(exc)))
        else:
            self.post_message(ActionPlanned(report))

    def on_action_planned(self, event: ActionPlanned) -> None:
        self.plan = event.report
        self._record(event.report)
        where = f" to {clean(self.request.target)}" if self.request.target else ""
        text = Text("dry run: ", style="bold")
        text.append(f"{event.report.matched} messages", style="bold yellow")
        past = PAST[self.request.action]
        text.append(f" would be {past} from {clean(self.request.source)}{where}; nothing changed yet.")
        self.query_one("#plan", Static).update(text)
        if event.report.matched == 0:
            self.query_one("#action-hint", Static).update(Text("nothing to do · Esc closes", style="dim"))
            return
        if self.request.action == "purge":
            prompt = Text("This cannot be undone. Type ", end="")
            prompt.append(clean(self.request.source), style="bold")
            prompt.append(" and press Enter to purge it:")
            self.query_one("#confirm-prompt", Static).update(prompt)
            self.query_one("#confirm-prompt").display = True
            confirm = self.query_one("#confirm-name", Input)
            confirm.display = True
            confirm.focus()
        else:
            button = self.query_one("#run", Button)
            button.display = True
            button.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "run":
            self.start_run()

    def start_run(self) -> None:
        if self.running:
            return
        self.running = True
        for widget_id in ("#confirm-prompt", "#confirm-name", "#run"):
            self.query_one(widget_id).display = False
        bar = self.query_one("#progress", ProgressBar)
        bar.display = True
        bar.update(total=self.plan.matched if self.plan else None, progress=0)
        self.query_one("#action-hint", Static).update(
            Text("running · Esc cancels between batches", style="dim")
        )
        self.run_transfer()

    @work(thread=True, exclusive=True, exit_on_error=False, group="action")
    def run_transfer(self) -> None:
        try:
            with self.tq.borrowed_admin() as admin:
                report = actions.execute(admin, self.request, self._progressed, self.cancel_event)
        except actions.PartialAction as exc:
            self.post_message(ActionFinished(exc.report, describe_error(exc)))
        except Exception as exc:
            self.post_message(ActionFinished(None, describe_error(exc)))
        else:
            self.post_message(ActionFinished(report, None))

    def _progressed(self, done: int, total: int | None) -> None:
        self.post_message(ActionProgressed(done, total))

    def on_action_progressed(self, event: ActionProgressed) -> None:
        self.query_one("#progress", ProgressBar).update(total=event.total, progress=event.done)

    def on_action_finished(self, event: ActionFinished) -> None:
        self.running = False
        if event.error is not None:
            if self.plan is not None:  # past the dry run: something may have been sent, so it is audited
                request = self.request
                done = event.report or ActionReport(request.action, request.source, request.target)
                self._record(done, outcome="error")
            self.notify(event.error, title=f"{self.request.action} failed", severity="error")
            self.dismiss(None)
            return
        if event.report is None:
            return
        self._record(event.report)
        self.notify(
            describe_report(event.report),
            title=f"{self.request.action} done",
            severity="information" if event.report.complete else "warning",
            markup=False,  # queue names are data
        )
        self.tq.action_refresh()
        self.dismiss(event.report)

    def _record(self, report: ActionReport, outcome: str | None = None) -> None:
        """The audit record, in the CLI's shape; one that cannot be kept is said, since the action ran."""
        warning = record_action(self.tq.settings, report, "tui", outcome)
        if warning is not None:
            self.notify(warning, title="audit", severity="warning")

    def action_cancel(self) -> None:
        if self.running:
            self.cancel_event.set()
            self.query_one("#action-hint", Static).update(Text("cancelling after this batch…", style="bold"))
        else:
            self.dismiss(None)
