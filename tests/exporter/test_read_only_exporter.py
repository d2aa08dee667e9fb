"""A read-only profile's exporter writes nothing: after its polls (queues, workers, cron; no history, which a
read-only profile never records), the SQLite file is byte for byte as it was and nothing was created beside
it, be it tqadmin's own file, another application's (served empty), or one the user may read but not write
(the real ``tqadmin exporter`` run as such a user, scraped over HTTP)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.exporter.test_exporter_brokers import free_port
from tests.support.sqlite_files import (
    DLQ,
    QUEUE,
    as_reader,
    data_folder,
    foreign_file,
    tqadmin_file,
    unchanged,
    unwritable,
)
from tqadmin.config import Overrides, resolve
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.telemetry import metric_names as names


def poll_twice(db: Path, monkeypatch: pytest.MonkeyPatch) -> ProfilePoller:
    """A read-only profile's poller on ``db`` after two polls (the second over connections it keeps)."""
    monkeypatch.setenv("TQADMIN_BROKER_URL", f"sqlite:///{db}")
    monkeypatch.setenv("TQADMIN_STORE_URL", f"sqlite:///{db}")
    poller = ProfilePoller(resolve(Overrides(read_only=True)), 5.0)
    assert poller.poll() and poller.poll()
    poller.close()
    return poller


def test_a_read_only_exporter_serves_a_tqadmin_file_and_leaves_it_byte_for_byte(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = data_folder(isolated_env) / "tq.db"
    tqadmin_file(db)
    with unchanged(db.parent):
        reading = poll_twice(db, monkeypatch).reading()
    assert reading.up and reading.queues is not None
    assert {q.name for q in reading.queues} == {QUEUE, DLQ}
    assert reading.tasks["send_email"].done == 5 and reading.workers["live"] == 1
    assert reading.cron is not None and [row.name for row in reading.cron.rows] == ["nightly"]


def test_a_read_only_exporter_serves_another_applications_file_empty_and_changes_nothing(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = data_folder(isolated_env) / "theirs.db"
    foreign_file(db)
    with unchanged(db.parent):
        reading = poll_twice(db, monkeypatch).reading()
    assert reading.up and reading.queues == () and reading.tasks == {} and not reading.workers


def served(port: int) -> tuple[dict[str, float], list[float]]:
    """Each queue's depth and ``tqadmin_up`` as the exporter on ``port`` serves them (nothing while it is not
    serving yet)."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    except httpx.HTTPError:
        return {}, []
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    depths = {s.labels["queue"]: s.value for s in samples if s.name == names.QUEUE_MESSAGES}
    return depths, [s.value for s in samples if s.name == names.UP]


def test_the_exporter_run_by_a_user_who_may_not_write_the_file_serves_it(isolated_env: Path) -> None:
    db = data_folder(isolated_env) / "tq.db"
    tqadmin_file(db)
    port = free_port()
    url = f"sqlite:///{db}"
    command = [sys.executable, "-m", "tqadmin.cli", "--read-only", "--broker", url, "--store", url]
    command += ["exporter", "--listen", f"127.0.0.1:{port}", "--interval", "0.2"]
    with unwritable(db), unchanged(db.parent):
        exporter = subprocess.Popen(
            as_reader(command),
            env=dict(os.environ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while QUEUE not in (depths := served(port))[0]:
                assert exporter.poll() is None, exporter.communicate()[1]
                assert time.monotonic() < deadline, "the exporter never served the queue"
                time.sleep(0.2)
            assert depths == ({QUEUE: 2.0, DLQ: 2.0}, [1.0])
            os.killpg(exporter.pid, signal.SIGTERM)
            assert exporter.wait(timeout=60) == 0
        finally:
            if exporter.poll() is None:
                os.killpg(exporter.pid, signal.SIGKILL)
                exporter.wait()
    assert "warning" not in (exporter.stderr.read() if exporter.stderr else "")
