"""`tqadmin stats`: throughput, failure rate and latency percentiles over a window, merged across workers."""

from __future__ import annotations

import argparse
from typing import Any

from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, UsageError
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.reading import Part
from tqadmin.show.tables import table
from tqadmin.telemetry.window import WindowStats, figures_json, window_stats

DEFAULT_WINDOW_S = 60.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--window",
        dest="window_s",
        type=float,
        default=DEFAULT_WINDOW_S,
        metavar="S",
        help=f"seconds of history to summarise (default {DEFAULT_WINDOW_S:g})",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    window_s = float(args.window_s)
    if window_s <= 0:
        raise UsageError("--window must be a positive number of seconds")
    # Other frameworks' tasks where the profile listens to their events (``celery_events``): what the events
    # said while this command listened (one heartbeat interval). A long-lived reader (the dashboard, the
    # exporter) keeps them; a one-shot command sees a moment.
    parts = {Part.TELEMETRY, *([Part.FRAMEWORKS] if ctx.settings.celery_events else [])}
    reading = ctx.read(parts, needed=Part.TELEMETRY, window_s=window_s)
    stats = reading.telemetry or window_stats(reading.at_s, window_s, [])
    document = stats.to_json()
    unreadable = [
        f"other frameworks' tasks: {u.why}" for p, u in reading.unread.items() if p is Part.FRAMEWORKS
    ]
    frameworks = _framework_tasks(reading.frameworks)
    if frameworks:
        document["frameworks"] = frameworks
    if unreadable:
        document["unreadable"] = unreadable
    ctx.emit(document, lambda: describe(stats, frameworks))
    for what in unreadable:
        ctx.progress(f"tqadmin: warning: not counted: {what}")
    return int(ExitCode.PARTIAL if unreadable else ExitCode.OK)


def _framework_tasks(reading: WorkerReading | None) -> dict[str, Any]:
    """Other frameworks' task figures, in the same shape as tqadmin's."""
    if reading is None:
        return {}
    return {
        framework: {
            "wait_from": reading.wait_from.get(framework),
            "task_types": {name: figures_json(stats) for name, stats in sorted(tasks.items())},
        }
        for framework, tasks in sorted(reading.tasks.items())
    }


def describe(stats: WindowStats, frameworks: dict[str, Any] | None = None) -> str:
    others = "".join(
        f"\n{framework}: {len(figures['task_types'])} task type(s) seen (--json for their figures)"
        for framework, figures in (frameworks or {}).items()
    )
    return _own(stats) + others


def _own(stats: WindowStats) -> str:
    head = (
        f"last {stats.window_s:g} s, {stats.workers} worker(s): {stats.throughput:.2f} done/s, "
        f"failure rate {stats.failure_rate:.1%}"
    )
    if not stats.task_types:
        return head + "\nno job finished in this window"
    rows = []
    for name, figures in sorted(stats.task_types.items()):
        wait, run_ = figures.wait.percentiles(), figures.run.percentiles()
        rows.append(
            [name, figures.done, figures.failed, figures.retried, figures.dead_lettered]
            + [_ms(wait[p]) for p in ("p50", "p95", "p99")]
            + [_ms(run_[p]) for p in ("p50", "p95", "p99")]
        )
    headers = ["task type", "done", "failed", "retried", "dlq"]
    headers += ["wait p50 ms", "p95", "p99", "run p50 ms", "p95", "p99"]
    return head + "\n" + table(headers, rows)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)
