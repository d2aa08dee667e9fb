"""``tqadmin cron`` and ``tqadmin schedules`` as processes against the real Redis and RabbitMQ."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
import redis

from tests.support.cron_redis import REDIS_URL, delete_namespace
from tests.support.cron_sink import CRON_WITH_SINK
from tqadmin.store.cron.redis import RedisCronStore

pytestmark = [pytest.mark.redis]

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"


def schedule_file(tmp: Path, queue: str, cron: str = "* * * * * *") -> Path:
    path = tmp / "schedules.toml"
    path.write_text(
        f'[[schedule]]\nname = "beat"\ncron = "{cron}"\nqueue = "{queue}"\ntask_type = "ping"\n'
        'job = { region = "eu" }\nmisfire_grace = 10\n'
    )
    return path


def tqadmin(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tqadmin.cli", *args],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def namespace(unique: str) -> Iterator[str]:
    yield f"cli-{unique}"
    delete_namespace(f"cli-{unique}")


@pytest.fixture
def env(isolated_env: Path) -> dict[str, str]:
    return {**os.environ, "TQADMIN_STORE_URL": REDIS_URL, "TQADMIN_BROKER_URL": AMQP_URL}


def wait_for(predicate: object, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")


@pytest.mark.rabbitmq
def test_cron_publishes_each_tick_durably_to_rabbitmq_and_releases_the_lease_on_sigterm(
    tmp_path: Path, unique: str, namespace: str, env: dict[str, str]
) -> None:
    queue = f"cron-{unique}"
    store = RedisCronStore.from_url(REDIS_URL, namespace)
    command = [sys.executable, "-m", "tqadmin.cli", "cron", "--schedule", str(schedule_file(tmp_path, queue))]
    command += ["--namespace", namespace, "--instance-id", "solo", "--lock-ttl", "5"]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    channel = connection.channel()
    try:
        wait_for(lambda: len(store.last_fired()) == 1 and store.last_fired()["beat"].scheduled)
        first = store.last_fired()["beat"].scheduled
        wait_for(lambda: store.last_fired()["beat"].scheduled >= first + 2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, err
        assert store.leader() is None, "SIGTERM released the lease instead of letting it expire"
        assert "released the lease" in err
        jobs = []
        while True:
            method, properties, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                break
            assert properties.delivery_mode == 2
            jobs.append(json.loads(body))
        scheduled = [j["scheduled"] for j in jobs]
        assert scheduled == list(range(scheduled[0], scheduled[0] + len(jobs)))
        assert len(jobs) >= 3
        job = jobs[0]
        assert job["id"] == f"cron:beat:{job['scheduled']}"
        assert (job["task_type"], job["region"], job["instance"], job["retry_count"]) == (
            "ping",
            "eu",
            "solo",
            0,
        )
        assert job["fencing_token"] == store.fencing_token() == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for name in (queue, f"{queue}.dlq"):
            channel.queue_delete(name)
        connection.close()
        store.close()


def test_schedules_lists_registered_schedules_without_the_file(
    tmp_path: Path, unique: str, namespace: str, env: dict[str, str]
) -> None:
    sink = f"tqtest:sink:{unique}"
    env = {**env, "TQADMIN_CRON_SINK": f"{REDIS_URL}#{sink}"}
    store = RedisCronStore.from_url(REDIS_URL, namespace)
    command = [*CRON_WITH_SINK, "cron", "--schedule", str(schedule_file(tmp_path, "q"))]
    command += ["--namespace", namespace, "--instance-id", "cron-x", "--lock-ttl", "5"]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: "beat" in store.last_fired())
        result = tqadmin("schedules", "--json", "--namespace", namespace, env=env)
        assert result.returncode == 0, result.stderr
        document = json.loads(result.stdout)
        (row,) = document["schedules"]
        assert (row["name"], row["leader"], row["fencing_token"], row["source"]) == (
            "beat",
            "cron-x",
            1,
            "store",
        )
        assert row["next_fire"].endswith("Z") and row["last_fire"].endswith("Z")
        assert row["next_fire"] > row["last_fire"]
        assert row["lease_age_s"] >= 0 and row["lateness_s"] >= 0
        human = tqadmin("schedules", "--namespace", namespace, env=env)
        assert "leader: cron-x  fencing token 1" in human.stdout
        assert "beat" in human.stdout
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        redis.Redis.from_url(REDIS_URL).delete(sink)
        store.close()


def test_schedules_from_a_file_with_no_cron_running_shows_no_leader(
    tmp_path: Path, namespace: str, env: dict[str, str]
) -> None:
    path = schedule_file(tmp_path, "q", cron="0 3 * * *")
    result = tqadmin("schedules", "--json", "--namespace", namespace, "--schedule", str(path), env=env)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["schedules"]
    assert (row["leader"], row["fencing_token"], row["last_fire"]) == (None, None, None)
    assert row["next_fire"].endswith("T03:00:00Z")


def test_a_bad_schedule_file_is_a_usage_error_and_read_only_refuses_to_run(
    tmp_path: Path, namespace: str, env: dict[str, str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[schedule]]\nname = "x"\ncron = "* * *"\nqueue = "q"\ntask_type = "t"\n')
    result = tqadmin("cron", "--schedule", str(bad), "--namespace", namespace, env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "has 3 fields" in result.stderr
    good = schedule_file(tmp_path, "q")
    refused = tqadmin("cron", "--schedule", str(good), "--read-only", "--namespace", namespace, env=env)
    assert refused.returncode == 6 and "read-only" in refused.stderr


def test_an_unreachable_store_is_exit_3_for_schedules(namespace: str, env: dict[str, str]) -> None:
    result = tqadmin("schedules", "--namespace", namespace, "--store", "redis://127.0.0.1:1/0", env=env)
    assert result.returncode == 3
    assert "cannot reach the state store" in result.stderr


def start_refused(tmp_path: Path, namespace: str, env: dict[str, str], *option: str) -> list[str]:
    """Run a cron that must stop at start with exit 3; its error lines (not its own log)."""
    path = schedule_file(tmp_path, f"never-{namespace}")
    result = tqadmin("cron", "--schedule", str(path), "--namespace", namespace, *option, env=env)
    assert result.returncode == 3
    return [line for line in result.stderr.splitlines() if " cron[" not in line]


def test_cron_with_an_unreachable_store_is_exit_3_at_start_with_the_password_masked(
    tmp_path: Path, namespace: str, env: dict[str, str]
) -> None:
    errors = start_refused(tmp_path, namespace, env, "--store", "redis://:store-secret@127.0.0.1:1/0")
    assert (
        len(errors) == 1 and "cannot reach the state store" in errors[0] and "store-secret" not in errors[0]
    )


def test_cron_whose_broker_refuses_the_login_is_exit_3_at_start_and_does_not_keep_the_lease(
    tmp_path: Path, namespace: str, env: dict[str, str]
) -> None:
    """A misconfigured instance must not sit on the lease retrying while correctly configured ones wait."""
    broker = "amqp://guest:broker-secret@127.0.0.1:5672/%2F"
    errors = start_refused(tmp_path, namespace, env, "--broker", broker)
    assert len(errors) == 1 and "refused the login" in errors[0] and "broker-secret" not in errors[0]
    store = RedisCronStore.from_url(REDIS_URL, namespace)
    try:
        assert store.leader() is None
    finally:
        store.close()
