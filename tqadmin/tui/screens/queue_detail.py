"""One queue: its figures, the messages at its head, and what looking at them cost."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from tqadmin.frameworks import summarise
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.kit.delays import delay_queues_of
from tqadmin.plugin.models import HEADER_REASON, Message, QueueStats
from tqadmin.reading.connect import describe_error
from tqadmin.reading.drain import drain_text
from tqadmin.reading.recording import SPAN_REREAD_S, SPANS, Span
from tqadmin.tui.events import MessagesPeeked, PeekFailed, TrendRead
from tqadmin.tui.model import GAP_CELL, human_count, human_duration, human_rate, sparkline
from tqadmin.tui.screens.base import QueueScreen
from tqadmin.tui.text import clean, literal
from tqadmin.tui.widgets.banner import Banner
from tqadmin.tui.widgets.peek_cost import cost_notice

PEEK_COUNT = 20
TREND_CELLS = 60
"""Cells of the queue's depth trend: a minute each over the last hour."""
NOT_AVAILABLE = "n/a"
# The header's figures a broker may be unable to give: (label, QueueStats field).
OPTIONAL_FIGURES = (
    ("consumers", "consumers"),
    ("pub", "publish_rate"),
    ("ack", "ack_rate"),
    ("oldest", "oldest_age_s"),
    ("DLQ oldest", "dlq_oldest_age_s"),
)


def unavailable(stats: QueueStats, capabilities: Capabilities | None) -> dict[str, str]:
    """The header's figures this broker cannot give, by label, with the plugin's reason: shown as "n/a" and
    the reason, never as a raw ``None`` or a blank that reads as "none"."""
    if capabilities is None:
        return {}
    return {
        label: reason
        for label, name in OPTIONAL_FIGURES
        if getattr(stats, name) is None and (reason := capabilities.why_unavailable(name))
    }


def trend_span(shown: Span) -> Span:
    """The span of the queue's trend: the one the overview shows, the last hour while it shows live."""
    return shown if shown.tier is not None else SPANS[1]


def message_row(message: Message) -> tuple[Text, ...]:
    """A job of any framework by its own id and task name (a Celery task id, a Dramatiq actor...)."""
    summary = summarise(message)
    return (
        literal(summary.id or "-"),
        literal(summary.task or "(not a job)"),
        Text("yes", style="yellow") if message.redelivered else Text("no", style="dim"),
        literal(message.headers.get(HEADER_REASON, "")),
        literal(summary.error or "", "red"),
    )


