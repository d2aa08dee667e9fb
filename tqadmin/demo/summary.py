"""The headless report: what was published, what became of it, and how fast.

Three witnesses are put side by side so a reader can check the pipeline's promise (nothing lost): the
publisher's confirmed counts, the workers' telemetry (done, retried, dead-lettered, deduplicated, latency
percentiles, merged across worker processes) and the broker's own queue figures at the end (what is still in
the work and retry queues, what sits in the dead-letter queues). Every message ends in exactly one place:

    published = done + dead-lettered + deduplicated + left in queues
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tqadmin.demo.cron import CronCount
from tqadmin.demo.traffic import TrafficCounts
from tqadmin.show.tables import table
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.histogram import Histogram
from tqadmin.telemetry.window import figures_json


@dataclass(frozen=True, slots=True)
class Telemetry:
    """The workers' view: cumulative counters and latency histograms per task type, and merged."""

    total: TaskStats = field(default_factory=TaskStats)
    task_types: Mapping[str, TaskStats] = field(default_factory=dict)
    workers: int = 0


@dataclass(frozen=True, slots=True)
class BrokerView:
    """The broker's view: messages in the work and retry queues, in each DLQ, and (at the end) the reasons
    of the dead letters this run added."""

    left_in_queues: int = 0
    dead_letters: Mapping[str, int] = field(default_factory=dict)
    reasons: Mapping[str, int] | None = None
    note: str = ""

    @property
    def in_dead_letter_queues(self) -> int:
        return sum(self.dead_letters.values())


@dataclass(frozen=True, slots=True)
class Summary:
    duration_s: float
    queues: tuple[str, ...]
    workers: int
    failure_rate: float
    traffic: TrafficCounts
    telemetry: Telemetry
    broker: BrokerView
    baseline: BrokerView = field(default_factory=BrokerView)
    log_dir: str = ""
    notes: tuple[str, ...] = ()
    cron: CronCount = field(default_factory=CronCount)

    @property
    def accounted(self) -> int:
        t = self.telemetry.total
        return t.done + t.dead_lettered + t.deduplicated + self.broker.left_in_queues

    @property
    def incoming(self) -> int:
        """What the workers had to handle: this run's confirmed messages (the publisher's and the cron's)
        plus any an earlier run left."""
        return self.traffic.published + self.cron.fired + self.baseline.left_in_queues

    @property
    def new_dead_letters(self) -> int:
        return self.broker.in_dead_letter_queues - self.baseline.in_dead_letter_queues

    @property
    def balanced(self) -> bool:
        """Whether every confirmed message is accounted for (publishes that failed, and cron ticks claimed
        but not marked fired, may or may not count)."""
        return self.incoming <= self.accounted <= self.incoming + self.traffic.failed + self.cron.pending

    def to_json(self) -> dict[str, Any]:
        t = self.telemetry.total
        return {
            "duration_s": round(self.duration_s, 3),
            "queues": list(self.queues),
            "workers": self.workers,
            "failure_rate": self.failure_rate,
            "published": self.traffic.published,
            "published_jobs": len(self.traffic.jobs),
            "duplicates_published": self.traffic.duplicates,
            "malformed_published": dict(self.traffic.malformed),
            "publish_failed": self.traffic.failed,
            "scheduled": self.cron.fired,
            "scheduled_pending": self.cron.pending,
            "done": t.done,
            "failed": t.failed,
            "retried": t.retried,
            "dead_lettered": t.dead_lettered,
            "deduplicated": t.deduplicated,
            "already_queued": self.baseline.left_in_queues,
            "left_in_queues": self.broker.left_in_queues,
            "in_dead_letter_queues": self.new_dead_letters,
            "earlier_dead_letters": self.baseline.in_dead_letter_queues,
            "dead_letter_reasons": dict(self.broker.reasons) if self.broker.reasons is not None else None,
            "balanced": self.balanced,
            "run": t.run.percentiles(),
            "wait": t.wait.percentiles(),
            "task_types": {name: figures_json(f) for name, f in sorted(self.telemetry.task_types.items())},
            "log_dir": self.log_dir,
            "notes": [*self.notes, *([self.broker.note] if self.broker.note else [])],
        }

    def render(self) -> str:
        t = self.telemetry.total
        traffic = self.traffic
        malformed = sum(traffic.malformed.values())
        lines = [
            f"tqadmin demo: {self.duration_s:.0f} s, {self.workers} worker(s) on {', '.join(self.queues)}, "
            f"failure rate {self.failure_rate:.0%}",
            "",
            f"published      {traffic.published:>6}  ({len(traffic.jobs)} jobs, {traffic.duplicates} "
            f"duplicates, {malformed} malformed{_failed(traffic)})",
            *(
                [f"scheduled      {self.cron.fired:>6}  (fired by the cron's leader)"]
                if self.cron.fired
                else []
            ),
            f"done           {t.done:>6}",
            f"retried        {t.retried:>6}  (failed runs: {t.failed})",
            f"dead-lettered  {t.dead_lettered:>6}  {_reasons(self)}",
            f"deduplicated   {t.deduplicated:>6}",
            f"left in queues {self.broker.left_in_queues:>6}",
            "",
            _accounting(self),
            "",
            _latency_table(self.telemetry),
        ]
        if self.log_dir:
            lines += ["", f"worker logs: {self.log_dir}"]
        notes = (*self.notes, self.broker.note) if self.broker.note else self.notes
        lines += [f"note: {note}" for note in notes]
        return "\n".join(lines)


def _failed(traffic: TrafficCounts) -> str:
    if not traffic.failed:
        return ""
    return f"; {traffic.failed} not confirmed, last error: {traffic.last_error}"


def _reasons(summary: Summary) -> str:
    earlier = summary.baseline.in_dead_letter_queues
    where = f"({summary.new_dead_letters} new in the dead-letter queues"
    if earlier:
        where = f"{where}, beside {earlier} from earlier runs"
    reasons = summary.broker.reasons
    if not reasons:
        return where + ")"
    return f"{where}: {', '.join(f'{reason} {count}' for reason, count in sorted(reasons.items()))})"


def _accounting(summary: Summary) -> str:
    t = summary.telemetry.total
    verdict = "every message accounted for" if summary.balanced else "MISMATCH: see the worker logs"
    carried = summary.baseline.left_in_queues
    incoming = f"published {summary.traffic.published}"
    if summary.cron.fired:
        incoming += f" + scheduled {summary.cron.fired}"
    if carried:
        incoming += f" + {carried} already queued"
    return (
        f"{incoming} = done {t.done} + dead-lettered {t.dead_lettered} + "
        f"deduplicated {t.deduplicated} + left {summary.broker.left_in_queues}: {verdict}"
    )


def _latency_table(telemetry: Telemetry) -> str:
    rows = [
        [name, f.done, f.dead_lettered, *_seconds(f.run), *_seconds(f.wait)]
        for name, f in sorted(telemetry.task_types.items())
    ]
    t = telemetry.total
    rows.append(["all", t.done, t.dead_lettered, *_seconds(t.run), *_seconds(t.wait)])
    headers = ["task type", "done", "dead", "run p50", "run p99", "wait p50", "wait p99"]
    return table(headers, rows)


def _seconds(histogram: Histogram) -> list[str | None]:
    return [_fmt(histogram.quantile(0.5)), _fmt(histogram.quantile(0.99))]


def _fmt(value: float | None) -> str | None:
    if value is None:
        return None
    if value < 0.01:
        return f"{value * 1000:.1f} ms"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
