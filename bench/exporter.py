"""What ``tqadmin exporter`` costs RabbitMQ and a scraper, over 10,000 queues, beside the dashboard's poll.

Creates N queues (default 10,000), starts ``tqadmin exporter`` as a user would (a profile in a config file,
``--interval 5``, ``--max-queues N`` so that every queue is served rather than folded), then:

1. Broker CPU (utime + stime of beam.smp, from /proc) in rotated windows: nothing polls (the idle cost of N
   queues); the dashboard's poll (the plugin's ``list_queues`` every 2 s, the TUI's refresh); the exporter
   (its own poll, once per 5 s). Between its windows the exporter is SIGSTOPped, so it polls only in its own.
2. Scrapes: the exporter's ``/metrics`` fetched ``--scrapes`` times in the Prometheus text format and in
   OpenMetrics, by three scrapers at once: time per scrape (median, max), bytes, samples and series per
   queue (parsed with ``prometheus_client``'s parser), and the polls the exporter made meanwhile
   (``tqadmin_poll_duration_seconds`` is per poll: the broker is asked once per interval whatever the
   number of scrapers).

    python bench/exporter.py [--queues N] [--seconds S] [--scrapes K]

Targets: the exporter <= the dashboard's poll above idle (it polls less often, through the same calls); a
scrape of 10,000 queues under one second. The broker is shared with whatever else runs on the machine, so
read the idle row as the noise floor. The queues are deleted at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import httpx
from poll import AMQP_URL, MANAGEMENT_URL, WINDOW_S, Row, beam_pid, measure, queues, wait_until_listed
from prometheus_client.parser import text_string_to_metric_families
from tqadmin_rabbitmq.admin import RabbitMQAdmin

from tqadmin.plugin.base import BrokerConfig

DASHBOARD_REFRESH_S = 2.0
EXPORTER_INTERVAL_S = 5.0
SCRAPERS = 3
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def exporter(queue_count: int, home: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``tqadmin exporter`` on a free loopback port for one profile on the local RabbitMQ; its URL."""
    config = home / "config.toml"
    config.write_text(
        f'[profiles.bench]\nbroker = "{AMQP_URL}"\nmanagement_url = "{MANAGEMENT_URL}"\n'
        f'store = "sqlite:///{home / "store.db"}"\n'
    )
    port = free_port()
    argv = [sys.executable, "-m", "tqadmin.cli", "exporter", "--listen", f"127.0.0.1:{port}"]
    argv += ["--profiles", "bench", "--interval", str(EXPORTER_INTERVAL_S), "--max-queues", str(queue_count)]
    env = {**os.environ, "TQADMIN_CONFIG": str(config), "HOME": str(home)}
    log = (home / "exporter.log").open("wb")
    process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        yield process, url
    finally:
        process.send_signal(signal.SIGCONT)
        process.terminate()
        process.wait(60)
        log.close()


def wait_for_queues(url: str, prefix: str, count: int, process: subprocess.Popen[bytes]) -> None:
    """Until a scrape serves every queue of the bench (the exporter's first poll is done)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"bench/exporter.py: the exporter exited with {process.returncode}")
        try:
            text = httpx.get(url, timeout=30).text
        except httpx.HTTPError:
            time.sleep(0.5)
            continue
        if text.count(f'queue="{prefix}') >= count:
            return
        time.sleep(1)
    sys.exit("bench/exporter.py: the exporter did not serve every queue within two minutes")


def metric_value(text: str, name: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return 0.0


def scrapes(url: str, count: int, accept: str | None) -> tuple[list[float], str]:
    """``count`` scrapes by :data:`SCRAPERS` clients at once: each one's seconds, and the last text."""
    headers = {"accept": accept} if accept else {}

    def one(client: httpx.Client) -> tuple[float, str]:
        started = time.perf_counter()
        response = client.get(url, headers=headers)
        response.raise_for_status()
        return time.perf_counter() - started, response.text

    clients = [httpx.Client(timeout=60) for _ in range(SCRAPERS)]
    try:
        with concurrent.futures.ThreadPoolExecutor(SCRAPERS) as pool:
            done = list(pool.map(one, [clients[i % SCRAPERS] for i in range(count)]))
    finally:
        for client in clients:
            client.close()
    return [seconds for seconds, _ in done], done[-1][1]


