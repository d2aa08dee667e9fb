"""A replay killed with SIGKILL half-way and run again loses nothing: duplicates at worst, never a gap."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

TOTAL = 10_000


def tqadmin(*argv: str) -> list[str]:
    return [sys.executable, "-m", "tqadmin.cli", *argv]


def test_a_replay_killed_half_way_and_run_again_delivers_every_message(
    isolated_env: Path, amqp_queues: Any
) -> None:
    dlq, target = amqp_queues.declare("dlq"), amqp_queues.declare("orders")
    headers = {"x-tq-original-queue": target, "x-tq-reason": "max_retries"}
    channel = amqp_queues.connection.channel()  # no confirm per message: fill fast, then check the count
    for i in range(TOTAL):
        channel.basic_publish(
            "",
            dlq,
            json.dumps({"task_type": "t", "id": f"job-{i}"}).encode(),
            amqp_queues._pika.BasicProperties(delivery_mode=2, headers=headers),
        )
    channel.close()
    while amqp_queues.depth(dlq) < TOTAL:
        time.sleep(0.05)

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(
        tqadmin("replay", dlq, "--client-side", "--rate", "4000"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while amqp_queues.depth(target) < TOTAL // 2 and first.poll() is None:
            time.sleep(0.02)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert first.returncode == -signal.SIGKILL, "the first run finished before it could be killed"
    assert 0 < amqp_queues.depth(target) < TOTAL

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
