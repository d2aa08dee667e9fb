"""``tqadmin health`` with real workers on real brokers: a worker whose task blocks on every job makes its
queue ``stalled`` (exit 7) within the window and a poll, on each of the four brokers, and so does a raw pika
consumer that takes its prefetch and never acks; and no false alarm: an idle queue, a queue without
consumers (``no consumer``), a queue holding only delayed retries, a slow queue that progresses and a burst
that drains all exit 0. Each stall test prints how long detection took: from the moment the work was stuck
to the verdict (RabbitMQ's figures lag up to its 5 s statistics interval, the window, one poll)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pika
import pytest
from redis_pipeline import redis_pipeline_fixture  # noqa: F401 - the fixture
from sqs_pipeline import sqs_pipeline_fixture  # noqa: F401 - the fixture
from worker_harness import (  # noqa: F401 - the fixtures
    Pipeline,
    pipeline_fixture,
    sqlite_pipeline_fixture,
)

from tests.support.rabbit_queues import AMQP_URL
from tqadmin.cli import main
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.reading.recording import RECORD_EVERY_S, HistoryRecorder, history_name

TASKS = str(Path(__file__).with_name("health_tasks.py"))
WINDOW_S = 4.0
HISTORY_WINDOW_S = 20.0  # two of the history's 10 s buckets at least
HEARTBEAT = ("--heartbeat", "0.5")
Tq = Callable[..., tuple[int, Any, str]]
BROKERS = [
    pytest.param("pipeline", marks=[pytest.mark.rabbitmq, pytest.mark.redis], id="rabbitmq"),
    pytest.param("redis_pipeline", marks=[pytest.mark.redis], id="redis"),
    pytest.param("sqlite_pipeline", id="sqlite"),
    pytest.param("sqs_pipeline", marks=[pytest.mark.redis], id="sqs"),
]
NAMES = {
    "pipeline": "RabbitMQ",
    "redis_pipeline": "Redis",
    "sqlite_pipeline": "SQLite",
    "sqs_pipeline": "SQS",
}
COUNTED = BROKERS[:3]  # brokers that count consumers (SQS does not: no consumer takes a window there)


class Probe:
    """``tqadmin`` run in-process on one test's pipeline: its queues, its health, its jobs."""

    def __init__(
        self, pipeline: Pipeline, tq_json: Tq, capsys: pytest.CaptureFixture[str], name: str = ""
    ) -> None:
        self.pipeline, self.tq_json, self.capsys, self.name = pipeline, tq_json, capsys, name
        self.broker = ("--broker", pipeline.broker_url) if pipeline.broker_url else ()

    def publish(self, jobs: list[dict[str, Any]]) -> None:
        self.pipeline.publish(jobs)
        self.capsys.readouterr()  # what publish printed

    def shown(self) -> dict[str, Any] | None:
        """The queue as ``tqadmin queues --json`` shows it now."""
        code, document, _ = self.tq_json(*self.broker, "queues", "--filter", self.pipeline.queue)
        return verdict(document, self.pipeline.queue) if code == 0 and document["queues"] else None

    def served(self, waiting: bool) -> bool:
        """Whether the queue is shown with a consumer and work waiting (or none)."""
        queue = self.shown()
        return (
            queue is not None
            and queue["consumers"] != 0
            and (queue["ready"] + queue["unacked"] > 0) == waiting
        )

    def health(self, window_s: float = WINDOW_S) -> tuple[int, dict[str, Any], str]:
        """``tqadmin health --window S --filter QUEUE --json``: the exit code, the queue's item, stderr."""
        argv = (*self.broker, "--store", self.pipeline.store_url, "health", "--window", str(window_s))
        code, document, err = self.tq_json(*argv, "--filter", self.pipeline.queue)
        return code, verdict(document, self.pipeline.queue), f"{err}\n{self.pipeline.log_text()}"

    def healthy(self, window_s: float = WINDOW_S) -> dict[str, Any]:
        code, queue, said = self.health(window_s)
        assert code == 0, (queue, said)
        return queue

    def report(self, line: str) -> None:
        with self.capsys.disabled():
            print(f"\nhealth: {line}")


@pytest.fixture(name="probe")
def probe_fixture(
    request: pytest.FixtureRequest, tq_json: Tq, capsys: pytest.CaptureFixture[str]
) -> Iterator[Probe]:
    """A probe on the pipeline fixture named by the test's ``broker`` parameter."""
    yield Probe(request.getfixturevalue(request.param), tq_json, capsys, NAMES[request.param])


def verdict(document: dict[str, Any], queue: str) -> dict[str, Any]:
    return next(q for q in document["queues"] if q["name"] == queue)


