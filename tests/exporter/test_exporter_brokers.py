"""`tqadmin exporter` as a user runs it: one process, four profiles on four brokers (RabbitMQ, Redis, SQS on
moto, the embedded SQLite file), scraped over HTTP and parsed with prometheus_client's own parser; a real
worker's telemetry; a broker killed and started again under it while the others go on."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import AMQP_URL, REDIS_URL, AmqpQueues
from tests.support.redis_servers import RedisServer
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.telemetry import metric_names as names

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis, pytest.mark.sqs]
ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "e2e" / "e2e_tasks.py"
Sample = tuple[str, dict[str, str], float]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def publish(url: str, queue: str, *bodies: bytes) -> None:
    transport = plugin_for_url(url).transport(BrokerConfig(url=url))
    try:
        transport.declare(queue)
        assert transport.publish([(queue, Message(body)) for body in bodies]).all_confirmed
    finally:
        transport.close()


@dataclass
class Running:
    url: str
    process: subprocess.Popen[str]
    env: dict[str, str]
    queues: dict[str, str]  # profile -> its queue

    def scrape(self, accept: str = "") -> list[Sample]:
        answer = httpx.get(self.url, headers={"Accept": accept} if accept else {}, timeout=10)
        answer.raise_for_status()
        text = answer.text
        if "openmetrics" in answer.headers["content-type"]:
            from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse

            return [(s.name, s.labels, s.value) for f in parse(text) for s in f.samples]
        return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]

    def value(self, samples: list[Sample], name: str, **labels: str) -> float | None:
        found = [v for n, got, v in samples if n == name and all(got.get(k) == x for k, x in labels.items())]
        return found[0] if found else None

    def depths(self, samples: list[Sample]) -> dict[str, float | None]:
        return {
            p: self.value(samples, names.QUEUE_MESSAGES, profile=p, queue=q) for p, q in self.queues.items()
        }

    def wait_for(
        self, what: str, condition: Callable[[list[Sample]], bool], timeout_s: float = 60
    ) -> list[Sample]:
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.process.poll() is None, self.process.communicate()[1]
            try:
                samples = self.scrape()
                if condition(samples):
                    return samples
            except httpx.HTTPError:
                samples = []
            if time.monotonic() > deadline:
                health = [s for s in samples if "queue" not in s[1]]
                seen = sorted({(got["profile"], got["queue"]) for _, got, _ in samples if "queue" in got})[
                    :20
                ]
                raise AssertionError(f"gave up waiting for {what}: {self.depths(samples)} {seen} {health}")
            time.sleep(0.2)


@pytest.fixture
def exporter(
    tmp_path: Path, unique: str, amqp_queues: AmqpQueues, sqs_env: str, sqs_queues: object
) -> Iterator[tuple[Running, RedisServer]]:
    redis_server = RedisServer(tmp_path)
    redis_broker = f"{redis_server.url}?prefix=tqb-{unique}"
    embedded = f"sqlite:///{tmp_path / 'tq.db'}"
    rabbit_queue = amqp_queues.declare("orders")
    for i in range(3):
        amqp_queues.publish(rabbit_queue, b'{"task_type": "noop", "id": "r%d"}' % i)
    sqs_queue = sqs_queues.create("emails")  # type: ignore[attr-defined]
    sqs_queues.send_jobs(sqs_queue, 2)  # type: ignore[attr-defined]
    publish(redis_broker, f"images-{unique}", b'{"task_type": "noop", "id": "i1"}')
    publish(embedded, "reports", *(b'{"task_type": "noop", "id": "e%d"}' % i for i in range(3)))
    publish(embedded, "reports", b'{"task_type": "no_such_task", "id": "e-unknown"}')
    config = tmp_path / "config.toml"
    config.write_text(
        f"""
