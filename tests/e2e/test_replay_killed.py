"""A replay killed with SIGKILL half-way and run again loses nothing: duplicates at worst, never a gap."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

TOTAL = 10_000


def tqadmin(*argv: str) -> list[str]:
    return [sys.executable, "-m", "tqadmin.cli", *argv]


def fill(amqp_queues: Any, queue: str, headers: dict[str, object] | None = None) -> None:
    """TOTAL persistent jobs, published without a confirm each (fast), then wait until all are counted."""
    channel = amqp_queues.connection.channel()
    properties = amqp_queues._pika.BasicProperties(delivery_mode=2, headers=headers)
    for i in range(TOTAL):
        channel.basic_publish(
            "", queue, json.dumps({"task_type": "t", "id": f"job-{i}"}).encode(), properties
        )
    channel.close()
    while amqp_queues.depth(queue) < TOTAL:
        time.sleep(0.05)


def kill_half_way(command: list[str], arrived: Callable[[], int], total: int) -> None:
    """Run ``command`` and SIGKILL it once ``arrived()`` reaches half of ``total``; it must have been killed
    mid-way, neither before anything arrived nor after everything did."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while arrived() < total // 2 and first.poll() is None:
            time.sleep(0.02)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert first.returncode == -signal.SIGKILL, "the first run finished before it could be killed"
    assert 0 < arrived() < total


def test_a_replay_killed_half_way_and_run_again_delivers_every_message(
    isolated_env: Path, amqp_queues: Any
) -> None:
    dlq, target = amqp_queues.declare("dlq"), amqp_queues.declare("orders")
    fill(amqp_queues, dlq, {"x-tq-original-queue": target, "x-tq-reason": "max_retries"})

    kill_half_way(
        tqadmin("replay", dlq, "--client-side", "--rate", "4000"), lambda: amqp_queues.depth(target), TOTAL
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    second = subprocess.run(
        tqadmin("replay", dlq, "--client-side", "--json"),
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert amqp_queues.depth(dlq) == 0
    arrived = [json.loads(body)["id"] for _, body in amqp_queues.drain(target)]
    assert len(set(arrived)) == TOTAL
    assert len(arrived) - TOTAL <= 2 * 500, "more duplicates than the unacked window allows"


def test_a_server_side_replay_killed_mid_way_is_finished_by_the_rerun_without_a_second_shovel(
    isolated_env: Path, amqp_queues: Any
) -> None:
    import httpx

    dlq, target = amqp_queues.declare("dlq"), amqp_queues.declare("orders")
    fill(amqp_queues, dlq)
    shovel = f"api/parameters/shovel/%2F/tqadmin-move-{dlq}-to-{target}"
    with httpx.Client(base_url="http://127.0.0.1:15672/", auth=("guest", "guest"), timeout=60) as api:
        first = subprocess.Popen(
            tqadmin("replay", dlq, "--to", target, "--server-side", "--timeout", "30"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while api.get(shovel).status_code != 200 and first.poll() is None:
                time.sleep(0.01)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait()
        second = subprocess.run(
            tqadmin("replay", dlq, "--to", target, "--server-side", "--json", "--timeout", "30"),
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 0, second.stderr
        assert api.get(shovel).status_code == 404
    assert amqp_queues.depth(dlq) == 0
    arrived = {json.loads(body)["id"] for _, body in amqp_queues.drain(target)}
    assert arrived == {f"job-{i}" for i in range(TOTAL)}
