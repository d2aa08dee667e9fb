"""The dashboard: one app of screens and keys over the polls of :class:`~tqadmin.tui.polling.PollingApp`.

What the dashboard shows is read by the read service (:mod:`tqadmin.reading`) in background polls; this
module holds what is the app's own: its screens, its keys, switching profiles and starting actions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual.binding import Binding, BindingType

from tqadmin.admin import gate, pausing
from tqadmin.config import Overrides, Settings, resolve
from tqadmin.errors import TqadminError
from tqadmin.reading.connect import connect_admin, describe_error
from tqadmin.reading.reader import CRON_NAMESPACE
from tqadmin.reading.reading import Part
from tqadmin.reading.recording import LIVE, HistoryReader, next_span
from tqadmin.show.logs import masked_traceback
from tqadmin.tui import actions
from tqadmin.tui.polling import AdminFactory, PollingApp, Sources
from tqadmin.tui.screens.cron import CronScreen
from tqadmin.tui.screens.dead_letters import DeadLettersScreen
from tqadmin.tui.screens.overview import OverviewScreen
from tqadmin.tui.screens.workers import WorkersScreen
from tqadmin.tui.text import clean
from tqadmin.tui.views import CronSource, TelemetrySource


class MaskedCrash(Exception):
    """What the dashboard reports when it crashes: the traceback with secrets masked and no locals.

    Textual's own crash report prints every frame's local variables, broker URLs with their passwords
    among them; it renders an exception that has ``__rich__`` as that instead.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.text = masked_traceback(error)

    def __rich__(self) -> Text:
        return Text(self.text)


