"""The telemetry panel: throughput, failure rate, latency percentiles per task type, and histograms."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from tqadmin.alerting.conditions import failure_rate_alert
from tqadmin.config import Thresholds
from tqadmin.tui.model import human_duration
from tqadmin.tui.text import clean
from tqadmin.tui.views import Latency, TaskTypeView, TelemetryView


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f}ms"
    return f"{value:.1f}s" if value < 60 else human_duration(value)


SEPARATOR = "  │  "
DEFAULT_THRESHOLDS = Thresholds()
HEADERS = ("task type", "done", "failed", "wait p50", "wait p95", "wait p99", "run p50", "run p95", "run p99")


def summary_text(
    view: TelemetryView | None, error: str | None, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> Text:
    if error is not None:
        return Text(f"telemetry unavailable: {clean(error)}", style="red", end="")
    if view is None or not view.task_types:
        return Text("no workers reporting", style="dim italic", end="")
    alive = sum(1 for w in view.workers if w.alive)
    dead = len(view.workers) - alive
    text = Text(end="")
    text.append("throughput ")
    text.append(f"{view.throughput:.1f} jobs/s", style="bold")
    text.append(SEPARATOR, style="dim")
    text.append("failure rate ")
    limit = thresholds.failure_rate
    failing = limit is not None and view.failure_rate >= limit
    text.append(f"{view.failure_rate:.1%}", style="bold red" if failing else "bold green")
    text.append(SEPARATOR, style="dim")
    text.append("workers ")
    text.append(f"{alive} live", style="bold")
    if dead:
        text.append(", ")
        text.append(f"{dead} dead", style="bold red")
    text.append(SEPARATOR, style="dim")
    text.append(f"over the last {human_duration(view.window_s)}", style="dim")
    return text


def ran(task_type: TaskTypeView) -> bool:
    """Whether any run of the task type was recorded. One that never ran (``(malformed)``: bodies with no
    task type, dead-lettered before any run) has no counts and no latencies, so its row would be all dashes
    and zeros: it is left out of the table, and the dead-letters screen counts those messages under their
    reason."""
    return bool(task_type.done or task_type.failed or task_type.wait.buckets or task_type.run.buckets)


def percentiles_table(view: TelemetryView | None, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Table:
    """Done, failed and the latency percentiles of each task type that ran in the window; a task type
    failing at the profile's failure-rate threshold or more is red, as its alert rule fires."""
    table = Table(box=None, expand=True, padding=(0, 1), pad_edge=False, header_style="bold")
    rows = list(filter(ran, view.task_types if view else ()))
    frameworks = any(t.framework != "tqadmin" for t in rows)  # the column only where there is a choice
    headers = (HEADERS[0], "framework", *HEADERS[1:]) if frameworks else HEADERS
    for header in headers:
        left = header in ("task type", "framework")
        table.add_column(header, justify="left" if left else "right", no_wrap=True)
    for t in rows:
        failed = Text(str(t.failed), style="red" if t.failed else "", justify="right")
        times = [seconds(v) for v in (t.wait.p50, t.wait.p95, t.wait.p99, t.run.p50, t.run.p95, t.run.p99)]
        alarm = failure_rate_alert(t.failed, t.done + t.failed, thresholds)
        named = [Text(clean(t.name), style="bold red" if alarm else "")]
        if frameworks:
            named.append(Text(clean(t.framework), style="dim" if t.framework == "tqadmin" else ""))
        table.add_row(*named, str(t.done), failed, *times)
    return table


class LatencyChart(PlotextPlot):
    """Bucket counts of one latency kind (``wait`` or ``run``), one bar series per task type."""

    def __init__(self, kind: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.kind = kind

    def show(self, view: TelemetryView | None) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(f"{self.kind} time")
        types = view.task_types if view else ()
        series = [(t.name, getattr(t, self.kind)) for t in types]
        series = [(name, latency) for name, latency in series if latency.buckets]
        if series:
            bounds = [bound for bound, _ in series[0][1].buckets]
            positions = [float(i) for i in range(len(bounds))]
            plt.multiple_bar(
                positions,
                [_counts(latency) for _, latency in series],
                labels=[clean(n) for n, _ in series],  # type: ignore[call-arg] # stub says label
            )
            # Explicit ticks: left to itself plotext drops crowded labels differently from run to run.
            plt.xticks(positions[::3], [f"≤{seconds(b)}" for b in bounds[::3]])
        self.refresh()


def _counts(latency: Latency) -> list[int]:
    return [count for _, count in latency.buckets]


class TelemetryPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(summary_text(None, None), id="telemetry-summary")
        yield Static(percentiles_table(None), id="telemetry-table")
        with Horizontal(id="histograms"):
            yield LatencyChart("wait", id="wait-histogram")
            yield LatencyChart("run", id="run-histogram")

    def show(
        self, view: TelemetryView | None, error: str | None, thresholds: Thresholds = DEFAULT_THRESHOLDS
    ) -> None:
        """With no task types reporting, only the one-line summary shows: empty axes would read as zero."""
        reporting = view is not None and bool(view.task_types)
        self.set_class(not reporting, "idle")
        self.query_one("#telemetry-summary", Static).update(summary_text(view, error, thresholds))
        self.query_one("#telemetry-table", Static).update(percentiles_table(view, thresholds))
        for histogram in self.query(LatencyChart):
            histogram.show(view)
