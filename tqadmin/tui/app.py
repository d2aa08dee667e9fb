"""The dashboard: one app, background polls that never overlap, and screens that read what they publish.

Polls run in thread workers (blocking drivers must never freeze the UI) and post their outcome back as
messages; the next poll is scheduled only when the previous one has finished, so a slow broker slows the
poll rate instead of piling up requests. After a failure the last good data stays on screen, marked stale,
and the poll is retried after one refresh, then every 1.5 refreshes (at most once a second), so the board
shows the broker back within two refreshes of its return (:func:`tqadmin.backoff.poll_retry_delay`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.signal import Signal
from textual.timer import Timer

from tqadmin.admin import gate, pausing
from tqadmin.backoff import poll_retry_delay
from tqadmin.config import Overrides, Settings, resolve
from tqadmin.errors import ConnectError, NoDatabase, TqadminError
from tqadmin.logs import masked_traceback
from tqadmin.masking import mask_url
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.delays import work_queues
from tqadmin.plugin.drain import DrainWindow
from tqadmin.plugin.models import QueueListing
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.connect import connect_admin, describe_error
from tqadmin.reading.deadline import PollDeadline
from tqadmin.reading.recording import (
    LIVE,
    SPAN_REREAD_S,
    Depths,
    HistoryReader,
    HistoryRecorder,
    Span,
    SpanReading,
    next_span,
    recorder_for,
)
from tqadmin.store.pauses import Pause
from tqadmin.tui import actions
from tqadmin.tui.events import PollFailed, QueuesPolled, SidePolled, SpanRead
from tqadmin.tui.model import QueueBoard
from tqadmin.tui.screens.cron import CronScreen
from tqadmin.tui.screens.dead_letters import DeadLettersScreen
from tqadmin.tui.screens.overview import OverviewScreen
from tqadmin.tui.screens.workers import WorkersScreen
from tqadmin.tui.sources import (
    WINDOW_S,
    FrameworkTasks,
    StoreCron,
    StorePauses,
    StoreTelemetry,
    framework_workers,
    span_view,
)
from tqadmin.tui.state import PollState
from tqadmin.tui.text import clean
from tqadmin.tui.views import CronSource, CronView, TaskTypeView, TelemetrySource, TelemetryView
from tqadmin.tui.widgets.queue_table import TREND_WIDTH

AdminFactory = Callable[[Settings], BrokerAdmin]

SPAN_QUEUES = 500
"""Queues whose history a span read fetches, the deepest first: the rows an on-call engineer looks at."""


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


class TqadminApp(App[None]):
    """``TqadminApp()`` reads the environment and config file like the CLI; tests inject fakes.

    With telemetry from the store, history is read from (and, unless read-only, written to) the same store;
    ``history`` is a reader of the caller's for an app whose telemetry is its own (a seeded screen).
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
    ) -> None:
        super().__init__()
        self.environ = environ
        self.settings = settings or resolve(Overrides(profile=profile), environ)
        self.admin_factory = admin_factory or connect_admin
        self._from_store = (telemetry == "store", cron == "store")
        self.telemetry_source: TelemetrySource | None = None if telemetry == "store" else telemetry
        self.cron_source: CronSource | None = None if cron == "store" else cron
        self.pause_source: StorePauses | None = None  # with telemetry from the store: its pauses
        self.pauses: tuple[float, list[Pause]] = (0.0, [])  # the store's clock when read, the pauses
        self.pauses_error: str | None = None
        self.clock = clock
        self.recorder: HistoryRecorder | None = None
        self.history_reader: HistoryReader | None = None
        self._given_history = history
        self._store_lock = threading.Lock()  # see _close_store_sources
        self._open_store_sources()
        self.refresh_s = refresh_s
        self.span: Span = LIVE
        self.span_reading: SpanReading | None = None
        self.span_error: str | None = None
        self._span_read_at = float("-inf")
        self.board = QueueBoard()
        self.drain = DrainWindow(clock=clock)
        self.poll_state = self._fresh_state()
        self.telemetry: TelemetryView | None = None
        self.telemetry_error: str | None = None
        self.cron: CronView | None = None
        self.cron_error: str | None = None
        self.capabilities: Capabilities | None = None
        self.foreign_workers: WorkerReading | None = None
        self._framework_windows = FrameworkTasks(WINDOW_S)
        self.framework_tasks: tuple[TaskTypeView, ...] = ()  # other frameworks' last minute, from events
        self.foreign_workers_error: str | None = None
        self.queues_changed: Signal[None] = Signal(self, "queues-changed")
        self.side_changed: Signal[None] = Signal(self, "side-changed")
        self._admin: BrokerAdmin | None = None
        self._generation = 0
        self._timer: Timer | None = None
        self.deadline = PollDeadline(self.settings.timeout_s)  # the queues poll's: stale while it hangs

    def _open_store_sources(self) -> None:
        """Telemetry, cron and history from the configured state store, unless the caller gave its own
        telemetry (or None): then there is no history either. A read-only profile records nothing."""
        self._close_store_sources()
        s = self.settings
        if self._from_store[0]:
            self.telemetry_source = StoreTelemetry(
                s.store_url, s.timeout_s, fresh=s.not_created_yet, wedge_policy=s.wedged
            )
            self.pause_source = StorePauses(s.store_url, s.timeout_s, fresh=s.not_created_yet)
            self.recorder = recorder_for(s, self.clock)
            self.history_reader = HistoryReader.of(s, self.clock)
        else:
            self.history_reader = self._given_history
        if self._from_store[1]:
            self.cron_source = StoreCron(s.store_url, s.timeout_s, fresh=s.not_created_yet)

    def _close_store_sources(self) -> None:
        """Close the store's sources once no poll thread uses them: a connection closed under a running
        read crashes the SQLite driver. The UI never waits for that (a poll may hang on a store that is
        down until its timeout): a thread takes the lock and closes them."""
        sources = [
            source
            for source in (
                self.telemetry_source,
                self.cron_source,
                self.recorder,
                self.history_reader,
                self.pause_source,
            )
            if isinstance(source, StoreTelemetry | StoreCron | HistoryRecorder | HistoryReader | StorePauses)
        ]
        self.recorder = self.history_reader = None
        if not sources:
            return

        def close() -> None:
            with self._store_lock:
                for source in sources:
                    source.close()

        threading.Thread(target=close, name="tqadmin-close-store", daemon=True).start()

    def _fresh_state(self) -> PollState:
        s = self.settings
        target = f"{s.profile or 'default'} · {mask_url(s.broker_url)}"
        return PollState(target=target, read_only=s.read_only, production=s.production)

    def on_mount(self) -> None:
        self.start_polling()
        self.set_interval(1.0, self._mark_overdue)

    def _mark_overdue(self) -> None:
        """Stale as soon as the queues poll under way is past its deadline, without waiting for its end."""
        marked = self.poll_state.overdue(self.deadline)
        if marked is not self.poll_state:
            self.poll_state = marked
            self.queues_changed.publish(None)

    def _handle_exception(self, error: Exception) -> None:
        """Crash as Textual does (exit code 1, the report on stderr), with the report masked."""
        crash = MaskedCrash(error)
        crash.__cause__ = error  # for a test's traceback; the report printed is ``crash.text``
        super()._handle_exception(crash)

    # -- polling ---------------------------------------------------------------------------------------

    def start_polling(self) -> None:
        self.poll_queues(self._generation)
        self.poll_side(self._generation)

    def admin(self) -> BrokerAdmin:
        """The poller's admin connection, made on first use inside the poll thread."""
        if self._admin is None:
            self._admin = self.admin_factory(self.settings)
        return self._admin

    @contextlib.contextmanager
    def borrowed_admin(self) -> Iterator[BrokerAdmin]:
        """A connection for one background job (one per thread, as pika wants), closed when it is done."""
        admin = self.admin_factory(self.settings)
        try:
            yield admin
        finally:
            if admin is not self._admin:
                admin.close()

    def _drop_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(Exception):  # a broken connection may fail to close; dropped anyway
                admin.close()

    @work(thread=True, exclusive=True, exit_on_error=False, group="poll-queues")
    def poll_queues(self, generation: int) -> None:
        self.deadline.started()
        try:
            admin = self.admin()
            listing = self.drain.apply(admin.list_queues())
            self.capabilities = type(admin).capabilities
            workers, workers_error = framework_workers(admin)
        except NoDatabase as missing:  # the next poll looks again, and finds the file once it exists
            note = self.settings.not_created_yet(missing)
            if note is None:
                self.post_message(PollFailed(generation, describe_error(missing)))
            else:
                self.post_message(QueuesPolled(generation, QueueListing(()), note))
        except Exception as exc:
            if isinstance(exc, ConnectError) or not isinstance(exc, TqadminError):
                self._drop_admin()
            self.post_message(PollFailed(generation, describe_error(exc)))
        else:
            recorder = self.recorder
            if recorder is not None:
                with self._store_lock:
                    recorder.record_queues(tuple(work_queues(listing.queues)))
            self.post_message(QueuesPolled(generation, listing, None, workers, workers_error))

    @work(thread=True, exclusive=True, exit_on_error=False, group="poll-side")
    def poll_side(self, generation: int) -> None:
        telemetry = cron = None
        telemetry_error = cron_error = None
        source, cron_source, recorder = self.telemetry_source, self.cron_source, self.recorder
        pause_source, pauses, pauses_error = self.pause_source, None, None
        with self._store_lock:
            if source is not None:
                try:
                    telemetry = source.read()
                except Exception as exc:
                    telemetry_error = describe_error(exc)
                else:
                    if recorder is not None and isinstance(source, StoreTelemetry):
                        recorder.record_tasks(source.workers())
            if cron_source is not None:
                try:
                    cron = cron_source.read()
                except Exception as exc:
                    cron_error = describe_error(exc)
            if pause_source is not None:
                try:
                    pauses = pause_source.read()
                except Exception as exc:
                    pauses_error = describe_error(exc)
        self.post_message(
            SidePolled(
                generation,
                telemetry,
                telemetry_error,
                cron,
                cron_error,
                pauses=pauses,
                pauses_error=pauses_error,
            )
        )

    def on_queues_polled(self, event: QueuesPolled) -> None:
        self.deadline.ended()
        if event.generation != self._generation:
            return
        self.board.apply(event.listing)
        self.foreign_workers, self.foreign_workers_error = event.workers, event.workers_error
        self.framework_tasks = self._framework_windows.update(self.clock(), event.workers)
        self.poll_state = self.poll_state.succeeded(self.clock(), event.listing.alarms, event.note)
        self.queues_changed.publish(None)
        self._schedule(self.refresh_s)

    def on_poll_failed(self, event: PollFailed) -> None:
        self.deadline.ended()
        if event.generation != self._generation:
            return
        delay = poll_retry_delay(self.poll_state.failures + 1, self.refresh_s)
        self.poll_state = self.poll_state.failed(event.error, delay)
        self.queues_changed.publish(None)
        self._schedule(delay)

    def on_side_polled(self, event: SidePolled) -> None:
        if event.generation != self._generation:
            return
        self.telemetry, self.telemetry_error = event.telemetry, event.telemetry_error
        self.cron, self.cron_error = event.cron, event.cron_error
        if event.pauses is not None:  # unreadable: the last pauses read still show, with the error
            self.pauses = event.pauses
        self.pauses_error = event.pauses_error
        self.side_changed.publish(None)
        self.set_timer(self.refresh_s, lambda: self.poll_side(event.generation))
        if self.span is not LIVE and self.clock() - self._span_read_at >= SPAN_REREAD_S:
            self.read_span(event.generation, self.span)

    # -- history ---------------------------------------------------------------------------------------

    def shown_telemetry(self) -> TelemetryView | None:
        """The telemetry panel's figures: the workers' live window, or the span's history with the live
        workers."""
        reading = self.span_reading
        if self.span is LIVE or reading is None or reading.span is not self.span:
            if not self.framework_tasks:
                return self.telemetry
            live = self.telemetry or TelemetryView(WINDOW_S)
            return dataclasses.replace(live, task_types=(*live.task_types, *self.framework_tasks))
        return span_view(reading, self.telemetry)

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

    def read_trend(self, queue: str, span: Span, width: int) -> Depths | None:
        """One queue's depth cells over ``span`` (the queue detail's trend), in the caller's thread."""
        reader = self.history_reader
        if reader is None:
            return None
        with self._store_lock:
            return reader.read(span, [queue], width).depths.get(queue, (None,) * width)

    @work(thread=True, exclusive=True, exit_on_error=False, group="read-span")
    def read_span(self, generation: int, span: Span) -> None:
        reader = self.history_reader
        if reader is None:
            return
        self._span_read_at = self.clock()
        deepest = sorted(self.board.stats.values(), key=lambda q: -(q.messages or 0))[:SPAN_QUEUES]
        try:
            with self._store_lock:
                reading = reader.read(span, [q.name for q in deepest], TREND_WIDTH)
        except Exception as exc:
            self.post_message(SpanRead(generation, None, describe_error(exc)))
        else:
            self.post_message(SpanRead(generation, reading, None))

    def on_span_read(self, event: SpanRead) -> None:
        if event.generation != self._generation:
            return
        if event.reading is not None and event.reading.span is not self.span:
            return  # the span changed while it was read
        self.span_error = event.error
        if event.reading is not None:
            self.span_reading = event.reading
            self.board.show_span(self.span, event.reading.depths)
        self.queues_changed.publish(None)
        self.side_changed.publish(None)

    def _schedule(self, delay: float) -> None:
        generation = self._generation
        self._timer = self.set_timer(delay, lambda: self.poll_queues(generation))

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

    # -- profiles ----------------------------------------------------------------------------------------

    def switch_profile(self, name: str) -> None:
        """Reconnect with another profile: fresh board and state; late answers of the old one are dropped."""
        try:
            settings = resolve(Overrides(profile=name), self.environ)
        except TqadminError as exc:
            self.notify(describe_error(exc), title="profile not switched", severity="error")
            return
        if self._timer is not None:
            self._timer.stop()
        self._generation += 1
        self._drop_admin()
        self.settings = settings
        self._open_store_sources()
        self.board = QueueBoard(span=self.span)
        self.drain = DrainWindow(clock=self.clock)
        self.span_reading, self._span_read_at = None, float("-inf")
        self.poll_state = self._fresh_state()
        self.queues_changed.publish(None)
        self.notify(f"switched to {settings.describe()}", title="profile")
        self.start_polling()

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

    def on_unmount(self) -> None:
        self._drop_admin()
        self._close_store_sources()


def default_target(request: actions.ActionRequest) -> str:
    """Export goes to a file named after the queue; a move has no sensible default."""
    if request.action == "export":
        return str(Path.cwd() / f"{request.source}.jsonl")
    return ""
