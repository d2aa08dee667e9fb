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
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import redis

from tests.support.cron_redis import REDIS_URL, delete_namespace
from tests.support.cron_sink import CRON_WITH_SINK
from tests.support.redis_servers import PersistentRedis
from tqadmin.store.cron.redis import RedisCronStore

pytestmark = [pytest.mark.redis, pytest.mark.slow]

LOCK_TTL_S = 2.0
GRACE_S = 15
DISRUPTIONS = 10  # a count, not a time: a loaded machine takes longer over them, never fewer
CHAOS_DEADLINE_S = 240.0  # for them all (about 55 s on an idle machine)
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
    """The cron processes of one test, by instance id; jobs go to the list ``sink`` on ``sink_server``."""

    def __init__(
        self,
        tmp: Path,
        namespace: str,
        sink: str,
        *,
        store_url: str = REDIS_URL,
        sink_server: str = REDIS_URL,
        schedule: str = SCHEDULE,
        publish_s: float = PUBLISH_S,
        lock_ttl_s: float = LOCK_TTL_S,
    ) -> None:
        self.schedule = tmp / "schedules.toml"
        self.schedule.write_text(schedule)
        self.logs = tmp
        self.namespace = namespace
        self.lock_ttl_s = lock_ttl_s
        sink_url = f"{sink_server}#{sink}?delay={publish_s}"
        self.env = {**os.environ, "TQADMIN_STORE_URL": store_url, "TQADMIN_CRON_SINK": sink_url}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.started = 0

    def start(self) -> str:
        self.started += 1
        instance = f"cron-{self.started}"
        log = (self.logs / f"{instance}.log").open("wb")
        command = [*CRON_WITH_SINK, "cron", "--schedule", str(self.schedule)]
        command += [
            "--namespace",
            self.namespace,
            "--instance-id",
            instance,
            "--lock-ttl",
            str(self.lock_ttl_s),
        ]
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


def wait_for_leader(store: RedisCronStore, fleet: Fleet, not_token: int = 0, timeout_s: float = 60.0) -> str:
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
    deadline = time.monotonic() + CHAOS_DEADLINE_S
    while disruptions < DISRUPTIONS:
        assert time.monotonic() < deadline, f"{disruptions} disruptions in {CHAOS_DEADLINE_S:g} s"
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
    end = time.time()
    deadline = time.monotonic() + 60  # the cron fires on after the last disruption: a tick scheduled after it
    while time.monotonic() < deadline and not any(
        json.loads(r)["job"]["scheduled"] >= end for r in client.lrange(sink, -10, -1)
    ):
        time.sleep(0.5)
    fleet.stop_all()
    tokens_seen.append(store.fencing_token())

    records = [json.loads(r) for r in client.lrange(sink, 0, -1)]
    jobs = [r["job"] for r in records]
    counts = Counter(j["id"] for j in jobs)
    ticks = sorted({j["scheduled"] for j in jobs})
    context = f"disruptions={disruptions}\n{fleet.log_tail()}"

    assert ticks, context
    assert ticks[-1] >= end, f"the cron stopped firing before the end\n{context}"
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


# The run: five instances, --lock-ttl 5, the state store (a Redis with an append-only file) shut down
# in the middle of a tick and started again 3 s later. A tick every 2 s, each publish taking 1 s, so the
# shutdown, sent as soon as a tick is claimed, lands before its publish is done.
STORE_TTL_S = 5.0
STORE_PUBLISH_S = 1.0
STORE_SCHEDULE = """
[[schedule]]
name = "every-other-second"
cron = "*/2 * * * * *"
queue = "outage"
task_type = "tick"
misfire_grace = 60
"""


def claimed_tick(store_url: str, namespace: str, timeout_s: float = 30.0) -> str:
    """The id of the next tick the leader claims (listed pending, not yet marked published)."""
    client = redis.Redis.from_url(store_url, decode_responses=True)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            pending = client.zrange("{tqcron:" + namespace + "}:pending", 0, 0)
            if pending:
                return str(pending[0])
            time.sleep(0.005)
    finally:
        client.close()
    raise AssertionError("no tick was claimed")


@pytest.mark.parametrize(
    ("window", "outage_s"),
    [
        pytest.param("publish-then-record", 3.0, id="between-publish-and-record-3s"),
        pytest.param("publish-then-record", 6.0, id="between-publish-and-record-6s"),
        pytest.param("claim-then-publish", 3.0, id="between-claim-and-publish-3s"),
    ],
)
def test_a_store_shut_down_in_the_middle_of_a_tick_neither_publishes_it_twice_nor_loses_it(
    tmp_path: Path, unique: str, isolated_env: Path, window: str, outage_s: float
) -> None:
    """Between publish and record the jobs go to the shared Redis, which stays up: the publish succeeds and
    its mark fails, and the tick must be published exactly once. Between claim and publish the jobs go to
    the store's own Redis (one Redis as broker and store): the publish fails with the store, and the tick
    must still be published once the store is back."""
    store_server = PersistentRedis()
    sink = f"tqtest:sink:{unique}"
    sink_server = REDIS_URL if window == "publish-then-record" else store_server.url
    fleet = Fleet(
        tmp_path,
        f"outage-{unique}",
        sink,
        store_url=store_server.url,
        sink_server=sink_server,
        schedule=STORE_SCHEDULE,
        publish_s=STORE_PUBLISH_S,
        lock_ttl_s=STORE_TTL_S,
    )
    store = RedisCronStore.from_url(store_server.url, fleet.namespace)
    try:
        for _ in range(5):
            fleet.start()
        wait_for_leader(store, fleet)
        victim = claimed_tick(store_server.url, fleet.namespace)
        store_server.server.stop()
        time.sleep(outage_s)
        store_server.server.start()
        victim_tick = int(victim.rsplit(":", 1)[1])
        back = time.time()
        deadline = time.monotonic() + 60
        while (
            time.monotonic() < deadline
        ):  # until the tick is recorded and three more fired after the restart
            record = store.tick("every-other-second", victim_tick)
            fired = store.last_fired().get("every-other-second")
            if record is not None and record.state == "fired" and fired and fired.scheduled >= back + 6:
                break
            time.sleep(0.5)
        fleet.stop_all()
        sink_client = redis.Redis.from_url(sink_server, decode_responses=True)
        jobs = [json.loads(r)["job"] for r in sink_client.lrange(sink, 0, -1)]
        sink_client.close()
        counts = Counter(j["id"] for j in jobs)
        ticks = sorted({j["scheduled"] for j in jobs})
        context = f"tick shut down on: {victim}\n{counts}\n{fleet.log_tail()}"

        assert counts[victim] >= 1, f"the tick the store went down on was never published\n{context}"
        assert ticks[-1] >= back + 6, f"the cron stopped firing after the restart\n{context}"
        missing = sorted(set(range(ticks[0], ticks[-1] + 1, 2)) - set(ticks))
        assert missing == [], f"ticks never published: {missing}\n{context}"
        if window == "publish-then-record":
            assert max(counts.values()) == 1, f"a tick was published twice\n{context}"
        record = store.tick("every-other-second", victim_tick)
        assert record is not None and record.state == "fired", context
        assert store.pending() == [], context
        assert store.missed_counts() == {}, context
    finally:
        fleet.stop_all()
        store.close()
        store_server.close()
        delete_namespace(fleet.namespace, sink)
