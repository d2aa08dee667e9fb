"""The dashboard's polls: two background pollers of one read service, and what they leave for the screens.

Polls run in thread workers (blocking drivers must never freeze the UI) and post the reading they got back as
messages; the next poll is scheduled only when the previous one has finished, so a slow broker slows the
poll rate instead of piling up requests. The broker's parts (queues, other frameworks' workers) and the
store's (telemetry, cron, pauses) are read by two pollers of the same
:class:`~tqadmin.reading.reader.ProfileReader`, so a store that hangs never holds the queues back. After a
failure the last good data stays on screen, marked stale, and the poll is retried after one refresh, then
every 1.5 refreshes (at most once a second), so the board shows the broker back within two refreshes of its
return (:func:`tqadmin.connect.backoff.poll_retry_delay`). What is read, and what is recorded in the history,
is the read service's; what is here is when to read, and what the screens show of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping

from textual import work
from textual.app import App
from textual.signal import Signal
from textual.timer import Timer

from tqadmin.config import Settings
from tqadmin.connect.backoff import poll_retry_delay
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.connect import describe_error
from tqadmin.reading.deadline import PollDeadline
from tqadmin.reading.reader import WINDOW_S, Connections, ProfileReader
from tqadmin.reading.reading import Part
from tqadmin.reading.recording import (
    LIVE,
    SPAN_REREAD_S,
    Depths,
    HistoryReader,
    HistoryRecorder,
    Span,
    SpanReading,
)
from tqadmin.reading.verdicts import VerdictJudge, verdicts_of
from tqadmin.show.masking import mask_url
from tqadmin.store.pauses.base import Pause
from tqadmin.telemetry.verdict import QueueVerdict, VerdictPolicy
from tqadmin.telemetry.wedged import Verdict
from tqadmin.tui.events import QueuesPolled, SidePolled, SpanRead
from tqadmin.tui.model import QueueBoard
from tqadmin.tui.sources import FrameworkTasks, side_views, span_view
from tqadmin.tui.state import PollState
from tqadmin.tui.views import CronSource, CronView, TaskTypeView, TelemetrySource, TelemetryView
from tqadmin.tui.widgets.queue_table import TREND_WIDTH

AdminFactory = Callable[[Settings], BrokerAdmin]

BROKER_PARTS = frozenset({Part.QUEUES, Part.FRAMEWORKS})
SPAN_QUEUES = 500
"""Queues whose history a span read fetches, the deepest first: the rows an on-call engineer looks at."""


@dataclasses.dataclass(frozen=True, slots=True)
class Sources:
    """Where the dashboard's panels come from: ``None`` for a part is the profile's store (through the read
    service, which then records the history too), else a source of the caller's; ``read_store`` says which
    store parts the app reads at all (a caller that gives no telemetry gets no pauses and no history)."""

    telemetry: TelemetrySource | None
    cron: CronSource | None
    store_parts: frozenset[Part]
    history: HistoryReader | None = None
    cron_namespace: str = "default"


class PollingApp(App[None]):
    """What the dashboard knows of its profile, kept up to date by its pollers; the screens read it and
    subscribe to ``queues_changed`` and ``side_changed``."""

    def __init__(
        self,
        settings: Settings,
        admin_factory: AdminFactory,
        sources: Sources,
        refresh_s: float,
        clock: Callable[[], float],
    ) -> None:
        super().__init__()
        self.settings = settings
        self.admin_factory = admin_factory
        self.sources = sources
        self.telemetry_source, self.cron_source = sources.telemetry, sources.cron
        self.clock = clock
        self.refresh_s = refresh_s
        self.reader = self._open_reader()
        self.pauses: tuple[float, list[Pause]] = (0.0, [])  # the store's clock when read, the pauses
        self.pauses_error: str | None = None
        self.span: Span = LIVE
        self.span_reading: SpanReading | None = None
        self.span_error: str | None = None
        self._span_read_at = float("-inf")
        self.board = QueueBoard()
        self.poll_state = self._fresh_state()
        self.telemetry: TelemetryView | None = None
        self.telemetry_error: str | None = None
        self.cron: CronView | None = None
        self.cron_error: str | None = None
        self.capabilities: Capabilities | None = None
        self.foreign_workers: WorkerReading | None = None
        self.foreign_verdicts: tuple[Verdict, ...] = ()
        self.verdicts: Mapping[str, QueueVerdict] = {}  # each work queue's, judged by the reader
        self.foreign_workers_error: str | None = None
        self._framework_windows = FrameworkTasks(WINDOW_S)
        self.framework_tasks: tuple[TaskTypeView, ...] = ()  # other frameworks' last minute, from events
        self.queues_changed: Signal[None] = Signal(self, "queues-changed")
        self.side_changed: Signal[None] = Signal(self, "side-changed")
        self._generation = 0
        self._timer: Timer | None = None
        self.deadline = PollDeadline(self.settings.timeout_s)  # the queues poll's: stale while it hangs

    def _open_reader(self) -> ProfileReader:
        settings, sources = self.settings, self.sources
        return ProfileReader(
            settings,
            clock=self.clock,
            connect=Connections(admin=lambda: self.admin_factory(settings)),
            record=Part.WORKERS in sources.store_parts,
            history=sources.history,
            cron_namespace=sources.cron_namespace,
            judges=[VerdictJudge(VerdictPolicy(settings.stall_after_s))],
        )

    @property
    def recorder(self) -> HistoryRecorder | None:
        return self.reader.recorder

    @property
    def history_reader(self) -> HistoryReader | None:
        return self.reader.history

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

    def start_polling(self) -> None:
        self.poll_queues(self._generation)
        self.poll_side(self._generation)

    @contextlib.contextmanager
    def borrowed_admin(self) -> Iterator[BrokerAdmin]:
        """A connection for one background job (one per thread, as pika wants), closed when it is done."""
        admin = self.admin_factory(self.settings)
        try:
            yield admin
        finally:
            if admin is not self.reader.held_admin():
                admin.close()

    def reopen(self, settings: Settings) -> None:
        """Read ``settings``' profile from now on: a fresh reader, board and state; late answers of the old
        one are dropped, and its connections closed once no poll uses them."""
        if self._timer is not None:
            self._timer.stop()
        self._generation += 1
        self._close_reader()
        self.settings = settings
        self.reader = self._open_reader()
        self.board = QueueBoard(span=self.span)
        self.verdicts = {}
        self.span_reading, self._span_read_at = None, float("-inf")
        self.poll_state = self._fresh_state()
        self.queues_changed.publish(None)
        self.start_polling()

    def _close_reader(self) -> None:
        """The UI never waits for a close (a poll may hang on a store that is down until its timeout)."""
        threading.Thread(target=self.reader.close, name="tqadmin-close-reader", daemon=True).start()

    def on_unmount(self) -> None:
        self._close_reader()

    # -- the pollers -----------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="poll-queues")
    def poll_queues(self, generation: int) -> None:
        self.deadline.started()
        self.post_message(QueuesPolled(generation, self.reader.read(BROKER_PARTS)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="poll-side")
    def poll_side(self, generation: int) -> None:
        reading = self.reader.read(self.sources.store_parts)
        self.post_message(
            SidePolled(generation, side_views(reading, self.telemetry_source, self.cron_source))
        )

    def on_queues_polled(self, event: QueuesPolled) -> None:
        self.deadline.ended()
        if event.generation != self._generation:
            return
        reading = event.reading
        failed = reading.unread.get(Part.QUEUES)
        if failed is not None or reading.listing is None:
            delay = poll_retry_delay(self.poll_state.failures + 1, self.refresh_s)
            self.poll_state = self.poll_state.failed(failed.why if failed else "no answer", delay)
            self.queues_changed.publish(None)
            self._schedule(delay)
            return
        self.capabilities = reading.capabilities
        self.board.apply(reading.listing)
        self.verdicts = verdicts_of(reading)
        self.foreign_workers, self.foreign_verdicts = reading.frameworks, reading.framework_verdicts
        unread = reading.unread.get(Part.FRAMEWORKS)
        self.foreign_workers_error = unread.why if unread else None
        self.framework_tasks = self._framework_windows.update(self.clock(), reading.frameworks)
        self.poll_state = self.poll_state.succeeded(self.clock(), reading.listing.alarms, reading.note)
        self.queues_changed.publish(None)
        self._schedule(self.refresh_s)

    def on_side_polled(self, event: SidePolled) -> None:
        if event.generation != self._generation:
            return
        views = event.views
        self.telemetry, self.telemetry_error = views.telemetry, views.telemetry_error
        self.cron, self.cron_error = views.cron, views.cron_error
        if views.pauses is not None:  # unreadable: the last pauses read still show, with the error
            self.pauses = views.pauses
        self.pauses_error = views.pauses_error
        self.side_changed.publish(None)
        self.set_timer(self.refresh_s, lambda: self.poll_side(event.generation))
        if self.span is not LIVE and self.clock() - self._span_read_at >= SPAN_REREAD_S:
            self.read_span(event.generation, self.span)

    def _schedule(self, delay: float) -> None:
        generation = self._generation
        self._timer = self.set_timer(delay, lambda: self.poll_queues(generation))

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

    def read_trend(self, queue: str, span: Span, width: int) -> Depths | None:
        """One queue's depth cells over ``span`` (the queue detail's trend), in the caller's thread."""
        reading = self.reader.read_span(span, [queue], width)
        return None if reading is None else reading.depths.get(queue, (None,) * width)

    @work(thread=True, exclusive=True, exit_on_error=False, group="read-span")
    def read_span(self, generation: int, span: Span) -> None:
        if self.history_reader is None:
            return
        self._span_read_at = self.clock()
        deepest = sorted(self.board.stats.values(), key=lambda q: -(q.messages or 0))[:SPAN_QUEUES]
        try:
            reading = self.reader.read_span(span, [q.name for q in deepest], TREND_WIDTH)
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
