"""One demo run: start the workers and the traffic, keep them going, stop everything in order, summarise.

Stopping is ordered so the summary can balance: first the publisher stops, then the workers drain what is
left (retries included) for up to ``drain_s``, and only then are they sent SIGTERM. SIGINT and SIGTERM to
the demo itself only end the waiting early; the ordered stop still runs, so Ctrl-C gives a summary too.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TypeVar

from tqadmin.demo.chaos import Chaos
from tqadmin.demo.cron import CronCount, CronTally
from tqadmin.demo.layout import Layout
from tqadmin.demo.processes import Supervisor
from tqadmin.demo.summary import BrokerView, Summary, Telemetry
from tqadmin.demo.traffic import Sink, Traffic
from tqadmin.errors import TqadminError
from tqadmin.files.private import make_private_folder

T = TypeVar("T")
TASKS_MODULE = "tqadmin.demo.tasks"
POLL_S = 0.5


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """The ``tqadmin worker`` options every demo worker gets: short backoffs so retries show up quickly, and
    a cap of one second, which keeps the retry delay queues to five per work queue on the dashboard."""

    concurrency: int = 4
    max_retries: int = 3
    backoff_base_s: float = 0.2
    backoff_cap_s: float = 1.0
    job_timeout_s: float = 2.0


@dataclass(frozen=True, slots=True)
class Wiring:
    """What the demo needs from the pipeline, injected so each part can be tested with fakes."""

    sink_factory: Callable[[], Sink]
    telemetry: Callable[[Layout], Telemetry]
    # The broker's counts; given the counts at the start, also the reasons of the dead letters added since.
    broker_view: Callable[[Layout, BrokerView | None], BrokerView]
    dashboard_telemetry: Callable[[], object] | None = None  # a TelemetrySource for the TUI
    cron: CronTally | None = None  # what the demo's cron fired, when it runs one


class WorkersGaveUp(TqadminError):
    """Every worker process exited and kept exiting: nothing would consume the demo's queues."""


def worker_command(queue: str, options: WorkerOptions) -> list[str]:
    """``tqadmin worker`` for one queue, run with this interpreter so the demo needs nothing on PATH."""
    return [
        sys.executable,
        "-m",
        "tqadmin.cli",
        "worker",
        "--queue",
        queue,
        "--tasks",
        TASKS_MODULE,
        "--concurrency",
        str(options.concurrency),
        "--max-retries",
        str(options.max_retries),
        "--backoff-base",
        str(options.backoff_base_s),
        "--backoff-cap",
        str(options.backoff_cap_s),
        "--job-timeout",
        str(options.job_timeout_s),
    ]


def worker_commands(layout: Layout, options: WorkerOptions) -> dict[str, list[str]]:
    """One command per worker, named after its number and queue (``worker-1 (demo.images)``)."""
    return {
        f"worker-{i + 1} ({queue})": worker_command(queue, options)
        for i, queue in enumerate(layout.worker_queues)
    }