def runs(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("probe", BROKERS, indirect=True)
def test_a_worker_whose_task_blocks_on_every_job_stalls_its_queue(probe: Probe, tmp_path: Path) -> None:
    release, ran = tmp_path / "release", tmp_path / "runs"
    probe.pipeline.start_with_tasks(TASKS, "--concurrency", "2", *HEARTBEAT)
    probe.publish(
        [{"task_type": "block", "release": str(release), "runs": str(ran), "id": f"j{i}"} for i in range(4)]
    )
    probe.pipeline.wait_for(lambda: runs(ran) == 2, 60, "both job threads blocked")
    blocked_at = time.monotonic()
    probe.pipeline.wait_for(lambda: probe.served(waiting=True), 30, "the broker's figures")
    shown_s = time.monotonic() - blocked_at
    try:
        code, queue, said = probe.health()
        detected_s = time.monotonic() - blocked_at
    finally:
        release.touch()
    assert (code, queue["verdict"]) == (7, "stalled"), (queue, said)
    assert queue["reason"].startswith("ready 2") or "held unacked" in queue["reason"], queue
    assert ", 1 " in queue["reason"] and " no " in queue["reason"], queue  # who serves it, no completion
    assert detected_s >= WINDOW_S
    probe.report(
        f"blocked tqadmin worker on {probe.name}: stalled"
        f" {detected_s:.1f} s after the block (figures shown after {shown_s:.1f} s, --window {WINDOW_S:g}):"
        f" {queue['reason']}"
    )


@pytest.mark.parametrize("probe", COUNTED, indirect=True)
def test_an_idle_queue_and_a_queue_without_consumers_raise_no_alarm(probe: Probe) -> None:
    probe.publish([{"task_type": "quick", "id": f"j{i}"} for i in range(3)])
    probe.pipeline.wait_for(lambda: (probe.shown() or {}).get("ready") == 3, 30, "the jobs shown")
    queue = probe.healthy()
    assert (queue["verdict"], queue["reason"]) == ("no consumer", "ready 3, no consumer and no live worker")
    probe.pipeline.start_with_tasks(TASKS, *HEARTBEAT)
    probe.pipeline.wait_for(lambda: probe.served(waiting=False), 60, "the queue drained, its worker on")
    assert probe.healthy()["verdict"] == "idle"


@pytest.mark.parametrize("probe", COUNTED, indirect=True)
def test_a_queue_holding_only_delayed_retries_is_idle(probe: Probe, tmp_path: Path) -> None:
    ran = tmp_path / "runs"
    probe.pipeline.start_with_tasks(TASKS, "--backoff-base", "60", "--backoff-cap", "60", *HEARTBEAT)
    probe.publish([{"task_type": "later", "runs": str(ran), "id": f"j{i}"} for i in range(2)])
    probe.pipeline.wait_for(lambda: runs(ran) == 2, 60, "both jobs failed once")
    probe.pipeline.wait_for(
        lambda: probe.served(waiting=False) and (probe.shown() or {}).get("delayed", 0) >= 2,
        30,
        "only the retries left, shown delayed",
    )
    queue = probe.healthy()
    assert queue["verdict"] == "idle" and queue["delayed"] >= 2, queue  # RabbitMQ's tiers' figures lag
    assert queue["reason"] == f"nothing waiting; {queue['delayed']} delayed, not yet due"


@pytest.mark.parametrize("probe", [BROKERS[2], BROKERS[3]], indirect=True)  # an ack rate; the workers' counts
def test_a_slow_queue_that_progresses_is_ok(probe: Probe, tmp_path: Path) -> None:
    """One job every 10 s, a backlog waiting throughout: a completion in every 15 s window."""
    ran = tmp_path / "runs"
    probe.pipeline.start_with_tasks(TASKS, "--concurrency", "1", "--prefetch", "1", *HEARTBEAT)
    probe.publish([{"task_type": "slow", "seconds": 10, "runs": str(ran), "id": f"j{i}"} for i in range(4)])
    probe.pipeline.wait_for(lambda: runs(ran) == 1, 60, "the first job running")
    queue = probe.healthy(window_s=15)
    assert queue["verdict"] == "ok", queue


@pytest.mark.parametrize("probe", COUNTED, indirect=True)
def test_a_burst_that_drains_is_no_alarm(probe: Probe) -> None:
    probe.pipeline.start_with_tasks(TASKS, "--concurrency", "4", *HEARTBEAT)
    probe.publish([{"task_type": "quick", "id": f"j{i}"} for i in range(300)])
    queue = probe.healthy()
    assert queue["verdict"] in ("ok", "idle"), queue


@pytest.mark.rabbitmq
def test_a_raw_consumer_that_takes_its_prefetch_and_never_acks_stalls_its_queue(
    unique: str, tq_json: Tq, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"tqh_{unique}"
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    try:
        channel = connection.channel()
        channel.queue_declare(name, durable=True)
        for i in range(5):
            channel.basic_publish("", name, f'{{"task_type": "t", "id": "{i}"}}'.encode())
        channel.basic_qos(prefetch_count=3)
        channel.basic_consume(name, lambda *_: None)  # takes 3, never acks
        connection.process_data_events(time_limit=1)
        taken_at = time.monotonic()

        def figures() -> bool:
            code, document, _ = tq_json("--broker", AMQP_URL, "queues", "--filter", name)
            return code == 0 and any((q["unacked"], q["consumers"]) == (3, 1) for q in document["queues"])

        deadline = time.monotonic() + 30
        while not figures() and time.monotonic() < deadline:
            connection.process_data_events(time_limit=0.2)
        code, document, err = tq_json(
            "--broker", AMQP_URL, "health", "--window", str(WINDOW_S), "--filter", name
        )
        detected_s = time.monotonic() - taken_at
    finally:
        with contextlib.suppress(Exception):
            connection.channel().queue_delete(name)
        connection.close()
    queue = verdict(document, name)
    assert (code, queue["verdict"]) == (7, "stalled"), (queue, err)
    assert queue["reason"].startswith("ready 2, 3 held unacked for "), queue
    assert ", 1 consumer, no ack " in queue["reason"], queue
    with capsys.disabled():
        print(
            f"\nhealth: raw pika consumer holding its prefetch: stalled {detected_s:.1f} s after it took them"
            f" (--window {WINDOW_S:g}): {queue['reason']}"
        )


@pytest.mark.parametrize("probe", [BROKERS[2]], indirect=True)
def test_where_the_history_covers_the_window_the_verdict_comes_at_once(probe: Probe, tmp_path: Path) -> None:
    """A dashboard records the queue's figures every 5 s while the worker is blocked; ``health`` then judges
    the window from the history and one poll, without watching it."""
    release, ran = tmp_path / "release", tmp_path / "runs"
    probe.pipeline.start_with_tasks(TASKS, "--concurrency", "2", *HEARTBEAT)
    probe.publish(
        [{"task_type": "block", "release": str(release), "runs": str(ran), "id": f"j{i}"} for i in range(4)]
    )
    probe.pipeline.wait_for(lambda: runs(ran) == 2, 60, "both job threads blocked")
    recorder = HistoryRecorder(probe.pipeline.store_url, history_name(None))
    config = BrokerConfig(url=probe.pipeline.broker_url or "")
    try:
        with plugin_for_url(config.url).admin(config) as admin:
            recording_until = time.monotonic() + 2 * HISTORY_WINDOW_S
            while time.monotonic() < recording_until:
                recorder.record_queues(admin.list_queues().queues)
                time.sleep(RECORD_EVERY_S + 0.1)
        started = time.monotonic()
        code, queue, said = probe.health(HISTORY_WINDOW_S)
        took_s = time.monotonic() - started
    finally:
        recorder.close()
        release.touch()
    assert (code, queue["verdict"]) == (7, "stalled"), (queue, said)
    assert "watching" not in said and took_s < HISTORY_WINDOW_S, (took_s, said)
    probe.report(
        f"from the recorded history ({HISTORY_WINDOW_S:g} s window): stalled in {took_s:.1f} s:"
        f" {queue['reason']}"
    )


@pytest.mark.parametrize("probe", [BROKERS[2]], indirect=True)
def test_a_paused_queue_is_paused_not_stalled(probe: Probe, tmp_path: Path) -> None:
    """Work waits, a worker serves the queue and nothing completes: because the queue is paused."""
    probe.pipeline.start_with_tasks(TASKS, *HEARTBEAT)
    probe.pipeline.wait_for(lambda: probe.served(waiting=False), 60, "the worker consuming")
    store = ("--store", probe.pipeline.store_url)
    code, _, err = probe.tq_json(*probe.broker, *store, "pause", probe.pipeline.queue, "--for", "10m",
                                 "--reason", "vendor 503", "--yes")  # fmt: skip
    assert code == 0, err
    time.sleep(2)  # a heartbeat or two: the worker has read the pause
    probe.publish([{"task_type": "quick", "id": f"j{i}"} for i in range(3)])
    queue = probe.healthy()
    assert queue["verdict"] == "paused" and queue["reason"].endswith(": vendor 503"), queue


@pytest.mark.parametrize("probe", [BROKERS[2]], indirect=True)
def test_a_wedged_worker_is_named_and_unhealthy_in_the_human_output(
    probe: Probe, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[profiles.h]\nwedged_no_history_s = 1\nwedged_min_s = 1\nstall_after_s = 3\n")
    release, ran = tmp_path / "release", tmp_path / "runs"
    probe.pipeline.start_with_tasks(TASKS, "--concurrency", "1", *HEARTBEAT)
    probe.publish(
        [{"task_type": "block", "release": str(release), "runs": str(ran), "id": f"j{i}"} for i in range(2)]
    )
    probe.pipeline.wait_for(lambda: runs(ran) == 1, 60, "the job thread blocked")
    time.sleep(2)  # past the 1 s limit
    try:
        argv = ["--config", str(config), "--profile", "h", *probe.broker, "--store", probe.pipeline.store_url]
        code = main([*argv, "health", "--filter", probe.pipeline.queue])
    finally:
        release.touch()
    out = capsys.readouterr().out
    assert code == 7, out
    lines = out.splitlines()
    assert lines[0].split() == ["QUEUE", "VERDICT", "WHY"]
    assert lines[1].split()[:2] == [probe.pipeline.queue, "stalled"], out
    assert any(line.startswith("wedged worker ") and "all 1 job threads stuck" in line for line in lines), out
    assert lines[-1] == f"unhealthy: {probe.pipeline.queue} stalled, 1 wedged worker(s)", out


@pytest.mark.parametrize("probe", [BROKERS[2]], indirect=True)
def test_a_backlog_growing_faster_than_it_drains_is_degraded(probe: Probe, tmp_path: Path) -> None:
    """Eight jobs a second for a worker that runs two: completions go on, the backlog rises throughout."""
    url = probe.pipeline.broker_url or ""
    probe.pipeline.start_with_tasks(TASKS, "--concurrency", "1", "--prefetch", "1", *HEARTBEAT)
    stop = threading.Event()

    def publish() -> None:
        with plugin_for_url(url).transport(BrokerConfig(url=url)) as transport:
            transport.declare(probe.pipeline.queue)
            n = 0
            while not stop.wait(0.25):
                jobs = [
                    {"task_type": "slow", "seconds": 0.5, "id": f"{probe.pipeline.queue}-{n + i}"}
                    for i in (0, 1)
                ]
                transport.publish([(probe.pipeline.queue, Message(json.dumps(job).encode())) for job in jobs])
                n += 2

    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    try:
        probe.pipeline.wait_for(lambda: probe.served(waiting=True), 30, "the backlog building")
        code, queue, said = probe.health(window_s=8)
    finally:
        stop.set()
        publisher.join(timeout=30)
    assert (code, queue["verdict"]) == (7, "degraded"), (queue, said)
    assert queue["reason"].startswith("backlog growing from "), queue


@pytest.mark.parametrize("probe", COUNTED, indirect=True)
def test_a_queue_whose_waiting_task_type_is_paused_is_paused_not_stalled(probe: Probe) -> None:
    """The worker sets the paused type's jobs aside (given back, or a short broker-side delay: docs/pause.md):
    nothing runs, and that is the pause."""
    probe.pipeline.start_with_tasks(TASKS, *HEARTBEAT)
    probe.pipeline.wait_for(lambda: probe.served(waiting=False), 60, "the worker consuming")
    store = ("--store", probe.pipeline.store_url)
    code, _, err = probe.tq_json(*probe.broker, *store, "pause", probe.pipeline.queue, "--task-type", "quick",
                                 "--for", "10m", "--reason", "vendor 503", "--yes")  # fmt: skip
    assert code == 0, err
    time.sleep(2)  # a heartbeat or two: the worker has read the pause
    probe.publish([{"task_type": "quick", "id": f"j{i}"} for i in range(3)])
    probe.pipeline.wait_for(lambda: (probe.shown() or {}).get("delayed", 0) >= 3, 30, "set aside, shown")
    queue = probe.healthy()
    assert queue["verdict"] == "paused", queue
    assert queue["reason"].startswith("task type quick paused 9m"), queue


@pytest.mark.parametrize("probe", [BROKERS[3]], indirect=True)
def test_an_sqs_queue_that_nobody_receives_from_is_no_consumer_after_a_window(probe: Probe) -> None:
    """SQS counts no consumers: work ready through a window, none in flight and none leaving is."""
    probe.publish([{"task_type": "quick", "id": f"j{i}"} for i in range(3)])
    queue = probe.healthy()
    assert queue["verdict"] == "no consumer", queue
    assert queue["reason"].startswith("ready 3 for ") and queue["reason"].endswith(
        ", nothing received, no worker known"
    )
