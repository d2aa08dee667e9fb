"""`tqadmin stats`: throughput, failure rate and latency percentiles over a window, merged across workers."""

from __future__ import annotations

import argparse
import time
from typing import Any

from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, NoDatabase, TqadminError, UsageError
from tqadmin.file_access import Access
from tqadmin.masking import mask_text
from tqadmin.store import open_store
from tqadmin.tables import table
from tqadmin.telemetry.snapshot import WorkerHistory
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
    now_s, histories = time.time(), list[WorkerHistory]()
    try:
        store = open_store(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s, access=Access.READ)
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
    else:
        try:
            now_s, histories = store.history(window_s)
        finally:
            store.close()
    stats = window_stats(now_s, window_s, histories)
    document = stats.to_json()
    unreadable: list[str] = []
    frameworks = _framework_tasks(ctx, unreadable)
    if frameworks:
        document["frameworks"] = frameworks
    if unreadable:
        document["unreadable"] = unreadable
    ctx.emit(document, lambda: describe(stats, frameworks))
    for what in unreadable:
        ctx.progress(f"tqadmin: warning: not counted: {what}")
    return int(ExitCode.PARTIAL if unreadable else ExitCode.OK)


def _framework_tasks(ctx: CommandContext, unreadable: list[str]) -> dict[str, Any]:
    """Other frameworks' task figures where the profile listens to their events (``celery_events``): what
    the events said while this command listened (one heartbeat interval), in the same shape as tqadmin's.
    A long-lived reader (the dashboard, the exporter) keeps them; a one-shot command sees a moment."""
    if not ctx.settings.celery_events or not ctx.plugin().capabilities.worker_registries:
        return {}
    try:
        with ctx.admin() as admin:
            reading = admin.framework_workers()
    except TqadminError as exc:
        unreadable.append(f"other frameworks' tasks: {mask_text(str(exc))}")
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
