"""What the dashboard shows besides queues, as plain values, and the sources that produce them.

The telemetry (workers' heartbeats and histograms) and the cron state come from other layers; the TUI reads
them through these small protocols so it can run against the tests' seeded sources, the real store, or nothing
at all ("no workers reporting") without a branch in every widget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Latency:
    """Percentiles in seconds and a histogram as ``(upper bound in seconds, count)`` buckets."""

    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    buckets: tuple[tuple[float, int], ...] = ()


@dataclass(frozen=True, slots=True)
class TaskTypeView:
    """One task name's figures; ``framework`` says whose (another framework's come from its events, and
    say there what their wait is measured from when it is not comparable with tqadmin's)."""

    name: str
    done: int
    failed: int
    wait: Latency
    run: Latency
    framework: str = "tqadmin"


@dataclass(frozen=True, slots=True)
class WorkerView:
    """One worker row: tqadmin's own from the state store (with its counts), another framework's from its
    registry on the broker (``done`` and ``failed`` ``None``: those registries keep none; ``alive`` ``None``
    where nothing can tell, a Celery worker seen without task events)."""

    id: str
    queue: str
    heartbeat_age_s: float | None
    current_job: str | None
    done: int | None
    failed: int | None
    alive: bool | None
    framework: str = "tqadmin"
    dead_reason: str | None = None
    wedged: bool | None = False  # alive yet making no progress (None: nothing tells), why in wedged_reason
    wedged_reason: str | None = None  # short: the screen has a cell for it (`tqadmin workers` says it all)


@dataclass(frozen=True, slots=True)
class TelemetryView:
    """Merged snapshot of every live worker: rates over ``window_s`` and per-task-type latency."""

    window_s: float = 60.0
    throughput: float = 0.0
    failure_rate: float = 0.0
    task_types: tuple[TaskTypeView, ...] = ()
    workers: tuple[WorkerView, ...] = ()


@dataclass(frozen=True, slots=True)
class ScheduleView:
    name: str
    cron: str
    queue: str
    next_fire: float | None
    last_fire: float | None
    lateness_s: float | None = None


@dataclass(frozen=True, slots=True)
class CronView:
    leader: str | None
    fencing_token: int | None
    schedules: tuple[ScheduleView, ...] = ()


class TelemetrySource(Protocol):
    def read(self) -> TelemetryView:
        """The merged telemetry now; raises a TqadminError when the store cannot be read."""


class CronSource(Protocol):
    def read(self) -> CronView:
        """The cron leader, its fencing token and every schedule's fire times."""
