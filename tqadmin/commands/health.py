"""`tqadmin health`: each queue's verdict and the wedged workers, for a cron job or a Kubernetes probe.

A stall only shows over time (work waiting throughout a window, nothing completing), so each queue is judged
over the window (``--window``, else the profile's ``stall_after_s``, 60 s) by the read service's verdict
judge (:mod:`tqadmin.reading.verdicts`, the dashboard's and the exporter's too): from the profile's recorded
history when it covers the window (:mod:`tqadmin.commands.health_reading`), otherwise by watching for the
window, a few readings a window. It exits 0 when every queue is ok, idle or paused, 7
(:attr:`~tqadmin.errors.ExitCode.UNHEALTHY`) when one is stalled or degraded or a worker is wedged, and 5
when a source could not be read (and nothing is unhealthy).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tqadmin.commands import workers as worker_listing
from tqadmin.commands.context import CommandContext
from tqadmin.commands.health_reading import from_history
from tqadmin.errors import ExitCode, UsageError
from tqadmin.frameworks.progress import serves
from tqadmin.plugin.models import QueueStats
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.reader import ProfileReader
from tqadmin.reading.reading import Part, ProfileReading
from tqadmin.reading.verdicts import VerdictJudge, judged_queues, verdicts_of
from tqadmin.show.broker_text import escaped
from tqadmin.show.masking import mask_text
from tqadmin.show.tables import table
from tqadmin.store.pauses.base import Pause, of_queue
from tqadmin.telemetry.verdict import UNHEALTHY, VERDICTS, QueueVerdict, VerdictPolicy

POLLS_PER_WINDOW = 8
"""Readings a window is watched with: a stall is seen at most one poll (an eighth of the window) late."""
LONGEST_POLL_S = 5.0
WATCHED = frozenset({Part.QUEUES, Part.WORKERS, Part.FRAMEWORKS, Part.PAUSES})


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--window",
        dest="window_s",
        type=float,
        default=None,
        metavar="S",
        help="seconds to judge each queue over (default: the profile's stall_after_s, 60)",
    )
    parser.add_argument(
        "--filter",
        dest="name_filter",
        metavar="TEXT",
        help="only queues whose name contains TEXT (and the workers serving them)",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    window_s = float(args.window_s) if args.window_s is not None else ctx.settings.stall_after_s
    if not 0 < window_s < math.inf:
        raise UsageError("--window must be a positive number of seconds")
    policy = VerdictPolicy(window_s)
    reader = ProfileReader(ctx.settings, judges=[VerdictJudge(policy)], drain_window_s=window_s)
    try:
        reading, verdicts = _judged(ctx, reader, policy, args.name_filter)
    finally:
        reader.close()
    if reading.note is not None:
        ctx.progress(reading.note)
    return _report(ctx, reading, verdicts, window_s, args.name_filter)


def _judged(
    ctx: CommandContext, reader: ProfileReader, policy: VerdictPolicy, name_filter: str | None
) -> tuple[ProfileReading, Mapping[str, QueueVerdict]]:
    """The last reading and the verdicts: from the history when it covers the window, else watched."""
    first = reader.read(WATCHED)
    first.raise_for(Part.QUEUES)
    known = from_history(ctx.settings, first, _queues(first, name_filter), policy)
    if known is not None:
        return first, known
    window_s = policy.window_s
    ctx.progress(f"tqadmin: no recorded history covers the window: watching the queues for {window_s:g} s")
    reading, poll_s = first, min(window_s / POLLS_PER_WINDOW, LONGEST_POLL_S)
    while reading.at_s - first.at_s < window_s:
        time.sleep(max(min(poll_s, first.at_s + window_s - time.time()), 0.0))
        reading = reader.read(WATCHED)
        reading.raise_for(Part.QUEUES)
    return reading, verdicts_of(reading)


def _queues(reading: ProfileReading, name_filter: str | None) -> list[QueueStats]:
    listed = judged_queues(reading.listing.queues if reading.listing else ())
    return [q for q in listed if not name_filter or name_filter in q.name]


def _report(
    ctx: CommandContext,
    reading: ProfileReading,
    verdicts: Mapping[str, QueueVerdict],
    window_s: float,
    name_filter: str | None,
) -> int:
    shown = _queues(reading, name_filter)
    standing = reading.pauses.standing if reading.pauses else ()
    queues = [_queue_json(q, verdicts.get(q.name), standing) for q in shown]
    queues.sort(key=lambda q: (VERDICTS.index(q["verdict"]), q["name"]))
    workers = _workers_json(reading, {q.name for q in shown} if name_filter else None)
    foreign = reading.frameworks or WorkerReading()
    unreadable = [f"{part}: {unread.why}" for part, unread in reading.unread.items()]
    unreadable += [mask_text(what) for what in foreign.unreadable]
    document: dict[str, Any] = {
        "window_s": window_s,
        "queues": queues,
        "workers": workers,
        "unreadable": unreadable,
    }
    ctx.emit(document, lambda: describe(queues, workers))
    for what in unreadable:
        ctx.progress(f"tqadmin: warning: not read: {what}")
    if any(q["verdict"] in UNHEALTHY for q in queues) or any(w["wedged"] for w in workers):
        return int(ExitCode.UNHEALTHY)
    return int(ExitCode.PARTIAL if unreadable else ExitCode.OK)


def _queue_json(queue: QueueStats, verdict: QueueVerdict | None, standing: Sequence[Pause]) -> dict[str, Any]:
    verdict = verdict or QueueVerdict("unknown", "not seen in the window")
    reason = verdict.reason
    types = [p for p in of_queue(standing, queue.name) if p.target.task_type is not None]
    if types and verdict.verdict != "paused":
        reason += "; paused task types: " + ", ".join(sorted({p.target.task_type or "" for p in types}))
    return {
        "name": queue.name,
        "verdict": verdict.verdict,
        "reason": reason,
        "ready": queue.ready,
        "unacked": queue.unacked,
        "delayed": queue.delayed,
        "consumers": queue.consumers,
        "ack_rate": queue.ack_rate,
        "oldest_age_s": queue.oldest_age_s,
        "drain_s": queue.drain_s,
        "growing": queue.growing,
        "dlq": queue.dlq,
        "dlq_messages": queue.dlq_messages,
        "dlq_oldest_age_s": queue.dlq_oldest_age_s,
    }


def _workers_json(reading: ProfileReading, names: set[str] | None) -> list[dict[str, Any]]:
    """Every worker as ``tqadmin workers --json`` lists it, with the reader's wedged verdict; with
    ``names``, those serving one of these queues."""
    records = reading.workers or ()
    own = [
        worker_listing.own_worker(r, v)
        for r, v in zip(records, reading.verdicts, strict=True)
        if names is None or names.intersection(r.snapshot.queues)
    ]
    foreign = reading.frameworks or WorkerReading()
    return own + [
        worker_listing.foreign_json(w, v)
        for w, v in zip(foreign.workers, reading.framework_verdicts, strict=True)
        if names is None or any(serves(w, n) for n in names)
    ]


def describe(queues: list[dict[str, Any]], workers: list[dict[str, Any]]) -> str:
    rows = [(q["name"], q["verdict"], q["reason"]) for q in queues]
    lines = [table(("QUEUE", "VERDICT", "WHY"), rows) if rows else "no queues"]
    lines += [escaped(f"wedged worker {w['name']}: {w['wedged_reason']}") for w in workers if w["wedged"]]
    bad = [f"{q['name']} {q['verdict']}" for q in queues if q["verdict"] in UNHEALTHY]
    wedged = sum(1 for w in workers if w["wedged"])
    if bad or wedged:
        lines.append(f"unhealthy: {', '.join(bad + [f'{wedged} wedged worker(s)'] * bool(wedged))}")
    else:
        lines.append("healthy")
    return "\n".join(lines)
