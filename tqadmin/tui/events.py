"""Messages the background polls post to the app, named as what happened (Textual convention)."""

from __future__ import annotations

from textual.message import Message

from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, DeathRecord, PeekResult
from tqadmin.plugin.models import Message as PeekedMessage
from tqadmin.reading.reading import ProfileReading
from tqadmin.reading.recording import Depths, Span, SpanReading
from tqadmin.tui.sources import SideViews


class QueuesPolled(Message):
    """One reading of the broker's parts: its listing, and the other frameworks' workers its registries hold;
    a part that could not be read is unread in it, with why."""

    def __init__(self, generation: int, reading: ProfileReading) -> None:
        super().__init__()
        self.generation = generation
        self.reading = reading


class SidePolled(Message):
    """The store's panels (telemetry, cron, pauses) read together; each ``None`` with its error when
    unreadable."""

    def __init__(self, generation: int, views: SideViews) -> None:
        super().__init__()
        self.generation = generation
        self.views = views


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
