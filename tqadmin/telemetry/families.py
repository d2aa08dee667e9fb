"""Worker telemetry as Prometheus metric families, shared by the worker's own endpoint and the exporter so
that both serve the same names, labels and ``le`` edges (:mod:`tqadmin.telemetry.metric_names`).

Counters are cumulative and histograms come straight from the log buckets: an ``le`` edge is the upper
boundary of one bucket (:data:`~tqadmin.telemetry.metric_names.LE_BUCKETS`), so each ``_bucket`` count is
exact. Percentiles are left to the query (``histogram_quantile``) over whatever set of workers, queues or
profiles is summed: percentiles averaged across workers would be wrong.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.histogram import Histogram

Row = tuple[Mapping[str, str], TaskStats]
"""One labelled series set: label values (in the family's label order) and their figures."""


def task_families(rows: Iterable[Row], label_names: Sequence[str] = ("task_type",)) -> list[Metric]:
    """Runs, failures, retries, dead letters by reason, deduplications, and the wait and run histograms of
    each row; every row carries ``label_names``."""
    labels = list(label_names)
    runs = CounterMetricFamily(names.TASK_RUNS, "Runs that ended, done or failed.", labels=labels)
    failures = CounterMetricFamily(
        names.TASK_FAILURES, "Runs that failed (retried or dead-lettered after).", labels=labels
    )
    retries = CounterMetricFamily(names.TASK_RETRIES, "Failed runs put back to run again.", labels=labels)
    dead = CounterMetricFamily(
        names.TASK_DEAD_LETTERS, "Jobs dead-lettered, by x-tq-reason.", labels=[*labels, "reason"]
    )
    deduplicated = CounterMetricFamily(
        names.TASK_DEDUPLICATED, "Deliveries of done jobs acked without a run.", labels=labels
    )
    wait = HistogramMetricFamily(names.TASK_WAIT, "Published to started, seconds.", labels=labels)
    run = HistogramMetricFamily(names.TASK_RUN, "Run time, seconds.", labels=labels)
    for label_values, stats in rows:
        values = [label_values[name] for name in labels]
        runs.add_metric(values, stats.done + stats.failed)
        failures.add_metric(values, stats.failed)
        retries.add_metric(values, stats.retried)
        deduplicated.add_metric(values, stats.deduplicated)
        for reason, count in sorted(stats.by_reason().items()):
            dead.add_metric([*values, reason], count)
        wait.add_metric(values, le_counts(stats.wait), stats.wait.sum)
        run.add_metric(values, le_counts(stats.run), stats.run.sum)
    return [runs, failures, retries, dead, deduplicated, wait, run]


def le_counts(histogram: Histogram) -> list[tuple[str, float]]:
    """Cumulative counts at each ``le`` edge, then ``+Inf`` (the whole count)."""
    per_edge = [0] * len(names.LE_BUCKETS)
    for index, count in histogram.buckets.items():
        slot = bisect.bisect_left(names.LE_BUCKETS, index)
        if slot < len(per_edge):
            per_edge[slot] += count
    cumulative = histogram.zero
    edges: list[tuple[str, float]] = []
    for edge, count in zip(names.LE_EDGES, per_edge, strict=True):
        cumulative += count
        edges.append((repr(edge), cumulative))
    edges.append(("+Inf", histogram.count))
    return edges
