"""`tqadmin worker --metrics-port N`: Prometheus scrapes the worker process on 127.0.0.1."""

import socket
import urllib.error
import urllib.request

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
