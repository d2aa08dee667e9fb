"""Messages the background polls post to the app, named as what happened (Textual convention)."""

from __future__ import annotations

from textual.message import Message

from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, DeathRecord, PeekResult, QueueListing
from tqadmin.plugin.models import Message as PeekedMessage
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.recording import Depths, Span, SpanReading
from tqadmin.store.pauses import Pause
from tqadmin.tui.views import CronView, TelemetryView


class QueuesPolled(Message):
    """One poll of the broker: its queues, and the other frameworks' workers its registries hold (``None``
    where the plugin reads none, or with ``workers_error`` when they could not be read)."""

    def __init__(
        self,
        generation: int,
        listing: QueueListing,
        note: str | None = None,
        workers: WorkerReading | None = None,
        workers_error: str | None = None,
    ) -> None:
        super().__init__()
        self.generation = generation
        self.listing = listing
        self.note = note
        self.workers = workers
        self.workers_error = workers_error


class PollFailed(Message):
    def __init__(self, generation: int, error: str) -> None:
        super().__init__()
        self.generation = generation
        self.error = error


class SidePolled(Message):
    """Telemetry and cron state read together; each part is ``None`` with its error when unreadable."""

    def __init__(
        self,
        generation: int,
        telemetry: TelemetryView | None,
        telemetry_error: str | None,
        cron: CronView | None,
        cron_error: str | None,
        *,
        pauses: tuple[float, list[Pause]] | None = None,
        pauses_error: str | None = None,
    ) -> None:
        super().__init__()
        self.generation = generation
        self.pauses = pauses  # the store's clock and the pauses standing then; None: not read
        self.pauses_error = pauses_error
        self.telemetry = telemetry
        self.telemetry_error = telemetry_error
        self.cron = cron
        self.cron_error = cron_error


class SpanRead(Message):
    """The stored history of a span, read for the trends and the telemetry panel (``None`` with its error
    when the store could not be read)."""

    def __init__(self, generation: int, reading: SpanReading | None, error: str | None) -> None:
        super().__init__()
        self.generation = generation
        self.reading = reading
        self.error = error


class TrendRead(Message):
    """A queue's depth cells over a span for its detail screen (``None`` with the error when unread)."""

    def __init__(self, span: Span, cells: Depths | None, error: str | None) -> None:
        super().__init__()
        self.span = span
        self.cells = cells
        self.error = error


class MessagesPeeked(Message):
    """A peek's result, with what the broker recorded of each message's deaths (read in the poll thread) and
    what the plugin declares (what a look costs, which headers it writes itself)."""

    def __init__(
        self,
        result: PeekResult,
        capabilities: Capabilities,
        deaths: tuple[tuple[DeathRecord, ...], ...] = (),
    ) -> None:
        super().__init__()
        self.result = result
        self.capabilities = capabilities
        self.deaths = deaths
        self.broker_headers = capabilities.broker_headers
        self._deaths_by_message = {id(m): d for m, d in zip(result.messages, deaths, strict=False)}

    def deaths_of(self, message: PeekedMessage) -> tuple[DeathRecord, ...]:
        """The broker's record of the deaths of one of the peeked messages (a grouping's ``Deaths``)."""
        return self._deaths_by_message.get(id(message), ())


class PeekFailed(Message):
    def __init__(self, queue: str, error: str) -> None:
        super().__init__()
        self.queue = queue
        self.error = error


class ActionPlanned(Message):
    """A dry run finished: ``report.matched`` is how many messages the action would touch."""

    def __init__(self, report: ActionReport) -> None:
        super().__init__()
        self.report = report


class ActionProgressed(Message):
    def __init__(self, done: int, total: int | None) -> None:
        super().__init__()
        self.done = done
        self.total = total


class ActionFinished(Message):
    def __init__(self, report: ActionReport | None, error: str | None) -> None:
        super().__init__()
        self.report = report
        self.error = error