class QueueDetailScreen(QueueScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "peek", "Peek again"),
        Binding("j", "cursor('down')", "Down", show=False),
        Binding("k", "cursor('up')", "Up", show=False),
        *QueueScreen.BINDINGS,
    ]

    def __init__(self, queue: str) -> None:
        super().__init__()
        self.queue = queue
        self._trend_key: tuple[Span, float] | None = None
        self.peeked: tuple[Message, ...] = ()
        self.peek_event: MessagesPeeked | None = None

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        yield Static(id="queue-figures")
        yield Static(id="queue-trend")
        yield Static("peeking…", id="peek-cost")
        table: DataTable[Text] = DataTable(id="messages", cursor_type="row", zebra_stripes=True)
        table.add_columns("job id", "task type", "redelivered", "reason", "last error")
        yield table
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.tq.queues_changed.subscribe(self, self.show_figures)
        self.tq.queues_changed.subscribe(self, self.refresh_trend)
        self.query_one("#queue-trend", Static).display = self.tq.history_reader is not None
        self.show_figures()
        self.refresh_trend()
        self.action_peek()

    def refresh_trend(self, _: None = None) -> None:
        """Read the trend again when the span changed or the last read is older than the finest tier."""
        span = trend_span(self.tq.span)
        now = self.tq.clock()
        if self.tq.history_reader is None or (span, now // SPAN_REREAD_S) == self._trend_key:
            return
        self._trend_key = (span, now // SPAN_REREAD_S)
        self.read_trend(span)

    @work(thread=True, exclusive=True, exit_on_error=False, group="trend")
    def read_trend(self, span: Span) -> None:
        try:
            cells = self.tq.read_trend(self.queue, span, TREND_CELLS)
        except Exception as exc:
            self.post_message(TrendRead(span, None, describe_error(exc)))
        else:
            self.post_message(TrendRead(span, cells, None))

    def on_trend_read(self, event: TrendRead) -> None:
        text = Text(f" depth, {event.span.label}: ", style="dim", end="")
        if event.cells is None:
            text.append(f"history not read: {event.error}", style="red")
        elif all(cell is None for cell in event.cells):
            text.append("nothing recorded (history is written while a dashboard or the exporter polls)")
        else:
            text.append(sparkline(event.cells, TREND_CELLS), style="cyan")
            known = [cell for cell in event.cells if cell is not None]
            text.append(f"  max {human_count(max(known))}  ({GAP_CELL} nothing polled)", style="dim")
        self.query_one("#queue-trend", Static).update(text)

    def show_figures(self, _: None = None) -> None:
        stats = self.tq.board.stats.get(self.queue)
        text = Text(end="")
        text.append(" queue ")
        text.append(clean(self.queue), style="bold")
        if stats is None:
            text.append("  (not in the last listing)", style="dim")
        else:
            missing = unavailable(stats, self.tq.capabilities)

            def shown(label: str, value: str) -> str:
                return NOT_AVAILABLE if label in missing else value

            text.append(
                f"  ready {human_count(stats.ready)}  in flight {human_count(stats.unacked)}"
                f"  total {human_count(stats.messages)}"
                f"  consumers {shown('consumers', human_count(stats.consumers))}"
                f"  pub {shown('pub', human_rate(stats.publish_rate))}"
                f"  ack {shown('ack', human_rate(stats.ack_rate))}"
                f"  oldest {shown('oldest', human_duration(stats.oldest_age_s))}"
            )
            text.append(f"  drain {drain_text(stats, human_duration) or '-'}")
            if stats.dlq:
                text.append(f"  DLQ {clean(stats.dlq)}: {human_count(stats.dlq_messages)}")
                text.append(f", oldest {shown('DLQ oldest', human_duration(stats.dlq_oldest_age_s))}")
            verdict = self.tq.verdicts.get(self.queue)
            if verdict is not None:  # what the overview's verdict column says, and why
                style = "bold red" if verdict.unhealthy else ""
                text.append(f"\n verdict {verdict.verdict}", style=style or "bold")
                text.append(f": {clean(verdict.reason)}" if verdict.reason else "")
            tiers = delay_queues_of(self.tq.board.stats.values(), self.queue)
            if tiers:
                text.append(f"\n retry delay queues ({human_count(stats.delayed)} waiting): ")
                text.append("  ".join(f"{clean(t.name)} {human_count(t.messages)}" for t in tiers))
            if missing:  # the broker's reason, as `tqadmin queues` prints it under its table
                reasons = "; ".join(f"{label}: {clean(reason)}" for label, reason in missing.items())
                text.append(f"\n {NOT_AVAILABLE}: {reasons}", style="dim")
        self.query_one("#queue-figures", Static).update(text)

    def action_peek(self) -> None:
        self.query_one("#peek-cost", Static).update(Text("peeking…", style="dim"))
        self.run_peek()

    @work(thread=True, exclusive=True, exit_on_error=False, group="peek")
    def run_peek(self) -> None:
        try:
            with self.tq.borrowed_admin() as admin:
                result = admin.peek(self.queue, PEEK_COUNT)
                deaths = tuple(admin.deaths(m) for m in result.messages)
                self.post_message(MessagesPeeked(result, admin.capabilities, deaths))
        except Exception as exc:
            self.post_message(PeekFailed(self.queue, describe_error(exc)))

    def on_messages_peeked(self, event: MessagesPeeked) -> None:
        self.peek_event = event
        self.peeked = event.result.messages
        table = self.query_one("#messages", DataTable)
        table.clear()
        for index, message in enumerate(self.peeked):
            table.add_row(*message_row(message), key=str(index))
        cost = Text(
            f" {len(self.peeked)} messages peeked (only on opening and on r, never on a timer).\n", end=""
        )
        cost.append_text(cost_notice(event.result, event.capabilities))
        self.query_one("#peek-cost", Static).update(cost)

    def on_peek_failed(self, event: PeekFailed) -> None:
        self.query_one("#peek-cost", Static).update(Text(f" peek failed: {event.error}", style="bold red"))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        from tqadmin.tui.screens.inspector import InspectorScreen

        if event.row_key.value is not None and self.peek_event is not None:
            index = int(event.row_key.value)
            deaths = self.peek_event.deaths[index] if index < len(self.peek_event.deaths) else ()
            inspector = InspectorScreen(
                self.queue, self.peeked[index], deaths, self.peek_event.broker_headers
            )
            self.app.push_screen(inspector)

    def action_cursor(self, direction: str) -> None:
        table = self.query_one("#messages", DataTable)
        table.action_cursor_down() if direction == "down" else table.action_cursor_up()

    def selected_queue(self) -> str | None:
        return self.queue
