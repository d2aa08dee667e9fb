"""The worker's /metrics endpoint serves the Prometheus rendering of a fresh snapshot on each scrape."""

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tqadmin.errors import UsageError
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.endpoint import MetricsServer
from tqadmin.telemetry.prometheus import CONTENT_TYPE
from tqadmin.telemetry.snapshot import WorkerSnapshot


def test_each_scrape_of_metrics_renders_the_current_snapshot_and_other_paths_are_404() -> None:
    telemetry = Telemetry()

    def snapshot() -> WorkerSnapshot:
        return WorkerSnapshot("w", "h", 1, ("orders",), 10.0, 20.0, (), telemetry.read())

    with MetricsServer("127.0.0.1", 0, snapshot) as server:
        url = f"http://127.0.0.1:{server.port}"
        telemetry.finished("orders", "charge", 0.1, ok=True)
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            assert response.headers["Content-Type"] == CONTENT_TYPE
            first = response.read().decode()
        telemetry.finished("orders", "charge", 0.1, ok=True)
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            second = response.read().decode()
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{url}/", timeout=5)
        missing.value.close()
    done = 'tqadmin_jobs_total{queue="orders",task_type="charge",outcome="done"}'
    assert f"{done} 1" in first.splitlines() and f"{done} 2" in second.splitlines()
    assert missing.value.code == 404


def test_a_port_already_in_use_is_a_usage_error_naming_the_option() -> None:
    def snapshot() -> WorkerSnapshot:
        return WorkerSnapshot("w", "h", 1, (), 0.0, 0.0, (), Telemetry().read())

    with (
        MetricsServer("127.0.0.1", 0, snapshot) as taken,
        pytest.raises(UsageError, match="--metrics-port"),
    ):
        MetricsServer("127.0.0.1", taken.port, snapshot)


CANARY = "Cn@ry:7/Qx-metrics"
FAILING_SCRAPE = """
import urllib.error, urllib.request
from tqadmin import logs
from tqadmin.telemetry.endpoint import MetricsServer
logs.setup(verbose=True)
def snapshot():
    raise RuntimeError("store at redis://:{canary}@cache.internal:6379/0 did not answer")
with MetricsServer("127.0.0.1", 0, snapshot) as server:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{{server.port}}/metrics", timeout=10)
    except urllib.error.HTTPError as exc:
        print("status", exc.code, flush=True)
"""


def test_a_scrape_that_fails_is_a_500_and_its_traceback_is_logged_masked(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", FAILING_SCRAPE.format(canary=CANARY)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    said = result.stdout + result.stderr
    assert "status 500" in result.stdout
    assert "RuntimeError: store at redis://:***@cache.internal:6379/0 did not answer" in said
    assert CANARY not in said and "Cn@ry" not in said and list(tmp_path.iterdir()) == []