def worker_env(base: Mapping[str, str], urls: Mapping[str, str | None], chaos: Chaos) -> dict[str, str]:
    """The workers' environment: URLs through variables (never argv, where ``ps`` shows passwords)."""
    env = dict(base)
    env.update({name: value for name, value in urls.items() if value})
    env.update(chaos.to_env())
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Demo:
    """The run itself; ``start``, then ``wait`` (or let a UI run), then ``finish`` for the summary."""

    def __init__(
        self,
        layout: Layout,
        wiring: Wiring,
        supervisor: Supervisor,
        traffic: Traffic,
        *,
        failure_rate: float,
        drain_s: float = 15.0,
        settle_s: float = 0.0,
        log_dir: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        progress: Callable[[str], None] = lambda text: None,
        cron: Supervisor | None = None,
    ) -> None:
        self.layout = layout
        self.wiring = wiring
        self.supervisor = supervisor
        self.cron = cron  # the cron instances, stopped with the publisher
        self.traffic = traffic
        self.failure_rate = failure_rate
        self.drain_s = drain_s
        self.settle_s = settle_s
        self.log_dir = log_dir
        self.stop_requested = threading.Event()
        self.hurry = threading.Event()  # a second Ctrl-C: skip the drain
        self._traffic_stop = threading.Event()
        self._traffic_thread = threading.Thread(
            target=traffic.run, args=(self._traffic_stop,), name="demo-traffic", daemon=True
        )
        self._clock = clock
        self._progress = progress
        self.baseline = BrokerView()
        self._started_at = 0.0

    def start(self) -> None:
        """Note what the demo's queues already hold (an earlier run's leftovers), then start everything."""
        self.baseline = self.wiring.broker_view(self.layout, None)
        if self.wiring.cron is not None:
            self.wiring.cron.begin(time.time())
        self._started_at = self._clock()
        self.supervisor.start()
        if self.cron is not None:
            self.cron.start()
        self._traffic_thread.start()

    def wait(self, duration_s: float | None, report_every_s: float | None = None) -> None:
        """Supervise until ``duration_s`` passed or a stop was requested (signal, UI exit), reporting
        progress every ``report_every_s`` (headless only: with the dashboard the terminal is the app's)."""
        deadline = None if duration_s is None else self._clock() + duration_s
        next_report = None if report_every_s is None else self._clock() + report_every_s
        while not self.stop_requested.is_set():
            self.supervisor.check()
            if self.cron is not None:
                self.cron.check()
            if next_report is not None and report_every_s is not None and self._clock() >= next_report:
                next_report += report_every_s
                self._progress(self._status())
            if self.supervisor.gave_up():
                raise WorkersGaveUp(
                    "every demo worker exited and kept exiting; "
                    + (self.supervisor.notes[-1] if self.supervisor.notes else "see the worker logs")
                    + (f" (logs in {self.log_dir})" if self.log_dir else "")
                )
            remaining = None if deadline is None else deadline - self._clock()
            if remaining is not None and remaining <= 0:
                return
            self.stop_requested.wait(POLL_S if remaining is None else min(POLL_S, remaining))

    def _status(self) -> str:
        elapsed = f"{self._clock() - self._started_at:.0f} s: published {self.traffic.counts().published}"
        workers = f"{self.supervisor.alive()} worker(s) running"
        try:
            t = self.wiring.telemetry(self.layout).total
        except TqadminError as exc:  # a store hiccup is reported, not fatal to the demo
            return f"{elapsed}; {workers}; telemetry unavailable: {exc}"
        return (
            f"{elapsed}, done {t.done}, retried {t.retried}, dead-lettered {t.dead_lettered}, "
            f"deduplicated {t.deduplicated}; {workers}"
        )

    def finish(self) -> Summary:
        """Stop publishing, let the workers drain, stop them, and report.

        A broker or store that went away during the run does not cost the summary: what could not be read
        is said in its notes.
        """
        notes: list[str] = []
        try:
            self._traffic_stop.set()
            if self._traffic_thread.is_alive():
                self._traffic_thread.join()
            if self.cron is not None:
                self.cron.stop()
            notes += self._drain()
        except TqadminError as exc:
            notes.append(f"draining stopped: {exc}")
        finally:
            self.supervisor.stop()
        duration_s = self._clock() - self._started_at
        if notes:
            # Unfinished messages may sit in retry delay queues; let them expire back into the work queues,
            # where the broker counts them exactly.
            time.sleep(self.settle_s)
        telemetry = _read(lambda: self.wiring.telemetry(self.layout), Telemetry(), "worker telemetry", notes)
        broker = _read(
            lambda: self.wiring.broker_view(self.layout, self.baseline), BrokerView(), "queue figures", notes
        )
        cron = _read(self._cron_count, CronCount(), "the cron's ticks", notes)
        return Summary(
            duration_s=duration_s,
            queues=self.layout.queues,
            workers=len(self.supervisor.children),
            failure_rate=self.failure_rate,
            traffic=self.traffic.counts(),
            telemetry=telemetry,
            broker=broker,
            baseline=self.baseline,
            log_dir=str(self.log_dir) if self.log_dir else "",
            notes=(*self.supervisor.notes, *(self.cron.notes if self.cron else ()), *notes),
            cron=cron,
        )

    def _cron_count(self) -> CronCount:
        return self.wiring.cron.read() if self.wiring.cron is not None else CronCount()

    def _drain(self) -> list[str]:
        """Wait until the workers' telemetry accounts for every confirmed message, or ``drain_s`` passed.

        The workers' own counters are the measure (not queue depths, which the management API refreshes only
        every few seconds): a message is finished once it is done, dead-lettered or deduplicated.
        """
        deadline = self._clock() + self.drain_s
        published = self.traffic.counts().published + self._cron_count().fired + self.baseline.left_in_queues
        left = published - _finished(self.wiring.telemetry(self.layout))
        if left > 0:
            self._progress(
                f"publisher stopped; letting the workers finish {left} message(s) "
                f"(up to {self.drain_s:.0f} s, Ctrl-C again to skip)"
            )
        while left > 0 and self._clock() < deadline and self.supervisor.alive() and not self.hurry.is_set():
            self.supervisor.check()
            self.hurry.wait(POLL_S)
            left = published - _finished(self.wiring.telemetry(self.layout))
        if left > 0:
            return [
                f"the workers were stopped with {left} message(s) unfinished (drain skipped or past --drain)"
            ]
        return []


def _read(call: Callable[[], T], default: T, what: str, notes: list[str]) -> T:
    try:
        return call()
    except TqadminError as exc:
        notes.append(f"{what} could not be read: {exc}")
        return default


def _finished(telemetry: Telemetry) -> int:
    total = telemetry.total
    return total.done + total.dead_lettered + total.deduplicated


@contextmanager
def stop_on_signals(demo: Demo) -> Iterator[None]:
    """SIGINT and SIGTERM request the orderly stop instead of killing the demo; a second one skips the
    drain (the workers are still stopped properly)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if demo.stop_requested.is_set():
            demo.hurry.set()
        demo.stop_requested.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def default_log_dir(prefix: str, keep: int = 20) -> Path:
    """A fresh directory for this run's worker logs (kept: they explain any failure in the summary); only
    the ``keep`` most recent runs' logs are kept, so the state directory does not grow forever."""
    base = Path(os.environ.get("XDG_STATE_HOME", "~/.local/state")).expanduser() / "tqadmin" / "demo"
    path = base / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    make_private_folder(path)  # worker logs quote job ids and errors: private like the broker's file
    runs = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in runs[keep:]:
        shutil.rmtree(old, ignore_errors=True)
    return path
