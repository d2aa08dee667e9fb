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
from sqlite_files import (
    DLQ,
    QUEUE,
    as_reader,
    foreign_file,
    made_read_only,
    permissions_bind,
    state,
    tqadmin_file,
    writable_again,
)

from tests.exporter.test_exporter_brokers import free_port
from tqadmin.config import Overrides, resolve
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.telemetry import metric_names as names


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "data"
    made.mkdir()
    return made


def poll_twice(db: Path, monkeypatch: pytest.MonkeyPatch) -> ProfilePoller:
    """A read-only profile's poller on ``db`` after two polls (the second over connections it keeps)."""
    monkeypatch.setenv("TQADMIN_BROKER_URL", f"sqlite:///{db}")
    monkeypatch.setenv("TQADMIN_STORE_URL", f"sqlite:///{db}")
    poller = ProfilePoller(resolve(Overrides(read_only=True)), 5.0)
    assert poller.poll() and poller.poll()
    poller.close()
    return poller


def test_a_read_only_exporter_serves_a_tqadmin_file_and_leaves_it_byte_for_byte(
    isolated_env: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = folder / "tq.db"
    tqadmin_file(db)
    before = state(folder)
    reading = poll_twice(db, monkeypatch).reading()
    assert reading.up and reading.queues is not None
    assert {q.name for q in reading.queues} == {QUEUE, DLQ}
    assert reading.tasks["send_email"].done == 5 and reading.workers["live"] == 1
    assert reading.cron is not None and [row.name for row in reading.cron.rows] == ["nightly"]
    assert state(folder) == before


def test_a_read_only_exporter_serves_another_applications_file_empty_and_changes_nothing(
    isolated_env: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = folder / "theirs.db"
    foreign_file(db)
    before = state(folder)
    reading = poll_twice(db, monkeypatch).reading()
    assert reading.up and reading.queues == () and reading.tasks == {} and not reading.workers
    assert state(folder) == before


def test_the_exporter_run_by_a_user_who_may_not_write_the_file_serves_it(
    isolated_env: Path, folder: Path
) -> None:
    reason = permissions_bind()
    if reason is not None:
        pytest.skip(reason)
    db = folder / "tq.db"
    tqadmin_file(db)
    made_read_only(db)
    before = state(folder)
    port = free_port()
    url = f"sqlite:///{db}"
    command = [sys.executable, "-m", "tqadmin.cli", "--read-only", "--broker", url, "--store", url]
    exporter = subprocess.Popen(
        as_reader([*command, "exporter", "--listen", f"127.0.0.1:{port}", "--interval", "0.2"]),
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        served: dict[str, float] = {}
        while QUEUE not in served:
            assert exporter.poll() is None, exporter.communicate()[1]
            assert time.monotonic() < deadline, "the exporter never served the queue"
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            except httpx.HTTPError:
                time.sleep(0.2)
                continue
            samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
            served = {s.labels["queue"]: s.value for s in samples if s.name == names.QUEUE_MESSAGES}
            up = [s.value for s in samples if s.name == names.UP]
            time.sleep(0.2)
        assert served == {QUEUE: 2.0, DLQ: 2.0} and up == [1.0]
        os.killpg(exporter.pid, signal.SIGTERM)
        assert exporter.wait(timeout=60) == 0
        assert "warning" not in (exporter.stderr.read() if exporter.stderr else "")
        assert state(folder) == before
    finally:
        if exporter.poll() is None:
            os.killpg(exporter.pid, signal.SIGKILL)
            exporter.wait()
        writable_again(db)
