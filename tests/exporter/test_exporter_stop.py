"""SIGTERM ends ``tqadmin exporter`` within its stop bound (docs/exporter.md, "Stopping") whatever its poll is
doing, with exit 0 and its history whole: a poll half-way through a listing that would take many minutes
(an SQS endpoint that lists its queues and then stops answering the per-queue calls) is not waited for, and a
history write is either done or not started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.hanging_sqs import HangingSqs
from tests.support.sqs_server import BROKER_URL, CREDENTIALS
from tqadmin.files.access import Access
from tqadmin.reading.recording import HistoryRecorder
from tqadmin.store import open_store
from tqadmin.store.factory import open_history
from tqadmin.store.history.base import TIERS, HistoryStore, Recorded

CALL_TIMEOUT_S = 60  # --timeout: each hung call would hold the exit this long, 5 of them per pool thread
DEADLINE_S = 30.0  # a hang guard, not a speed: the stop is bounded by 5 s (STOP_WAIT_S)


@pytest.fixture
def hanging_sqs() -> Iterator[HangingSqs]:
    server = HangingSqs()
    yield server
    server.close()


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {DEADLINE_S:g} s: {what}"
        time.sleep(0.05)


def test_sigterm_mid_listing_ends_the_exporter_with_exit_0_and_the_history_of_the_last_poll_whole(
    isolated_env: Path, hanging_sqs: HangingSqs
) -> None:
    store_url = f"sqlite:///{isolated_env / 'store.db'}"
    open_store(store_url, access=Access.CREATE).close()  # a worker made it: the exporter records there
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": hanging_sqs.url}
    command = [sys.executable, "-m", "tqadmin.cli", "--broker", BROKER_URL, "--store", store_url]
    command += ["--timeout", str(CALL_TIMEOUT_S), "exporter", "--listen", "127.0.0.1:0", "--interval", "1"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if re.search(r"serving http://\S+/metrics", line):
                break
        until(lambda: hanging_sqs.held > 0, "a second listing under way, its calls held")
        process.send_signal(signal.SIGTERM)
        _, said = process.communicate(timeout=DEADLINE_S)
    finally:
        if process.returncode is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, said
    assert "Traceback" not in said
    assert "the poll of default was still under way 5 s after the signal and is not waited for" in said
    history = open_history(store_url, access=Access.READ)
    try:
        points = history.queue_history("default", "q-000", TIERS[0])
    finally:
        history.close()
    assert [figures["messages"] for _, figures in points] == [3], "the first listing's point, recorded once"


class _Held:
    """A history whose queue write waits until released, as a store slow to answer would."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.writes = 0

    def record_queues(self, profile: str, now_s: float, stats: Any) -> Recorded:
        self.entered.set()
        self.release.wait(DEADLINE_S)
        self.writes += 1
        return Recorded(len(stats))

    def close(self) -> None:
        pass


def test_a_stopped_recorder_waits_for_the_write_under_way_and_starts_none_after() -> None:
    held = _Held()
    recorder = HistoryRecorder("sqlite:///unused.db", "prod", connect=lambda: cast(HistoryStore, held))
    writing = threading.Thread(target=recorder.record_queues, args=([],))
    writing.start()
    assert held.entered.wait(DEADLINE_S)
    assert recorder.stop(0.05) is False, "the write under way is not cut: stop says it still runs"
    held.release.set()
    writing.join(DEADLINE_S)
    assert recorder.stop(DEADLINE_S) is True
    recorder.record_queues([])  # after the stop: not started
    assert held.writes == 1
