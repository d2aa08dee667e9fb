"""Several ``tqadmin cron`` processes against the real Redis while the leader is killed and paused.

The jobs go to a Redis list (``TQADMIN_CRON_SINK``), so the test counts what was published, not what a broker
delivered. Over the whole run: every second between the first and the last fired tick was published (no tick
lost, none skipped past its grace), each id at most twice and only across a disruption (a duplicate is the
documented price of never losing a tick), fencing tokens never went backwards, and no stale leader fired.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import redis
from cron_redis import REDIS_URL, delete_namespace

from tqadmin.store.redis_lease import RedisCronStore

pytestmark = [pytest.mark.redis, pytest.mark.slow]

LOCK_TTL_S = 2.0
GRACE_S = 15
CHAOS_S = 55.0
PUBLISH_S = 0.3  # a slow confirm: a third of the kills land between a tick's claim and its publish
SCHEDULE = f"""
[[schedule]]
name = "every-second"
cron = "* * * * * *"
queue = "chaos"
task_type = "tick"
misfire_grace = {GRACE_S}
job = {{ source = "chaos-test" }}
"""


class Fleet:
    """The cron processes of one test, by instance id."""

    def __init__(self, tmp: Path, namespace: str, sink: str) -> None:
        self.schedule = tmp / "schedules.toml"
        self.schedule.write_text(SCHEDULE)
        self.logs = tmp
        self.namespace = namespace
        sink_url = f"{REDIS_URL}#{sink}?delay={PUBLISH_S}"
        self.env = {**os.environ, "TQADMIN_STORE_URL": REDIS_URL, "TQADMIN_CRON_SINK": sink_url}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.started = 0

    def start(self) -> str:
        self.started += 1
        instance = f"cron-{self.started}"
        log = (self.logs / f"{instance}.log").open("wb")
        command = [sys.executable, "-m", "tqadmin.cli", "cron", "--schedule", str(self.schedule)]
        command += ["--namespace", self.namespace, "--instance-id", instance, "--lock-ttl", str(LOCK_TTL_S)]
        self.procs[instance] = subprocess.Popen(command, env=self.env, stdout=log, stderr=log)
        return instance

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tail(self) -> str:
        return "\n".join(p.read_text()[-1500:] for p in sorted(self.logs.glob("cron-*.log")))


@pytest.fixture
def fleet(tmp_path: Path, unique: str, isolated_env: Path) -> Iterator[Fleet]:
    namespace, sink = f"chaos-{unique}", f"tqtest:sink:{unique}"
    fleet = Fleet(tmp_path, namespace, sink)
    yield fleet
    fleet.stop_all()
    delete_namespace(namespace, sink)


def wait_for_leader(store: RedisCronStore, fleet: Fleet, not_token: int = 0, timeout_s: float = 15.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        leader = store.leader()
        if leader is not None and leader.token != not_token and leader.instance in fleet.procs:
            return leader.instance
        time.sleep(0.2)
    raise AssertionError(f"no leader elected\n{fleet.log_tail()}")


def test_every_tick_fires_once_while_leaders_are_killed_and_paused(fleet: Fleet) -> None:
    store = RedisCronStore.from_url(REDIS_URL, fleet.namespace)
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    sink = fleet.env["TQADMIN_CRON_SINK"].split("#", 1)[1].split("?")[0]
    for _ in range(4):
        fleet.start()
    tokens_seen = [0]
    disruptions = 0
    leader = wait_for_leader(store, fleet)
    deadline = time.monotonic() + CHAOS_S
    while time.monotonic() < deadline:
        time.sleep(4)
        tokens_seen.append(store.fencing_token())
        leader_info = store.leader()
        if leader_info is None:
            continue
        leader = leader_info.instance
        victim = fleet.procs[leader]
        if disruptions % 2 == 0:
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            fleet.start()
        else:
            victim.send_signal(signal.SIGSTOP)
            wait_for_leader(store, fleet, not_token=leader_info.token)
            time.sleep(1)
            victim.send_signal(signal.SIGCONT)  # wakes stale: must fire nothing
        disruptions += 1
        tokens_seen.append(store.fencing_token())
    time.sleep(2)
    end = time.time()
    fleet.stop_all()
    tokens_seen.append(store.fencing_token())

    records = [json.loads(r) for r in client.lrange(sink, 0, -1)]
    jobs = [r["job"] for r in records]
    counts = Counter(j["id"] for j in jobs)
    ticks = sorted({j["scheduled"] for j in jobs})
    context = f"disruptions={disruptions}\n{fleet.log_tail()}"

    assert disruptions >= 8
    assert ticks, context
    assert ticks[-1] >= end - 5, f"the cron stopped firing before the end\n{context}"
    missing = sorted(set(range(ticks[0], ticks[-1] + 1)) - set(ticks))
    assert missing == [], f"ticks never published: {missing}\n{context}"
    assert set(counts) == {f"cron:every-second:{t}" for t in ticks}
    duplicated = {job_id: n for job_id, n in counts.items() if n > 1}
    assert all(n == 2 for n in duplicated.values()), duplicated
    assert len(duplicated) <= disruptions, duplicated
    assert store.missed_counts() == {}, "a tick was skipped as older than the grace"
    for record in records:
        job = record["job"]
        assert record["queue"] == "chaos" and job["task_type"] == "tick" and job["source"] == "chaos-test"
        published = datetime.fromisoformat(job["timestamp"]).timestamp()
        assert published - job["scheduled"] <= GRACE_S, f"{job['id']} fired past its grace"
    assert tokens_seen == sorted(tokens_seen), tokens_seen
    assert tokens_seen[-1] >= disruptions  # each disruption made a new leader with a new token
    first_seen_tokens = []
    seen: set[str] = set()
    for job in sorted(jobs, key=lambda j: j["scheduled"]):
        if job["id"] not in seen:
            seen.add(job["id"])
            first_seen_tokens.append(job["fencing_token"])
    assert first_seen_tokens == sorted(first_seen_tokens), "a tick was first published by an older leader"
    tick_tokens = [store.tick("every-second", t) for t in ticks]
    assert all(r is not None and r.state == "fired" for r in tick_tokens)
    recorded = [r.token for r in tick_tokens if r is not None]
    assert recorded == sorted(recorded)
    store.close()
