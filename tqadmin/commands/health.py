"""`tqadmin health`: each queue's verdict and the wedged workers, for a cron job or a Kubernetes probe.

A stall only shows over time (work waiting throughout a window, nothing completing), so the command watches
the profile for the window (``--window``, else the profile's ``stall_after_s``, 60 s): it polls the queues and
the workers as ``tqadmin queues`` and ``tqadmin workers`` do, a few times a window, and judges each queue from
what it saw (:mod:`tqadmin.telemetry.verdict`, docs/health.md). It exits 0 when every queue is ok, idle or
paused, 7 (:attr:`~tqadmin.errors.ExitCode.UNHEALTHY`) when one is stalled or degraded or a worker is wedged,
and 5 when a source could not be read (and nothing is unhealthy).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tqadmin.commands import queues as queue_listing
from tqadmin.commands import workers as worker_listing
from tqadmin.commands.context import CommandContext
from tqadmin.errors import ExitCode, NoDatabase, TqadminError, UsageError
from tqadmin.frameworks.progress import foreign_views, serves
from tqadmin.frameworks.wedged import judge_foreign
from tqadmin.masking import mask_text
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.delays import work_queues
from tqadmin.plugin.drain import DrainWindow
from tqadmin.plugin.models import QueueStats
from tqadmin.plugin.workers import WorkerReading
from tqadmin.store.base import WorkerRecord
from tqadmin.store.pauses import Pause, of_queue
from tqadmin.tables import printable, table
from tqadmin.telemetry.verdict import (
    UNHEALTHY,
    VERDICTS,
    Observation,
    QueueVerdict,
    QueueWatch,
    VerdictPolicy,
)
from tqadmin.telemetry.verdict_inputs import observation, own_views
from tqadmin.telemetry.wedged import judge_all

POLLS_PER_WINDOW = 8
"""Readings a window is watched with: a stall is seen at most one poll (an eighth of the window) late."""
LONGEST_POLL_S = 5.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--window",
        dest="window_s",
        type=float,
        default=None,
        metavar="S",
        help="seconds to watch each queue (default: the profile's stall_after_s, 60)",
    )
    parser.add_argument(
        "--filter",
        dest="name_filter",
        metavar="TEXT",
        help="only queues whose name contains TEXT (and the workers serving them)",
    )


@dataclass(slots=True)
class Poll:
    """What one poll read: the queues, tqadmin's workers, other frameworks' workers and what failed."""

    queues: Sequence[QueueStats] = ()
    records: list[WorkerRecord] = field(default_factory=list)
    foreign: WorkerReading = field(default_factory=WorkerReading)
    pauses: list[Pause] | None = None
    pauses_at: float = 0.0
    unreadable: list[str] = field(default_factory=list)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    window_s = float(args.window_s) if args.window_s is not None else ctx.settings.stall_after_s
    if not 0 < window_s < math.inf:
        raise UsageError("--window must be a positive number of seconds")
    watch = QueueWatch(VerdictPolicy(window_s))
    poll_s = min(window_s / POLLS_PER_WINDOW, LONGEST_POLL_S)
    ctx.progress(f"tqadmin: watching the queues for {window_s:g} s")
    try:
        with ctx.admin() as admin:
            poll, verdicts = _watch(ctx, admin, watch, poll_s, args.name_filter)
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
        poll, verdicts = Poll(), {}
    return _report(ctx, poll, verdicts, window_s)


def _watch(
    ctx: CommandContext,
    admin: BrokerAdmin,
    watch: QueueWatch,
    poll_s: float,
    name_filter: str | None,
) -> tuple[Poll, dict[str, QueueVerdict]]:
    """Poll until the window is covered (the last reading a window after the first); the last poll and the
    verdicts it ends with."""
    drains, first_at = DrainWindow(watch.policy.window_s), None
    while True:
        at = time.time()
        poll = read(ctx, admin, drains, name_filter)
        verdicts = watch.observe(observations(poll, at))
        first_at = at if first_at is None else first_at
        left = first_at + watch.policy.window_s - time.time()
        if at - first_at >= watch.policy.window_s:
            return poll, verdicts
        time.sleep(max(min(poll_s, left), 0.0))


def read(
    ctx: CommandContext, admin: BrokerAdmin, drains: DrainWindow, name_filter: str | None = None
) -> Poll:
    """One poll, through the code of ``tqadmin queues`` and ``tqadmin workers``; with ``name_filter``, only
    the queues whose name contains it, and the workers serving them."""
    listing = drains.apply(admin.list_queues())
    listed = work_queues(listing.queues, include_delay_queues=False)
    queues = [q for q in listed if not name_filter or name_filter in q.name]
    failures: list[tuple[str, TqadminError]] = []
    records = worker_listing._own_workers(ctx, failures)
    foreign, unreadable = worker_listing._framework_workers(ctx, failures)
    pauses_at, pauses = queue_listing._pauses(ctx)
    said = [f"{what}: {mask_text(str(exc))}" for what, exc in failures]
    if pauses is None:
        said.append("pauses: the state store could not be read")
    if name_filter:
        names = {q.name for q in queues}
        records = [r for r in records if names.intersection(r.snapshot.queues)]
        foreign = replace(
            foreign, workers=tuple(w for w in foreign.workers if any(serves(w, n) for n in names))
        )
    return Poll(queues, records, foreign, pauses, pauses_at, said + unreadable)


def observations(poll: Poll, at: float) -> list[Observation]:
    """Each queue of ``poll`` as the verdict sees it at ``at``."""
    own = [(r.snapshot, r.age_s, r.alive) for r in poll.records]
    found = []
    for queue in poll.queues:
        workers = own_views(own, queue.name, at) + foreign_views(poll.foreign.workers, queue.name)
        whole = [p for p in of_queue(poll.pauses or (), queue.name) if p.target.task_type is None]
        paused = whole[0].describe(poll.pauses_at) if whole else None
        found.append(observation(queue, at, workers, paused))
    return found


def _report(ctx: CommandContext, poll: Poll, verdicts: dict[str, QueueVerdict], window_s: float) -> int:
    queues = [_queue_json(q, verdicts.get(q.name), poll) for q in poll.queues]
    queues.sort(key=lambda q: (VERDICTS.index(q["verdict"]), q["name"]))
    workers = _workers_json(ctx, poll)
    document: dict[str, Any] = {
        "window_s": window_s,
        "queues": queues,
        "workers": workers,
        "unreadable": poll.unreadable,
    }
    ctx.emit(document, lambda: describe(queues, workers))
    for what in poll.unreadable:
        ctx.progress(f"tqadmin: warning: not read: {what}")
    if any(q["verdict"] in UNHEALTHY for q in queues) or any(w["wedged"] for w in workers):
        return int(ExitCode.UNHEALTHY)
    return int(ExitCode.PARTIAL if poll.unreadable else ExitCode.OK)


def _queue_json(queue: QueueStats, verdict: QueueVerdict | None, poll: Poll) -> dict[str, Any]:
    verdict = verdict or QueueVerdict("unknown", "not seen in the window")
    reason = verdict.reason
    types = [p for p in of_queue(poll.pauses or (), queue.name) if p.target.task_type is not None]
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


def _workers_json(ctx: CommandContext, poll: Poll) -> list[dict[str, Any]]:
    """Every worker as ``tqadmin workers --json`` lists it, with its wedged verdict."""
    policy, now = ctx.settings.wedged, time.time()
    verdicts = judge_all([(r.snapshot, r.age_s, r.alive) for r in poll.records], policy)
    own = [worker_listing.own_worker(r, v) for r, v in zip(poll.records, verdicts, strict=True)]
    tasks = poll.foreign.tasks
    return own + [
        worker_listing.foreign_json(w, judge_foreign(w, policy, now, tasks.get(w.framework)))
        for w in poll.foreign.workers
    ]


def describe(queues: list[dict[str, Any]], workers: list[dict[str, Any]]) -> str:
    rows = [(q["name"], q["verdict"], q["reason"]) for q in queues]
    lines = [table(("QUEUE", "VERDICT", "WHY"), rows) if rows else "no queues"]
    lines += [printable(f"wedged worker {w['name']}: {w['wedged_reason']}") for w in workers if w["wedged"]]
    bad = [f"{q['name']} {q['verdict']}" for q in queues if q["verdict"] in UNHEALTHY]
    wedged = sum(1 for w in workers if w["wedged"])
    if bad or wedged:
        lines.append(f"unhealthy: {', '.join(bad + [f'{wedged} wedged worker(s)'] * bool(wedged))}")
    else:
        lines.append("healthy")
    return "\n".join(lines)
