"""A worker's snapshot as Prometheus metric families, for its optional ``--metrics-port`` endpoint.

The names, labels and ``le`` edges are the exporter's (:mod:`tqadmin.telemetry.families`), without the
``profile`` label: one worker is one target. Scrape the exporter or the workers, not both, or every run is
counted twice in a sum.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.counters import by_task_type
from tqadmin.telemetry.families import task_families
from tqadmin.telemetry.snapshot import WorkerSnapshot


def worker_families(snapshot: WorkerSnapshot) -> list[Metric]:
    """Task figures per task type, then the worker's own gauges and counters."""
    rows = [({"task_type": name}, stats) for name, stats in sorted(by_task_type(snapshot.stats).items())]
    return [
        *task_families(rows),
        GaugeMetricFamily(names.WORKER_RUNNING_JOBS, "Jobs running now.", value=len(snapshot.current_jobs)),
        GaugeMetricFamily(
            names.WORKER_START_TIME, "When the worker started, epoch seconds.", value=snapshot.started_at
        ),
        CounterMetricFamily(
            names.WORKER_STORE_ROUND_TRIPS,
            "Calls to the state store since the worker started.",
            value=snapshot.store_round_trips,
        ),
        CounterMetricFamily(
            names.WORKER_RESTARTS,
            "Worker processes its supervisor started before this one.",
            value=snapshot.restarts,
        ),
        GaugeMetricFamily(
            names.TASK_TYPES_FOLDED,
            'Task types past the cap, summed into task_type="(other)".',
            value=snapshot.folded_task_types,
        ),
    ]
