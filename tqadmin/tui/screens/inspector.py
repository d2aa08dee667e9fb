"""One message in full: pretty body, headers, its death history and the last error, all shown literally."""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from tqadmin.frameworks import TQADMIN, UNKNOWN, JobSummary, iso_utc, summarise
from tqadmin.frameworks.decoding import parse_json
from tqadmin.plugin.models import DeathRecord, Message
from tqadmin.tui.screens.base import DashboardScreen
from tqadmin.tui.text import clean, literal
from tqadmin.tui.widgets.banner import Banner

MAX_BODY_CHARS = 20_000


def body_view(message: Message) -> RenderableType:
    """Any JSON body pretty (Celery's is a list), anything else literally, with a note saying why."""
    value = parse_json(message.body)
    if isinstance(value, dict | list):
        try:
            pretty = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, RecursionError):  # keys of mixed types, or nesting deeper than indent can go
            pretty = None
        if pretty is not None:
            text = clean(pretty, one_line=False)
            return Syntax(text[:MAX_BODY_CHARS], "json", theme="ansi_dark", word_wrap=True)
    try:
        raw = message.body.decode("utf-8")
        note = "not a JSON object"
    except UnicodeDecodeError:
        raw = message.body.hex(" ")
        note = "not UTF-8, shown as hex"
    # One Text, not a Group: a Static sizes itself to a Group's first line only.
    shown = Text(f"({note})\n", style="yellow", end="")
    shown.append_text(literal(raw[:MAX_BODY_CHARS], one_line=False))
    return shown


NONE = Text("(none)", style="dim")


def headers_table(headers: dict[str, Any], keep: Any) -> RenderableType:
    keys = [key for key in sorted(headers) if keep(key)]
    if not keys:
        return NONE
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key in keys:
        table.add_row(literal(key), literal(_scalar(headers[key]), one_line=False))
    return table


def death_table(deaths: Sequence[DeathRecord]) -> RenderableType:
    """The times the broker itself dead-lettered the message, newest first, as its plugin reads them; a
    detail column shows only when some record has it."""
    if not deaths:
        return NONE
    extra = list(dict.fromkeys(name for death in deaths for name, _ in death.details))
    table = Table(box=None, padding=(0, 2), header_style="bold")
    for column in ("queue", "reason", "count", *extra, "time"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for death in deaths:
        details = dict(death.details)
        table.add_row(
            literal(death.queue or "-"),
            literal(death.reason or "-"),
            literal("-" if death.count is None else str(death.count)),
            *(literal(details.get(name, "-")) for name in extra),
            literal((death.at or "-").replace("+00:00", "Z")),
        )
    return table


def job_table(summary: JobSummary) -> RenderableType:
    """What another framework records about the job, each fact on its own row; absent facts left out."""
    rows = [
        ("task", summary.task),
        ("id", summary.id),
        ("args", summary.args),
        ("retries", summary.retries),
        ("sent", iso_utc(summary.sent_at)),
        ("sent to", summary.sent_to),
    ]
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for label, value in rows:
        if value is not None:
            table.add_row(label, literal(value))
    return table


def _scalar(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict | list):
        return json.dumps(value, default=str)
    return str(value)


class InspectorScreen(DashboardScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("j", "scroll('down')", "Down", show=False),
        Binding("k", "scroll('up')", "Up", show=False),
        Binding("g", "scroll('home')", "Top", show=False),
        Binding("G", "scroll('end')", "Bottom", show=False),
    ]

    def __init__(
        self,
        queue: str,
        message: Message,
        deaths: Sequence[DeathRecord] = (),
        broker_headers: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.queue = queue
        self.message = message
        self.deaths = tuple(deaths)
        self.broker_headers = broker_headers  # shown as the deaths table, not raw

    def compose(self) -> ComposeResult:
        m = self.message
        headers = dict(m.headers)
        summary = summarise(m)
        foreign = summary.framework not in (TQADMIN, UNKNOWN)
        title = Text("message ", end="")
        title.append(clean(summary.id or "(no id)"), style="bold")
        if foreign:
            title.append(f"  ·  {summary.framework} task ")
            title.append(clean(summary.task or "?"), style="bold")
        title.append("  in queue ")
        title.append(clean(self.queue), style="bold")
        if m.redelivered:
            title.append("  ·  ", style="dim")
            title.append("redelivered", style="yellow")
        yield Banner(id="banner")
        with VerticalScroll(id="inspector"):
            yield Static(title, classes="title")
            yield Static(Text("last error", style="bold underline"), classes="section")
            error = summary.error
            yield Static(literal(error, "bold red", one_line=False) if error else NONE)
            if foreign:
                yield Static(Text(f"{summary.framework} job", style="bold underline"), classes="section")
                yield Static(job_table(summary))
            yield Static(Text("body", style="bold underline"), classes="section")
            yield Static(body_view(m), id="body")
            yield Static(Text("tqadmin history (x-tq-*)", style="bold underline"), classes="section")
            yield Static(headers_table(headers, lambda k: k.startswith("x-tq-")))
            yield Static(Text("dead-lettered by the broker", style="bold underline"), classes="section")
            yield Static(death_table(self.deaths))
            yield Static(Text("other headers", style="bold underline"), classes="section")
            yield Static(
                headers_table(headers, lambda k: not k.startswith("x-tq-") and k not in self.broker_headers)
            )
        yield Footer()

    def action_scroll(self, where: str) -> None:
        view = self.query_one("#inspector", VerticalScroll)
        {"down": view.scroll_down, "up": view.scroll_up, "home": view.scroll_home, "end": view.scroll_end}[
            where
        ]()
