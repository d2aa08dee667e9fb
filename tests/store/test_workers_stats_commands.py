"""`tqadmin workers` and `tqadmin stats` end to end: snapshots written into the store, read by the CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from storekit import StoreFactory

from tqadmin import cli
from tqadmin.store.completion.base import Retention
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.snapshot import WorkerSnapshot

STARTED_AT = time.time() - 60  # one process per worker id: its start time never changes


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _snapshot(worker: str, telemetry: Telemetry, current: tuple[str, ...] = ()) -> WorkerSnapshot:
    now = time.time()
    return WorkerSnapshot(worker, "box", 7, ("orders",), STARTED_AT, now, current, telemetry.read())


def test_workers_lists_live_and_dead_workers_with_age_current_job_and_counts(
    stores: StoreFactory, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = stores.make()
    busy = Telemetry()
    for _ in range(3):
        busy.finished("orders", "charge", 0.1, ok=True)
    busy.finished("orders", "charge", 0.1, ok=False)
    busy.retried("orders", "charge")
    busy.deduplicated("orders", "charge")
    store.beat(_snapshot("w-dead", Telemetry()), ttl_s=0.01)
    store.beat(_snapshot("w-busy", busy, ("job-42",)), ttl_s=30)
    time.sleep(0.1)

    code, out, err = _run(capsys, "workers", "--json", "--store", stores.url)
    assert (code, err) == (0, "")
    workers = {w["name"]: w for w in json.loads(out)["workers"]}
    assert set(workers) == {"w-dead", "w-busy"}
    busy_row, dead_row = workers["w-busy"], workers["w-dead"]
    assert busy_row["alive"] is True
    assert busy_row["current_job"] == "job-42"
    assert (busy_row["done"], busy_row["failed"], busy_row["retried"], busy_row["deduplicated"]) == (
        3,
        1,
        1,
        1,
    )
    assert busy_row["counts"]["done"] == 3
    assert dead_row["alive"] is False
    assert dead_row["current_job"] is None
    assert dead_row["heartbeat_age_s"] >= 0.05

    code, out, _ = _run(capsys, "workers", "--store", stores.url)
    assert code == 0
    assert "w-busy" in out
    assert "job-42" in out
    assert "dead" in out


def test_stats_reports_throughput_failure_rate_and_percentiles_over_the_window(
    stores: StoreFactory, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = stores.make(Retention(history_step_s=0))
    workers = {name: Telemetry() for name in ("w-1", "w-2")}
    for name, telemetry in workers.items():
        for _ in range(100):  # before the window: not counted
            telemetry.finished("orders", "charge", 0.01, ok=True)
        store.beat(_snapshot(name, telemetry), ttl_s=30)
    # the window below (30 s) holds both beats whatever a loaded machine adds: with no reading older than its
    # start, the oldest one, the first beats, is the baseline and the 100 runs before it are not counted
    time.sleep(0.2)
    for telemetry in workers.values():
        for i in range(40):
            telemetry.started("orders", "charge", 0.25)
            telemetry.finished("orders", "charge", 1.0 + i / 100, ok=i % 4 != 0)
        telemetry.started("orders", "email", 0.5)
        telemetry.finished("orders", "email", 0.3, ok=True)
    for name, telemetry in workers.items():
        store.beat(_snapshot(name, telemetry), ttl_s=30)

    code, out, err = _run(capsys, "stats", "--window", "30", "--json", "--store", stores.url)
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["window_s"] == 30
    assert 0 < document["throughput"] <= 62 / 0.5
    assert document["failure_rate"] == pytest.approx(20 / 82, abs=1e-6)
    charge = document["task_types"]["charge"]
    assert (charge["done"], charge["failed"]) == (60, 20)
    assert charge["wait"]["p50"] == pytest.approx(0.25, rel=0.02)
    assert 1.0 <= charge["run"]["p50"] <= 1.4
    assert charge["run"]["p99"] == pytest.approx(1.39, rel=0.02)
    assert document["task_types"]["email"]["done"] == 2

    code, out, _ = _run(capsys, "stats", "--window", "30", "--store", stores.url)
    assert code == 0
    assert "charge" in out
    assert "failure rate 24.4%" in out


def test_stats_on_an_idle_store_is_empty_not_an_error(
    stores: StoreFactory, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "stats", "--json", "--store", stores.url)
    assert code == 0
    document = json.loads(out)
    assert (document["throughput"], document["failure_rate"], document["task_types"]) == (0.0, 0.0, {})


def test_an_unreachable_store_is_exit_3_with_one_line_and_no_password(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "workers", "--store", "redis://user:s3cret@127.0.0.1:1/0", "--timeout", "2")
    assert code == 3
    assert out == ""
    assert err.count("\n") == 1
    assert "state store" in err
    assert "s3cret" not in err


def test_an_unknown_store_scheme_is_a_usage_error(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "stats", "--store", "mongodb://x")
    assert code == 2
    assert "not supported" in err