def scrape_report(url: str, count: int, queue_count: int, prefix: str) -> list[str]:
    lines = [
        f"scrapes of {queue_count} queues, {SCRAPERS} scrapers at once, {count} each format",
        f"{'format':<14} {'median':>8} {'max':>8} {'bytes':>11} {'samples':>8} {'per queue':>9}",
    ]
    before = httpx.get(url, timeout=60).text
    polls_before = metric_value(before, "tqadmin_poll_errors_total")
    started = time.monotonic()
    worst = 0.0
    for name, accept in (("text 0.0.4", None), ("OpenMetrics", OPENMETRICS)):
        times, text = scrapes(url, count, accept)
        samples = [line for line in text.splitlines() if line and not line.startswith("#")]
        queue_samples = sum(f'queue="{prefix}' in line for line in samples)
        worst = max(worst, statistics.median(times))
        lines.append(
            f"{name:<14} {statistics.median(times) * 1000:>6.0f}ms {max(times) * 1000:>6.0f}ms"
            f" {len(text.encode()):>11,} {len(samples):>8,} {queue_samples / queue_count:>9.1f}"
        )
    elapsed = time.monotonic() - started
    after = httpx.get(url, timeout=60).text
    errors = metric_value(after, "tqadmin_poll_errors_total") - polls_before
    lines.append(
        f"{2 * count} scrapes in {elapsed:.1f} s, while the exporter polls once per {EXPORTER_INTERVAL_S:g} s"
        f" (at most {int(elapsed // EXPORTER_INTERVAL_S) + 1} polls); poll errors meanwhile: {errors:g};"
        f" served poll age {metric_value(after, 'tqadmin_poll_age_seconds'):.1f} s"
    )
    verdict = "met" if worst < 1.0 else "MISSED"
    lines.append(f"target: a scrape of {queue_count} queues under 1 s: {verdict} ({worst * 1000:.0f} ms)")
    return lines


def cpu_report(rows: list[Row], queue_count: int) -> list[str]:
    idle = rows[0].core_fraction
    lines = [
        f"RabbitMQ CPU with {queue_count} queues (% of one core; machine shared, see idle)",
        f"{'poller':<36} {'polls':>5} {'mean poll':>10} {'CPU %':>7} {'above idle':>11}",
    ]
    for row in rows:
        mean = f"{row.mean_call_s * 1000:>8.0f}ms" if row.polls else f"{'-':>10}"
        lines.append(
            f"{row.name:<36} {row.polls or '-':>5} {mean} {row.core_fraction * 100:>6.1f}%"
            f" {(row.core_fraction - idle) * 100:>10.1f}%"
        )
    dashboard, exported = (row.core_fraction - idle for row in rows[1:3])
    ratio = f"{exported / dashboard:.2f}x" if dashboard > 0 else "n/a (the dashboard's cost is in the noise)"
    verdict = "met" if exported <= max(dashboard, 0.0) + 0.005 else "MISSED"
    lines.append(f"exporter / dashboard, above idle: {ratio}; target exporter <= dashboard: {verdict}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=60.0, help="per mode, in 10 s windows")
    parser.add_argument("--scrapes", type=int, default=30)
    args = parser.parse_args()

    def interrupted(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    pid = beam_pid()
    prefix = f"tq-bench-exp-{uuid.uuid4().hex[:8]}-"
    config = BrokerConfig(AMQP_URL, timeout_s=60, options={"management_url": MANAGEMENT_URL})
    dashboard = RabbitMQAdmin(config)
    try:
        started = time.monotonic()
        with queues(args.queues, prefix), tempfile.TemporaryDirectory(prefix="tq-bench-exp-") as home:
            print(f"declared {args.queues} queues in {time.monotonic() - started:.1f}s", file=sys.stderr)
            wait_until_listed(dashboard, prefix, args.queues)
            with exporter(args.queues, Path(home)) as (process, url):
                wait_for_queues(url, prefix, args.queues, process)
                lines = scrape_report(url, args.scrapes, args.queues, prefix)
                process.send_signal(signal.SIGSTOP)
                rows = cpu_rows(pid, args.seconds, dashboard.list_queues, process)
        print("\n".join([*cpu_report(rows, args.queues), "", *lines]))
    except KeyboardInterrupt:
        sys.exit("bench/exporter.py: interrupted; the queues it created were deleted")
    finally:
        dashboard.close()


def cpu_rows(
    pid: int, seconds: float, dashboard_poll: Callable[[], object], process: subprocess.Popen[bytes]
) -> list[Row]:
    """Idle, the dashboard's poll and the exporter, in rotated windows; the exporter runs only in its own."""
    idle = Row("idle (no polling)")
    dashboard = Row(f"dashboard list_queues every {DASHBOARD_REFRESH_S:g} s")
    exported = Row(f"tqadmin exporter, --interval {EXPORTER_INTERVAL_S:g}")
    windows = max(1, round(seconds / WINDOW_S))
    for window in range(windows):
        print(f"window {window + 1}/{windows}", file=sys.stderr)
        order = [idle, dashboard, exported]
        for row in order[window % 3 :] + order[: window % 3]:
            if row is exported:
                process.send_signal(signal.SIGCONT)
                measure(row, pid, seconds / windows, None)
                process.send_signal(signal.SIGSTOP)
            elif row is dashboard:
                measure(row, pid, seconds / windows, dashboard_poll, DASHBOARD_REFRESH_S)
            else:
                measure(row, pid, seconds / windows, None)
    exported.polls = round(exported.elapsed_s / EXPORTER_INTERVAL_S)
    return [idle, dashboard, exported]


if __name__ == "__main__":
    main()
