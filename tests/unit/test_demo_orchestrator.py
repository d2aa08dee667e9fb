"""A demo run with the pipeline faked: ordered stop, drain, summary, and the workers giving up."""

import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tqadmin.demo.chaos import Chaos
from tqadmin.demo.cron import CronCount
from tqadmin.demo.dashboard import run_with_dashboard
from tqadmin.demo.layout import Layout, plan
from tqadmin.demo.orchestrator import Demo, Wiring, WorkerOptions, WorkersGaveUp, worker_commands, worker_env
from tqadmin.demo.processes import Supervisor
from tqadmin.demo.summary import BrokerView, Summary, Telemetry
from tqadmin.demo.traffic import Traffic, TrafficCounts, TrafficMessage
from tqadmin.errors import Unreachable
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.histogram import Histogram

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
QUITTER = [sys.executable, "-c", "import sys; print('worker: cannot import task module'); sys.exit(2)"]


class ConfirmingSink:
    def publish(self, messages: Sequence[TrafficMessage], rate: float) -> tuple[list[bool], str]:
        return [True] * len(messages), ""

    def close(self) -> None:
        pass


class CatchingUpWorkers:
    """Telemetry that lags the publisher for two readings, then accounts for everything it published."""

    def __init__(self) -> None:
        self.traffic: Traffic | None = None
        self.readings = 0

    def __call__(self, layout: Layout) -> Telemetry:
        self.readings += 1
        assert self.traffic is not None
        published = self.traffic.counts().published
        done = published if self.readings > 2 else max(0, published - 3)
        return Telemetry(total=TaskStats(done=done))


def make_demo(tmp_path: Path, command: list[str], workers: CatchingUpWorkers) -> Demo:
    layout = plan("t", 2)
    wiring = Wiring(
        sink_factory=ConfirmingSink,
        telemetry=workers,
        broker_view=lambda layout, baseline: BrokerView(
            dead_letters={"t.tasks.dlq": 2}, reasons={"fatal": 2}
        ),
    )
    supervisor = Supervisor({"w1": command, "w2": command}, dict(os.environ), tmp_path, max_restarts=0)
    workers.traffic = Traffic(layout, ConfirmingSink, 20.0, 1)
    return Demo(layout, wiring, supervisor, workers.traffic, failure_rate=0.1, drain_s=10)


def test_the_demo_stops_publishing_drains_then_stops_the_workers(tmp_path: Path) -> None:
    workers = CatchingUpWorkers()
    demo = make_demo(tmp_path, SLEEPER, workers)
    demo.start()
    demo.wait(0.3)
    summary = demo.finish()
    assert workers.readings == 4  # two lagging, one caught up, one for the summary
    assert summary.balanced
    assert demo.supervisor.alive() == 0
    assert summary.traffic.published > 0
    assert summary.broker.left_in_queues == 0
    assert summary.notes == ()


def test_a_stop_request_ends_the_wait_early(tmp_path: Path) -> None:
    demo = make_demo(tmp_path, SLEEPER, CatchingUpWorkers())
    demo.start()
    time.sleep(0.1)
    demo.stop_requested.set()
    demo.hurry.set()
    demo.wait(60)
    summary = demo.finish()
    assert summary.duration_s < 30
    assert summary.notes == (
        "the workers were stopped with 3 message(s) unfinished (drain skipped or past --drain)",
    )


def test_workers_that_keep_exiting_end_the_demo_with_their_last_words(tmp_path: Path) -> None:
    demo = make_demo(tmp_path, QUITTER, CatchingUpWorkers())
    demo.start()
    with pytest.raises(WorkersGaveUp, match="cannot import task module"):
        demo.wait(30)
    demo.finish()


def test_workers_get_the_urls_through_the_environment_not_argv() -> None:
    env = worker_env({"PATH": "/bin"}, {"TQADMIN_BROKER_URL": "amqp://u:secret@h/", "X": None}, Chaos())
    commands = worker_commands(plan("demo", 4), WorkerOptions())
    assert env["TQADMIN_BROKER_URL"] == "amqp://u:secret@h/"
    assert "X" not in env
    assert not any("secret" in part for cmd in commands.values() for part in cmd)
    assert list(commands) == [
        "worker-1 (demo.images)",
        "worker-2 (demo.emails)",
        "worker-3 (demo.reports)",
        "worker-4 (demo.payments)",
    ]
    assert commands["worker-1 (demo.images)"][1:4] == ["-m", "tqadmin.cli", "worker"]


def run_times(*seconds: float) -> Histogram:
    histogram = Histogram()
    for value in seconds:
        histogram.record(value)
    return histogram


def summary(**broker: object) -> Summary:
    return Summary(
        duration_s=30.2,
        queues=("demo.images", "demo.emails"),
        workers=4,
        failure_rate=0.1,
        traffic=TrafficCounts(
            jobs={"a": "resize_image", "b": "send_email"}, duplicates=1, malformed={"x": 1}
        ),
        telemetry=Telemetry(
            total=TaskStats(done=2, dead_lettered=1, deduplicated=1, run=run_times(*[0.012] * 50, 2.5, 2.5)),
            task_types={"resize_image": TaskStats(done=1), "send_email": TaskStats(done=1)},
        ),
        broker=BrokerView(**broker),  # type: ignore[arg-type]
    )


