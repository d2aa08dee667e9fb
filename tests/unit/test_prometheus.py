"""A worker's snapshot as Prometheus families: the exporter's names per task type, exact ``le`` buckets,
dead letters by reason, escaped labels."""

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.families import le_counts
from tqadmin.telemetry.histogram import Histogram
from tqadmin.telemetry.prometheus import worker_families
from tqadmin.telemetry.snapshot import WorkerSnapshot


class _Families(Collector):
    def __init__(self, snapshot: WorkerSnapshot) -> None:
        self.snapshot = snapshot

    def collect(self):  # type: ignore[no-untyped-def]
        return iter(worker_families(self.snapshot))


def _samples(snapshot: WorkerSnapshot) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(_Families(snapshot)).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_runs_failures_and_histograms_are_exposed_per_task_type_summed_over_queues() -> None:
    telemetry = Telemetry()
    telemetry.started("orders", "charge", 0.5)
    telemetry.finished("orders", "charge", 2.0, ok=True)
    telemetry.finished("refunds", "charge", 2.0, ok=False)
    telemetry.dead_lettered("refunds", "charge", "exhausted")
    snapshot = WorkerSnapshot("w", "h", 1, ("orders",), 10.0, 20.0, ("job-1",), telemetry.read(), 42)
    samples = _samples(snapshot)
    charge = (("task_type", "charge"),)
    assert samples[(names.TASK_RUNS, charge)] == 2
    assert samples[(names.TASK_FAILURES, charge)] == 1
    assert samples[(names.TASK_DEAD_LETTERS, (("reason", "exhausted"), ("task_type", "charge")))] == 1
    assert samples[(f"{names.TASK_RUN}_count", charge)] == 2
    assert samples[(f"{names.TASK_WAIT}_bucket", (("le", "+Inf"), ("task_type", "charge")))] == 1
    assert samples[(names.WORKER_RUNNING_JOBS, ())] == 1
    assert samples[(names.WORKER_STORE_ROUND_TRIPS, ())] == 42


def test_every_le_edge_counts_exactly_the_values_at_or_below_it() -> None:
    values = [0.0, 0.0009, 0.001, 0.0011, 0.3, 1.0, 7.0, 299.0, 301.0, 5000.0]
    histogram = Histogram()
    for value in values:
        histogram.record(value)
    counts = dict(le_counts(histogram))
    for edge in names.LE_EDGES:
        assert counts[repr(edge)] == sum(1 for v in values if v <= edge), edge
    assert counts["+Inf"] == len(values)
    assert all(
        abs(edge - near) / near <= 0.02 for edge, near in zip(names.LE_EDGES, (0.001, 0.0025), strict=False)
    )


def test_broker_strings_in_labels_are_escaped_not_interpreted() -> None:
    telemetry = Telemetry()
    telemetry.finished("q", 'evil"} 1\nfake_metric{a="', 0.1, ok=True)
    text = generate_latest(
        _Families(WorkerSnapshot("w", "h", 1, (), 0.0, 0.0, (), telemetry.read()))
    ).decode()
    assert not any(line.startswith("fake_metric") for line in text.splitlines())
    assert 'task_type="evil\\"} 1\\nfake_metric{a=\\""' in text


def test_the_restarts_of_a_worker_are_exposed_and_carried_by_its_heartbeat() -> None:
    """A worker whose supervisor restarted it twice (plugin faults or crashes) says so."""
    snapshot = WorkerSnapshot("w", "h", 1, ("orders",), 10.0, 20.0, restarts=2)
    assert _samples(snapshot)[(names.WORKER_RESTARTS, ())] == 2
    assert WorkerSnapshot.decode(snapshot.encode()).restarts == 2


def test_the_task_types_a_worker_folded_past_its_cap_are_exposed() -> None:
    snapshot = WorkerSnapshot("w", "h", 1, ("orders",), 10.0, 20.0, folded_task_types=3)
    assert _samples(snapshot)[(names.TASK_TYPES_FOLDED, ())] == 3