[profiles.rabbit]
broker = "{AMQP_URL}"
store = "{REDIS_URL}?prefix=tqs-{unique}"
[profiles.redis]
broker = "{redis_broker}"
store = "{redis_server.url}?prefix=tqs-{unique}"
[profiles.aws]
broker = "sqs://us-east-1"
store = "{REDIS_URL}?prefix=tqs-{unique}-aws"
[profiles.embedded]
broker = "{embedded}"
store = "{embedded}"
"""
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TQADMIN_BROKER_URL", "TQADMIN_STORE_URL")}
    env["TQADMIN_CONFIG"] = str(config)
    port = free_port()
    command = [sys.executable, "-m", "tqadmin.cli", "exporter", "--listen", f"127.0.0.1:{port}"]
    command += ["--profiles", "rabbit,redis,aws,embedded", "--interval", "1"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    running = Running(
        f"http://127.0.0.1:{port}/metrics",
        process,
        env,
        {"rabbit": rabbit_queue, "redis": f"images-{unique}", "aws": sqs_queue, "embedded": "reports"},
    )
    try:
        yield running, redis_server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=30)
        redis_server.stop()


def test_one_exporter_serves_four_brokers_with_each_sample_labelled_by_profile(
    exporter: tuple[Running, RedisServer],
) -> None:
    running, _ = exporter

    def every_queue_read(samples: list[Sample]) -> bool:
        return all(
            running.value(samples, names.QUEUE_MESSAGES, profile=p, queue=q)
            for p, q in running.queues.items()
        )

    samples = running.wait_for("every profile's queue", every_queue_read)
    for profile in running.queues:
        assert running.value(samples, names.UP, profile=profile) == 1, profile
        assert running.value(samples, names.POLL_AGE, profile=profile) is not None
    assert running.depths(samples) == {"rabbit": 3, "redis": 1, "aws": 2, "embedded": 4}
    assert all("profile" in labels for _, labels, _ in samples), "every sample names its profile"
    sqs_labels = {"profile": "aws", "queue": running.queues["aws"]}
    assert running.value(samples, names.QUEUE_OLDEST_AGE, **sqs_labels) is None, "SQS gives none: absent"
    assert running.value(samples, names.QUEUE_OLDEST_AGE, profile="embedded", queue="reports") is not None
    openmetrics = running.scrape("application/openmetrics-text; version=1.0.0")
    assert running.value(openmetrics, names.UP, profile="embedded") == 1


def test_a_real_workers_runs_and_dead_letters_are_served_and_stay_after_it_stopped(
    exporter: tuple[Running, RedisServer],
) -> None:
    running, _ = exporter
    command = [sys.executable, "-m", "tqadmin.cli", "--profile", "embedded", "worker", "--queue", "reports"]
    worker = subprocess.Popen(
        [*command, "--tasks", str(TASKS)],
        env=running.env,
        stderr=subprocess.DEVNULL,
    )
    try:
        labels = {"profile": "embedded", "framework": "tqadmin", "task_type": "noop"}
        running.wait_for(
            "the worker's runs", lambda s: running.value(s, names.TASK_RUNS, **labels) == 3, timeout_s=90
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
    samples = running.wait_for(
        "the stopped worker counted dead",
        lambda s: running.value(s, names.WORKERS, profile="embedded", state="dead") == 1,
    )
    assert running.value(samples, names.TASK_RUNS, **labels) == 3, "a stopped worker's runs stay counted"
    assert running.value(samples, f"{names.TASK_RUN}_count", **labels) == 3
    assert running.value(samples, f"{names.TASK_RUN}_bucket", le="+Inf", **labels) == 3
    reasons = {
        got["reason"]: v
        for n, got, v in samples
        if n == names.TASK_DEAD_LETTERS and got.get("profile") == "embedded"
    }
    assert sum(reasons.values()) == 1 and reasons, reasons


def test_a_broker_killed_under_the_exporter_is_served_stale_with_up_0_and_recovers(
    exporter: tuple[Running, RedisServer],
) -> None:
    running, redis_server = exporter
    queue = running.queues["redis"]
    running.wait_for(
        "the Redis queue", lambda s: running.value(s, names.QUEUE_MESSAGES, profile="redis", queue=queue) == 1
    )
    redis_server.stop()
    samples = running.wait_for(
        "the Redis profile down", lambda s: running.value(s, names.UP, profile="redis") == 0
    )
    assert running.value(samples, names.QUEUE_MESSAGES, profile="redis", queue=queue) == 1, (
        "the last value, stale"
    )
    assert running.value(samples, names.UP, profile="rabbit") == 1, "the other profiles go on"
    assert running.value(samples, names.UP, profile="embedded") == 1
    assert (running.value(samples, names.POLL_ERRORS, profile="redis") or 0) >= 1
    redis_server.start()
    running.wait_for("the Redis profile back", lambda s: running.value(s, names.UP, profile="redis") == 1)
    running.process.send_signal(signal.SIGTERM)
    _, stderr = running.process.communicate(timeout=30)
    assert running.process.returncode == 0, stderr
    lines = stderr.splitlines()
    assert len([line for line in lines if "profile redis:" in line and "stale" in line]) == 1, stderr
    assert any("profile redis: read again after" in line for line in lines), stderr
    assert "guest:guest" not in stderr and "Traceback" not in stderr