def test_the_summary_balances_when_every_message_is_somewhere() -> None:
    balanced = summary(dead_letters={"demo.images.dlq": 1}, reasons={"malformed": 1})
    assert balanced.balanced
    text = balanced.render()
    assert (
        "published 4 = done 2 + dead-lettered 1 + deduplicated 1 + left 0: every message accounted for"
        in text
    )
    assert "(1 new in the dead-letter queues: malformed 1)" in text
    assert "12 ms" in text and "2.4" in text
    document = balanced.to_json()
    assert document["published"] == 4
    assert document["run"]["p50"] == pytest.approx(0.012, rel=0.02)
    assert document["run"]["p99"] == pytest.approx(2.5, rel=0.02)
    assert set(document) >= {"done", "retried", "dead_lettered", "deduplicated", "wait", "task_types"}


def test_an_earlier_runs_leftovers_are_counted_apart() -> None:
    earlier = BrokerView(left_in_queues=2, dead_letters={"demo.images.dlq": 5})
    carried = dataclasses.replace(
        summary(dead_letters={"demo.images.dlq": 6}, reasons={"malformed": 1}),
        baseline=earlier,
        telemetry=Telemetry(total=TaskStats(done=4, dead_lettered=1, deduplicated=1)),
    )
    assert carried.balanced
    assert carried.new_dead_letters == 1
    text = carried.render()
    assert "published 4 + 2 already queued = done 4 + dead-lettered 1 + deduplicated 1 + left 0" in text
    assert "(1 new in the dead-letter queues, beside 5 from earlier runs: malformed 1)" in text


def test_the_jobs_the_cron_fired_are_counted_in() -> None:
    with_cron = dataclasses.replace(
        summary(dead_letters={"demo.images.dlq": 1}, reasons={"malformed": 1}),
        telemetry=Telemetry(total=TaskStats(done=4, dead_lettered=1, deduplicated=1)),
        cron=CronCount(fired=2),
    )
    assert with_cron.balanced
    assert (
        "published 4 + scheduled 2 = done 4 + dead-lettered 1 + deduplicated 1 + left 0" in with_cron.render()
    )
    assert with_cron.to_json()["scheduled"] == 2
    assert not dataclasses.replace(with_cron, cron=CronCount(fired=3)).balanced
    assert dataclasses.replace(with_cron, cron=CronCount(fired=2, pending=1)).balanced


def test_the_summary_says_so_when_messages_are_missing() -> None:
    lost = dataclasses.replace(summary(), telemetry=Telemetry())
    assert not lost.balanced
    assert "MISMATCH" in lost.render()


class FakeApp:
    """Blocks in ``run`` until ``exit`` is called from the supervising thread, like a Textual app."""

    def __init__(self, quit_after_s: float | None = None) -> None:
        self.exited = threading.Event()
        self.quit_after_s = quit_after_s

    def run(self) -> None:
        self.exited.wait(self.quit_after_s if self.quit_after_s is not None else 30)

    def exit(self) -> None:
        self.exited.set()

    def call_from_thread(self, fn: Callable[[], None]) -> None:
        fn()


def test_with_the_dashboard_the_demo_ends_the_app_when_its_duration_is_over(tmp_path: Path) -> None:
    app = FakeApp()
    summary = run_with_dashboard(make_demo(tmp_path, SLEEPER, CatchingUpWorkers()), lambda: app, 0.3)
    assert app.exited.is_set()
    assert summary.traffic.published > 0


def test_quitting_the_dashboard_stops_the_demo(tmp_path: Path) -> None:
    demo = make_demo(tmp_path, SLEEPER, CatchingUpWorkers())
    run_with_dashboard(demo, lambda: FakeApp(quit_after_s=0.2), None)
    assert demo.supervisor.alive() == 0


def test_headless_progress_is_reported_while_the_demo_runs(tmp_path: Path) -> None:
    lines: list[str] = []
    demo = make_demo(tmp_path, SLEEPER, CatchingUpWorkers())
    demo._progress = lines.append
    demo.start()
    demo.wait(0.35, report_every_s=0.1)
    demo.finish()
    assert any("published" in line and "2 worker(s) running" in line for line in lines)


def test_a_broker_gone_at_the_end_still_gives_a_summary_that_says_so(tmp_path: Path) -> None:
    def unreachable(layout: Layout, baseline: BrokerView | None) -> BrokerView:
        if baseline is None:
            return BrokerView()
        raise Unreachable("cannot connect to RabbitMQ at amqp://127.0.0.1:5672/")

    demo = make_demo(tmp_path, SLEEPER, CatchingUpWorkers())
    demo.wiring = dataclasses.replace(demo.wiring, broker_view=unreachable)
    demo.start()
    demo.wait(0.2)
    summary = demo.finish()
    assert summary.notes == (
        "queue figures could not be read: cannot connect to RabbitMQ at amqp://127.0.0.1:5672/",
    )
    assert demo.supervisor.alive() == 0


def test_a_dashboard_that_crashes_is_said_in_the_summary(tmp_path: Path) -> None:
    app = FakeApp(quit_after_s=0.1)
    app.return_code = 1  # type: ignore[attr-defined]
    summary = run_with_dashboard(make_demo(tmp_path, SLEEPER, CatchingUpWorkers()), lambda: app, None)
    assert summary.notes[-1] == "the dashboard ended with an error (exit code 1)"
