"""`tqadmin worker --metrics-port N`: Prometheus scrapes the worker process on 127.0.0.1, or on ::1."""

import socket
import urllib.error
import urllib.request

import pytest
from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - fixture


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _scrape(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())
    except (urllib.error.URLError, ConnectionError):
        return ""  # not listening yet


def test_the_worker_serves_its_counters_at_metrics(pipeline: Pipeline) -> None:
    port = _free_port()
    pipeline.publish([{"task_type": "count", "id": "a"}, {"task_type": "count", "id": "b"}])
    pipeline.start("--metrics-port", str(port))
    url = f"http://127.0.0.1:{port}/metrics"
    done = 'tqadmin_task_runs_total{task_type="count"} 2.0'
    pipeline.wait_for(lambda: done in _scrape(url).splitlines(), 30, "both jobs in the metrics")


def test_an_ipv6_metrics_host_is_served(pipeline: Pipeline) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
            port = int(probe.getsockname()[1])
    except OSError as exc:
        pytest.skip(f"this machine has no IPv6 loopback (::1): {exc}")
    pipeline.publish([{"task_type": "count", "id": "a"}])
    pipeline.start("--metrics-port", str(port), "--metrics-host", "::1")
    done = 'tqadmin_task_runs_total{task_type="count"} 1.0'
    url = f"http://[::1]:{port}/metrics"
    pipeline.wait_for(lambda: done in _scrape(url).splitlines(), 60, "the job in the metrics on [::1]")
