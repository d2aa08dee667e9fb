"""A worker's snapshot in the Prometheus text exposition format (version 0.0.4), for an optional endpoint.

Latencies are exposed as summaries (p50, p95, p99 over the worker's life, plus ``_sum`` and ``_count``)
because our log buckets do not line up with Prometheus's fixed ``le`` bounds; windowed figures across workers
are what ``tqadmin stats`` is for.
"""

from __future__ import annotations

from collections.abc import Mapping

from tqadmin.telemetry.counters import COUNTERS
from tqadmin.telemetry.histogram import Histogram
from tqadmin.telemetry.snapshot import WorkerSnapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
QUANTILES = (0.5, 0.95, 0.99)


def render(snapshot: WorkerSnapshot) -> str:
    lines = [
        "# HELP tqadmin_jobs_total Runs and deliveries by outcome since the worker started.",
        "# TYPE tqadmin_jobs_total counter",
    ]
    for (queue, task_type), stats in sorted(snapshot.stats.items()):
        for outcome in COUNTERS:
            labels = {"queue": queue, "task_type": task_type, "outcome": outcome}
            lines.append(f"tqadmin_jobs_total{_labels(labels)} {getattr(stats, outcome)}")
    for name, what in (("wait", "published to started"), ("run", "run time")):
        metric = f"tqadmin_job_{name}_seconds"
        lines += [f"# HELP {metric} Job {what}, seconds.", f"# TYPE {metric} summary"]
        for (queue, task_type), stats in sorted(snapshot.stats.items()):
            lines += _summary(metric, {"queue": queue, "task_type": task_type}, getattr(stats, name))
    lines += [
        "# HELP tqadmin_worker_running_jobs Jobs running now.",
        "# TYPE tqadmin_worker_running_jobs gauge",
        f"tqadmin_worker_running_jobs {len(snapshot.current_jobs)}",
        "# HELP tqadmin_worker_start_time_seconds When the worker started, epoch seconds.",
        "# TYPE tqadmin_worker_start_time_seconds gauge",
        f"tqadmin_worker_start_time_seconds {snapshot.started_at}",
        "# HELP tqadmin_worker_store_round_trips_total Calls to the state store since the worker started.",
        "# TYPE tqadmin_worker_store_round_trips_total counter",
        f"tqadmin_worker_store_round_trips_total {snapshot.store_round_trips}",
        "# HELP tqadmin_worker_restarts_total Worker processes its supervisor started before this one.",
        "# TYPE tqadmin_worker_restarts_total counter",
        f"tqadmin_worker_restarts_total {snapshot.restarts}",
    ]
    return "\n".join(lines) + "\n"


def _summary(metric: str, labels: Mapping[str, str], histogram: Histogram) -> list[str]:
    lines = []
    for q in QUANTILES:
        value = histogram.quantile(q)
        shown = "NaN" if value is None else repr(value)
        lines.append(f"{metric}{_labels({**labels, 'quantile': str(q)})} {shown}")
    lines.append(f"{metric}_sum{_labels(labels)} {histogram.sum!r}")
    lines.append(f"{metric}_count{_labels(labels)} {histogram.count}")
    return lines


def _labels(labels: Mapping[str, str]) -> str:
    """Label values are data (queue names from the broker): escaped as the format requires."""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
