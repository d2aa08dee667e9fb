"""`tqadmin health`: each queue's verdict and the wedged workers, for a cron job or a Kubernetes probe.

A stall only shows over time (work waiting throughout a window, nothing completing), so the command judges
each queue over the window (``--window``, else the profile's ``stall_after_s``, 60 s): from the profile's
recorded history when it covers the window, otherwise by watching for the window, polling the queues and
the workers a few times a window (:mod:`tqadmin.commands.health_reading`, docs/health.md). It exits 0 when
every queue is ok, idle or paused, 7 (:attr:`~tqadmin.errors.ExitCode.UNHEALTHY`) when one is stalled or
degraded or a worker is wedged, and 5 when a source could not be read (and nothing is unhealthy).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from typing import Any

from tqadmin.commands import workers as worker_listing
from tqadmin.commands.context import CommandContext
from tqadmin.commands.health_reading import Poll, from_history, observations, read
from tqadmin.errors import ExitCode, NoDatabase, UsageError
from tqadmin.frameworks.wedged import judge_foreign
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.drain import DrainWindow
from tqadmin.plugin.models import QueueStats
from tqadmin.store.pauses import of_queue
from tqadmin.tables import printable, table
from tqadmin.telemetry.verdict import UNHEALTHY, VERDICTS, QueueVerdict, QueueWatch, VerdictPolicy
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
    try:
        with ctx.admin() as admin:
            poll, verdicts = Judging(ctx, admin, VerdictPolicy(window_s), args.name_filter).verdicts()
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
        poll, verdicts = Poll(), {}
    return _report(ctx, poll, verdicts, window_s)


@dataclass(slots=True)
class Judging:
    """One run's judging: from the history when it covers the window, else by watching the window."""

    ctx: CommandContext
    admin: BrokerAdmin
    policy: VerdictPolicy
    name_filter: str | None

    def verdicts(self) -> tuple[Poll, dict[str, QueueVerdict]]:
        drains = DrainWindow(self.policy.window_s)
        first_at = time.time()
        poll = read(self.ctx, self.admin, drains, self.name_filter)
        known = from_history(self.ctx, poll, first_at, self.policy)
        if known is not None:
            return poll, known
        window_s = self.policy.window_s
        self.ctx.progress(
            f"tqadmin: no recorded history covers the window: watching the queues for {window_s:g} s"
        )
        watch = QueueWatch(self.policy)
        verdicts = watch.observe(observations(poll, first_at))
        poll_s = min(window_s / POLLS_PER_WINDOW, LONGEST_POLL_S)
        while (at := time.time()) - first_at < window_s:
            time.sleep(max(min(poll_s, first_at + window_s - at), 0.0))
            at = time.time()
            poll = read(self.ctx, self.admin, drains, self.name_filter)
            verdicts = watch.observe(observations(poll, at))
        return poll, verdicts


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
