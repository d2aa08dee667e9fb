"""Whether a live worker is wedged: alive by its heartbeat, yet making no progress.

A heartbeat is written by a thread of its own, so it stays fresh while every job thread is stuck in a call
that never returns, or while the intake loop (the consumer's I/O loop) is stuck in its driver. The worker's
progress (:mod:`tqadmin.telemetry.progress`) tells those apart, and :func:`judge` rules, by the profile's
:class:`WedgePolicy` (docs/worker.md, "Wedged workers"):

- every job thread is busy, each past its task type's usual run time by ``factor`` (the usual time: that
  task type's p95 run time over the live workers' telemetry; never under ``min_s``; ``no_history_s`` when
  no run of that task type ever finished), or
- the intake loop has not turned for ``intake_s``.

Ages are measured on the worker's own clock up to its last heartbeat, plus the heartbeat's age by the store's
clock, so the two machines' clocks need not agree. A worker that reports no progress (an older version) is
not judged: ``wedged`` is ``None`` and the reason says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tqadmin.show.tables import human_duration
from tqadmin.telemetry.counters import StatsKey, TaskStats, by_task_type, merge_stats
from tqadmin.telemetry.progress import BusyThread
from tqadmin.telemetry.snapshot import WorkerSnapshot

USUAL_QUANTILE = 0.95


@dataclass(frozen=True, slots=True)
class WedgePolicy:
    """How long is too long; the defaults are documented in docs/worker.md and docs/config.md."""

    factor: float = 10.0  # a run past factor x its task type's p95 run time counts as stuck
    min_s: float = 60.0  # ... but never one shorter than this
    no_history_s: float = 600.0  # the limit for a task type no run of which has finished yet
    intake_s: float = 60.0  # the intake loop not turned for this long: wedged

    def run_limit_s(self, usual_s: float | None) -> float:
        """How long a run of a task type whose usual run time is ``usual_s`` may last before it counts."""
        if usual_s is None:
            return self.no_history_s
        return max(self.factor * usual_s, self.min_s)

    def limit_text(self, usual_s: float | None, usual_name: str = "p95") -> str:
        """The limit and where it comes from, for a reason (``limit 1m00s = max(10 x p95 0.4s, 1m00s)``)."""
        limit = human_duration(self.run_limit_s(usual_s))
        if usual_s is None:
            return f"limit {limit}: no usual run time known"
        floor = human_duration(self.min_s)
        return f"limit {limit} = max({self.factor:g} x {usual_name} {usual_s:.3g}s, {floor})"


@dataclass(frozen=True, slots=True)
class Verdict:
    """``wedged``: ``True``, ``False``, or ``None`` when nothing the worker exposes can tell (why in
    ``reason``); a wedged worker's ``reason`` says what is stuck and for how long, ``short`` the same in a
    table cell's room (``2/2 threads stuck 14m03s, limit 1m00s``)."""

    wedged: bool | None
    reason: str | None = None
    short: str | None = None


NOT_WEDGED = Verdict(False)


def usual_run_times(tables: Iterable[Mapping[StatsKey, TaskStats]]) -> dict[str, float]:
    """Each task type's usual run time (p95) over the workers' telemetry tables, where any run finished."""
    return usual_of(by_task_type(merge_stats(tables)))


def usual_of(tasks: Mapping[str, TaskStats]) -> dict[str, float]:
    """Each task's usual run time (p95) of ``tasks`` by name, where any run finished."""
    usual: dict[str, float] = {}
    for task_type, stats in tasks.items():
        p95 = stats.run.quantile(USUAL_QUANTILE)
        if p95 is not None:
            usual[task_type] = p95
    return usual


def judge(snapshot: WorkerSnapshot, age_s: float, usual: Mapping[str, float], policy: WedgePolicy) -> Verdict:
    """The verdict on a live worker whose last heartbeat is ``snapshot``, written ``age_s`` ago."""
    progress = snapshot.progress
    if progress is None:
        return Verdict(None, "this worker reports no progress (a tqadmin worker older than this one)")
    now = snapshot.heartbeat_at + max(age_s, 0.0)
    reasons: list[str] = []
    shorts: list[str] = []
    if progress.intake_turn_at is not None and now - progress.intake_turn_at > policy.intake_s:
        idle, limit = human_duration(now - progress.intake_turn_at), human_duration(policy.intake_s)
        reasons.append(f"intake loop not turned for {idle} (limit {limit})")
        shorts.append(f"intake stuck {idle}, limit {limit}")
    threads = stuck(progress.threads, progress.busy, now, usual, policy)
    if threads is not None:
        reasons.append(threads[0])
        shorts.append(threads[1])
    if not reasons:
        return NOT_WEDGED
    done = progress.last_completion_at
    last = "no run ended yet" if done is None else f"last run ended {human_duration(now - done)} ago"
    return Verdict(True, f"{'; '.join(reasons)}; {last}", "; ".join(shorts))


def stuck(
    threads: int,
    busy: Iterable[BusyThread],
    now: float,
    usual: Mapping[str, float],
    policy: WedgePolicy,
    *,
    what: str = "job threads",
    usual_name: str = "p95",
) -> tuple[str, str] | None:
    """When all ``threads`` are ``busy``, each past its task type's limit: why (``all 2 job threads stuck;
    the latest: ...``) and the same in short (``2/2 threads stuck 14m03s+, limit 1m00s``); else ``None``.
    The latest run is named: it proves the others. Every framework's workers are judged by this rule."""
    runs = sorted(busy, key=lambda b: b.since, reverse=True)  # the latest start first
    past = [b for b in runs if now - b.since > policy.run_limit_s(usual.get(b.task_type))]
    if threads <= 0 or len(runs) < threads or len(past) < len(runs):
        return None
    latest = runs[0]
    running = human_duration(now - latest.since)
    reason = (
        f"all {threads} {what} stuck; the latest: {latest.task_type} job {latest.job_id}"
        f" running {running} ({policy.limit_text(usual.get(latest.task_type), usual_name)})"
    )
    limit = human_duration(policy.run_limit_s(usual.get(latest.task_type)))
    return reason, f"{threads}/{threads} {what.rsplit(maxsplit=1)[-1]} stuck {running}+, limit {limit}"


def judge_all(workers: Sequence[tuple[WorkerSnapshot, float, bool]], policy: WedgePolicy) -> list[Verdict]:
    """The verdict on each ``(snapshot, heartbeat age, alive)``, the usual run times taken over them all;
    a dead worker is dead, not wedged."""
    usual = usual_run_times(snapshot.stats for snapshot, _, _ in workers)
    return [judge(s, age_s, usual, policy) if alive else NOT_WEDGED for s, age_s, alive in workers]
