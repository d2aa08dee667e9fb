"""The /metrics endpoint collects fresh families on each scrape, in the format the scraper asks for."""

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tqadmin.errors import UsageError
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.endpoint import MetricsServer
from tqadmin.telemetry.prometheus import worker_families
from tqadmin.telemetry.snapshot import WorkerSnapshot

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def test_each_scrape_of_metrics_renders_the_current_snapshot_and_other_paths_are_404() -> None:
    telemetry = Telemetry()

    def families():  # type: ignore[no-untyped-def]
        return worker_families(WorkerSnapshot("w", "h", 1, ("orders",), 10.0, 20.0, (), telemetry.read()))

    with MetricsServer("127.0.0.1", 0, families) as server:
        url = f"http://127.0.0.1:{server.port}"
        telemetry.finished("orders", "charge", 0.1, ok=True)
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            first = response.read().decode()
        telemetry.finished("orders", "charge", 0.1, ok=True)
        asked = urllib.request.Request(f"{url}/metrics", headers={"Accept": OPENMETRICS})
        with urllib.request.urlopen(asked, timeout=5) as response:
            assert response.headers["Content-Type"].startswith("application/openmetrics-text")
            second = response.read().decode()
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{url}/", timeout=5)
        missing.value.close()
    runs = 'tqadmin_task_runs_total{task_type="charge"}'
    assert f"{runs} 1.0" in first.splitlines() and f"{runs} 2.0" in second.splitlines()
    assert second.endswith("# EOF\n")
    assert missing.value.code == 404


def test_a_port_already_in_use_is_a_usage_error_naming_the_option() -> None:
    def families():  # type: ignore[no-untyped-def]
        return worker_families(WorkerSnapshot("w", "h", 1, (), 0.0, 0.0, (), Telemetry().read()))

    with (
        MetricsServer("127.0.0.1", 0, families) as taken,
        pytest.raises(UsageError, match="--metrics-port"),
    ):
        MetricsServer("127.0.0.1", taken.port, families)


CANARY = "Cn@ry:7/Qx-metrics"
FAILING_SCRAPE = """
import urllib.error, urllib.request
from tqadmin.show import logs
from tqadmin.telemetry.endpoint import MetricsServer
logs.setup(verbose=True)
def families():
    raise RuntimeError("store at redis://:{canary}@cache.internal:6379/0 did not answer")
with MetricsServer("127.0.0.1", 0, families) as server:
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


def test_the_stable_part_is_encoded_once_per_key_and_each_format_ends_once() -> None:
    from prometheus_client.core import GaugeMetricFamily

    produced: list[int] = []
    key = [1]

    def fresh():  # type: ignore[no-untyped-def]
        return [GaugeMetricFamily("tq_age", "age", value=1.0)]

    def stable():  # type: ignore[no-untyped-def]
        def produce():  # type: ignore[no-untyped-def]
            produced.append(key[0])
            return [GaugeMetricFamily("tq_depth", "depth", value=float(key[0]))]

        return key[0], produce

    with MetricsServer("127.0.0.1", 0, fresh, stable=stable) as server:
        url = f"http://127.0.0.1:{server.port}/metrics"
        for _ in range(3):
            with urllib.request.urlopen(url, timeout=5) as response:
                plain = response.read().decode()
        key[0] = 2
        asked = urllib.request.Request(url, headers={"Accept": OPENMETRICS})
        with urllib.request.urlopen(asked, timeout=5) as response:
            openmetrics = response.read().decode()
    assert produced == [1, 2], "three scrapes of one poll encode it once"
    assert "tq_age 1.0" in plain and "tq_depth 1.0" in plain
    assert (
        "tq_depth 2.0" in openmetrics and openmetrics.count("# EOF") == 1 and openmetrics.endswith("# EOF\n")
    )
