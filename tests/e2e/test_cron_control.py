"""Pausing a schedule and triggering one tick now, with a real ``tqadmin cron`` process, its state store on
Redis and on the SQLite file; every job it publishes goes to a Redis list (the cron's test sink,
tests/support/cron_sink.py), so each tick can be counted.

- ``pause --schedule``: the leader skips the schedule's ticks (never published, not counted as missed, one
  audit record per skip), ``schedules`` shows the pause and the next N fire times, and after ``resume`` the
  ticks fire again; an expired pause is audited once by the cron (``via`` ``cron``).
- ``trigger``: one tick now, fired by the leader under its fencing token with its own job id; an unknown
  schedule is exit 4 naming the known ones, a read-only profile exit 6 with nothing written, and a trigger
  asked for while no cron runs is exit 5 and fired by the next leader, not lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.cron_sink import CRON_WITH_SINK

pytestmark = [pytest.mark.redis]

REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass
class Cron:
    store_url: str
    namespace: str
    sink: str
    env: dict[str, str]
    tmp: Path
    redis: redis.Redis
    process: subprocess.Popen[str] | None = None

    def start(self, cron: str = "* * * * * *") -> None:
        path = self.tmp / "schedules.toml"
        path.write_text(
            f'[[schedule]]\nname = "beat"\ncron = "{cron}"\nqueue = "q"\ntask_type = "ping"\n'
            'job = { region = "eu" }\nmisfire_grace = 10\n'
        )
        command = [*CRON_WITH_SINK, "cron", "--schedule", str(path)]
        command += ["--namespace", self.namespace, "--instance-id", "cron-a", "--lock-ttl", "3"]
        log = (self.tmp / "cron.log").open("a")
        self.process = subprocess.Popen(command, env=self.env, stderr=log, text=True)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tqadmin.cli", *argv],
            check=False,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=90,
        )

    def jobs(self) -> list[dict[str, Any]]:
        return [json.loads(entry)["job"] for entry in self.redis.lrange(self.sink, 0, -1)]

    def ticks(self) -> list[dict[str, Any]]:
        return [j for j in self.jobs() if ":trigger:" not in j["id"]]

    def audit(self) -> list[dict[str, Any]]:
        path = self.tmp / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def log(self) -> str:
        path = self.tmp / "cron.log"
        return path.read_text() if path.exists() else ""


def wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout_s} s for {what}")


@pytest.fixture(params=["redis", "sqlite"])
def cron(request: pytest.FixtureRequest, unique: str, isolated_env: Path) -> Iterator[Cron]:
    prefix = f"tqcc{unique}"
    if request.param == "redis":
        store_url = f"{REDIS_URL}?prefix={prefix}"
    else:
        store_url = f"sqlite:///{isolated_env / 'state.db'}"
    sink = f"{prefix}:sink"
    env = {**os.environ, "TQADMIN_STORE_URL": store_url, "TQADMIN_CRON_SINK": f"{REDIS_URL}#{sink}"}
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    made = Cron(store_url, f"ns{unique}", sink, env, isolated_env, client)
    yield made
    made.stop()
    keys = list(client.scan_iter(f"*{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()


def test_a_paused_schedules_ticks_are_skipped_until_it_is_resumed(cron: Cron) -> None:
    cron.start()
    wait_for(lambda: len(cron.ticks()) >= 2, 60, "the first ticks")
    paused = cron.run("pause", "--schedule", "beat", "--for", "forever", "--reason", "vendor down", "--yes")
    assert paused.returncode == 0, paused.stderr
    paused_at = time.time()
    time.sleep(4)

    listed = cron.run("schedules", "--json", "--next", "3", "--namespace", cron.namespace)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)["schedules"]
    assert row["paused"]["schedule"] == "beat" and row["paused"]["reason"] == "vendor down"
    assert row["paused"]["until"] is None and row["missed"] == 0  # skipped, not missed
    assert len(row["next_fires"]) == 3 and row["next_fires"] == sorted(row["next_fires"])
    human = cron.run("schedules", "--next", "2", "--namespace", cron.namespace).stdout
    assert "paused beat: paused until resumed: vendor down" in human and "next beat: " in human

    late = [t["scheduled"] for t in cron.ticks() if t["scheduled"] > paused_at + 1.5]
    assert late == [], cron.log()  # the leader reads the pauses at each step: a tick a second here
    resumed = cron.run("resume", "--schedule", "beat", "--yes")
    assert resumed.returncode == 0, resumed.stderr
    resumed_at = time.time()
    wait_for(lambda: any(t["scheduled"] >= resumed_at for t in cron.ticks()), 30, "ticks after the resume")
    scheduled = [t["scheduled"] for t in cron.ticks()]
    assert len(scheduled) == len(set(scheduled))  # each tick once
    gap = [s for s in scheduled if paused_at + 1.5 < s < resumed_at - 1.5]
    assert gap == []  # the ticks due while paused were skipped, not fired late
    first_after = min(s for s in scheduled if s >= resumed_at - 1.5)
    last_before = max(s for s in scheduled if s <= paused_at + 1.5)
    print(
        f"last tick {last_before - paused_at:+.2f} s after the pause;"
        f" first tick {first_after - resumed_at:+.2f} s after the resume"
    )

    records = cron.audit()
    skips = [r for r in records if r["action"] == "skip"]
    assert skips and all(r["outcome"] == "paused" and r["target"] == "beat" for r in skips)
    assert all(r["paused_by"] and r["paused_for"] == "vendor down" and r["via"] == "cron" for r in skips)
    assert sum(r["count"] for r in skips) >= 3
    assert {r["action"] for r in records if r.get("via") == "cli"} == {"pause", "resume"}
    assert "beat: skipped 1 tick(s)" in cron.log()


def test_an_expired_schedule_pause_is_audited_once_by_the_cron(cron: Cron) -> None:
    cron.start()
    wait_for(lambda: len(cron.ticks()) >= 1, 60, "the first tick")
    assert cron.run("pause", "--schedule", "beat", "--for", "2s", "--yes").returncode == 0

    def ends() -> list[dict[str, Any]]:
        return [r for r in cron.audit() if r["action"] == "resume"]

    wait_for(ends, 30, "the expiry's record")
    time.sleep(2)
    (end,) = ends()
    assert (end["outcome"], end["who"], end["reason"], end["via"], end["schedule"]) == (
        "expired",
        "expiry",
        "resumed by expiry",
        "cron",
        "beat",
    )


def test_trigger_fires_one_tick_now_through_the_leader(cron: Cron) -> None:
    cron.start(cron="0 0 1 1 *")  # once a year: every job seen here is a trigger's
    wait_for(
        lambda: cron.run("schedules", "--namespace", cron.namespace).stdout.startswith("leader: cron-a"),
        60,
        "a leader",
    )
    asked = time.time()
    fired = cron.run("--json", "trigger", "beat", "--namespace", cron.namespace)
    took = time.time() - asked
    assert fired.returncode == 0, fired.stderr + cron.log()
    document = json.loads(fired.stdout)
    assert document["job_id"].startswith("cron:beat:trigger:") and document["fired"] is True
    assert document["instance"] == "cron-a" and document["fencing_token"] >= 1
    (job,) = cron.jobs()
    assert job["id"] == document["job_id"] and job["task_type"] == "ping" and job["region"] == "eu"
    assert job["fencing_token"] == document["fencing_token"] and job["triggered_by"] == document["who"]
    again = json.loads(cron.run("--json", "trigger", "beat", "--namespace", cron.namespace).stdout)
    assert again["job_id"] != document["job_id"] and len(cron.jobs()) == 2
    (record, _) = [r for r in cron.audit() if r["action"] == "trigger"]
    assert (record["target"], record["outcome"], record["job_id"], record["via"]) == (
        "beat",
        "ok",
        document["job_id"],
        "cli",
    )
    print(f"trigger answered in {took:.2f} s (the command's whole run)")

    unknown = cron.run("trigger", "nightly", "--namespace", cron.namespace)
    assert unknown.returncode == 4 and "'nightly' is not one the cron" in unknown.stderr
    assert "(beat)" in unknown.stderr and "Traceback" not in unknown.stderr
    refused = cron.run("--read-only", "trigger", "beat", "--namespace", cron.namespace)
    assert refused.returncode == 6, refused.stderr
    time.sleep(2)
    assert len(cron.jobs()) == 2  # nothing written, nothing fired

    cron.stop()  # no leader: the request waits for the next one
    pending = cron.run("trigger", "beat", "--wait", "1", "--namespace", cron.namespace)
    assert pending.returncode == 5 and "the request stands" in pending.stderr
    cron.start(cron="0 0 1 1 *")
    wait_for(lambda: len(cron.jobs()) == 3, 60, "the next leader to fire the waiting trigger")
    assert len({j["id"] for j in cron.jobs()}) == 3