class TqadminApp(PollingApp):
    """``TqadminApp()`` reads the environment and config file like the CLI; tests inject fakes.

    With telemetry from the store, history is read from (and, unless read-only, written to) the same store;
    ``history`` is a reader of the caller's for an app whose telemetry is its own (a seeded screen).
    ``pauses``: read the profile's pauses even so (the demo, whose telemetry is its own, shows them).
    ``cron_namespace`` is the cron instances' namespace whose status the cron screen shows.
    """

    TITLE = "tqadmin"
    CSS_PATH = "app.tcss"
    DEFAULT_MODE = "overview"
    MODES: ClassVar[dict[str, Any]] = {
        "overview": OverviewScreen,
        "dead_letters": DeadLettersScreen,
        "workers": WorkersScreen,
        "cron": CronScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("o", "switch_mode('overview')", "Overview"),
        Binding("d", "switch_mode('dead_letters')", "Dead letters"),
        Binding("w", "switch_mode('workers')", "Workers"),
        Binding("c", "switch_mode('cron')", "Cron"),
        Binding("P", "profiles", "Profiles"),
        Binding("H", "cycle_span", "Span: live, last hour, day, week", show=False),
        Binding("ctrl+r", "refresh", "Refresh", show=False),
    ]

    def __init__(
        self,
        profile: str | None = None,
        *,
        settings: Settings | None = None,
        admin_factory: AdminFactory | None = None,
        telemetry: TelemetrySource | Literal["store"] | None = "store",
        cron: CronSource | Literal["store"] | None = "store",
        refresh_s: float = 2.0,
        clock: Callable[[], float] = time.time,
        environ: Mapping[str, str] | None = None,
        history: HistoryReader | None = None,
        cron_namespace: str = CRON_NAMESPACE,
        pauses: bool = False,
    ) -> None:
        self.environ = environ
        from_store = {Part.WORKERS, Part.TELEMETRY, Part.PAUSES} if telemetry == "store" else set()
        if pauses:  # a caller with telemetry of its own (the demo) still shows the profile's pauses
            from_store.add(Part.PAUSES)
        sources = Sources(
            telemetry=None if telemetry == "store" else telemetry,
            cron=None if cron == "store" else cron,
            store_parts=frozenset(from_store | ({Part.CRON} if cron == "store" else set())),
            history=None if telemetry == "store" else history,
            cron_namespace=cron_namespace,
        )
        settings = settings or resolve(Overrides(profile=profile), environ)
        super().__init__(settings, admin_factory or connect_admin, sources, refresh_s, clock)

    def _handle_exception(self, error: Exception) -> None:
        """Crash as Textual does (exit code 1, the report on stderr), with the report masked."""
        crash = MaskedCrash(error)
        crash.__cause__ = error  # for a test's traceback; the report printed is ``crash.text``
        super()._handle_exception(crash)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer leaves out the key of the screen already shown, so the rest of the keys fit."""
        on_that_screen = parameters == (self.current_mode,) and len(self.screen_stack) == 1
        return not (action == "switch_mode" and on_that_screen)

    def action_refresh(self) -> None:
        """Poll now, unless a poll is already running (they never overlap)."""
        if any(w.group == "poll-queues" and w.is_running for w in self.workers):
            return
        if self._timer is not None:
            self._timer.stop()
        self.poll_queues(self._generation)

    def action_cycle_span(self) -> None:
        """``H``: the trends and the telemetry panel over live polls, the last hour, day or week."""
        if self.history_reader is None:
            self.notify("no history here: telemetry does not come from a state store", severity="warning")
            return
        self.span = next_span(self.span)
        self.span_reading, self.span_error = None, None
        self.board.show_span(self.span, {})
        if self.span is not LIVE:
            self.read_span(self._generation, self.span)
        self.queues_changed.publish(None)
        self.side_changed.publish(None)

    # -- profiles ----------------------------------------------------------------------------------------

    def switch_profile(self, name: str) -> None:
        """Reconnect with another profile: fresh board and state; late answers of the old one are dropped."""
        try:
            settings = resolve(Overrides(profile=name), self.environ)
        except TqadminError as exc:
            self.notify(describe_error(exc), title="profile not switched", severity="error")
            return
        self.reopen(settings)
        self.notify(f"switched to {settings.describe()}", title="profile")

    def action_profiles(self) -> None:
        from tqadmin.tui.screens.profiles import ProfilesScreen

        def chosen(name: str | None) -> None:
            if name is not None and name != self.settings.profile:
                self.switch_profile(name)

        self.push_screen(ProfilesScreen(self.settings), chosen)

    def action_help(self) -> None:
        from tqadmin.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    # -- actions ------------------------------------------------------------------------------------------

    def start_action(self, action: str, queue: str | None, filter_expr: str | None = None) -> None:
        """Check the action may run, then open its dry-run → confirm → progress dialog."""
        from tqadmin.tui.screens.action import ActionScreen

        if queue is None:
            self.notify("select a queue first", severity="warning")
            return
        request = actions.ActionRequest(action, queue, filter=filter_expr)
        capabilities = self.capabilities
        if capabilities is None:
            self.notify("not connected yet: wait for the first poll", severity="warning")
            return
        stats = self.board.stats.get(queue)
        reason = actions.refusal(request, self.settings, capabilities, stats.read_only if stats else None)
        if reason is not None:
            self.notify(reason, title="not allowed", severity="warning")
            return
        self.push_screen(ActionScreen(request, default_target(request)))

    def start_pause(self, queue: str | None) -> None:
        """``p``: the pause dialog of ``queue``, unless the profile or the queue refuses it."""
        from tqadmin.tui.screens.pause import PauseScreen

        if queue is None:
            self.notify("select a queue first", severity="warning")
            return
        try:
            gate.check_profile(self.settings, "pause")
        except TqadminError as refused:
            self.notify(str(refused), title="not allowed", severity="warning")
            return
        stats = self.board.stats.get(queue)
        if stats is not None and stats.read_only:
            said = f"pause is disabled for {queue}: it is {pausing.foreign_reason(queue, stats.read_only)}"
            self.notify(clean(said), title="not allowed", severity="warning")
            return
        self.push_screen(PauseScreen(queue, self.pauses[1], self.pauses[0]))


def default_target(request: actions.ActionRequest) -> str:
    """Export goes to a file named after the queue; a move has no sensible default."""
    if request.action == "export":
        return str(Path.cwd() / f"{request.source}.jsonl")
    return ""
