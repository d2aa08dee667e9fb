"""Prometheus exposition of a worker's snapshot: counters by outcome, latency summaries, escaped labels."""

from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.prometheus import render
from tqadmin.telemetry.snapshot import WorkerSnapshot


def test_counters_and_summaries_are_exposed_per_queue_and_task_type() -> None:
    telemetry = Telemetry()
    telemetry.started("orders", "charge", 0.5)
    telemetry.finished("orders", "charge", 2.0, ok=True)
    telemetry.finished("orders", "charge", 2.0, ok=False)
    snapshot = WorkerSnapshot("w", "h", 1, ("orders",), 10.0, 20.0, ("job-1",), telemetry.read(), 42)
    text = render(snapshot)
    lines = text.splitlines()
    assert 'tqadmin_jobs_total{queue="orders",task_type="charge",outcome="done"} 1' in lines
    assert 'tqadmin_jobs_total{queue="orders",task_type="charge",outcome="failed"} 1' in lines
    assert 'tqadmin_job_run_seconds_count{queue="orders",task_type="charge"} 2' in lines
    p99 = 'tqadmin_job_wait_seconds{queue="orders",task_type="charge",quantile="0.99"} '
    [value] = [float(line.removeprefix(p99)) for line in lines if line.startswith(p99)]
    assert abs(value - 0.5) <= 0.01
    assert "tqadmin_worker_running_jobs 1" in lines
    assert "tqadmin_worker_store_round_trips_total 42" in lines
    assert WorkerSnapshot.decode(snapshot.encode()).store_round_trips == 42  # the heartbeat carries it too
    assert text.endswith("\n")


def test_broker_strings_in_labels_are_escaped_not_interpreted() -> None:
    telemetry = Telemetry()
    telemetry.finished('evil"} 1\nfake_metric{a="', "t\\x", 0.1, ok=True)
    text = render(WorkerSnapshot("w", "h", 1, (), 0.0, 0.0, (), telemetry.read()))
    assert not any(line.startswith("fake_metric") for line in text.splitlines())
    assert 'queue="evil\\"} 1\\nfake_metric{a=\\"",task_type="t\\\\x"' in text


def test_the_restarts_of_a_worker_are_exposed_and_carried_by_its_heartbeat() -> None:
    """A worker whose supervisor restarted it twice (plugin faults or crashes) says so."""
    snapshot = WorkerSnapshot("w", "h", 1, ("orders",), 10.0, 20.0, restarts=2)
    assert "tqadmin_worker_restarts_total 2" in render(snapshot).splitlines()
    assert WorkerSnapshot.decode(snapshot.encode()).restarts == 2
