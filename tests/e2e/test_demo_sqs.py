"""`tqadmin demo --no-ui` on SQS (moto's server): the same pipeline, with queue names SQS accepts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis

from tests.support.sqs_server import BROKER_URL, SqsQueues

pytestmark = [pytest.mark.sqs, pytest.mark.redis, pytest.mark.slow, pytest.mark.xdist_group("demo")]

REDIS_URL = "redis://127.0.0.1:6379/0"


def test_the_demo_runs_on_sqs_and_accounts_for_every_message(
    sqs_env: str, sqs_queues: SqsQueues, tmp_path: Path
) -> None:
    prefix = f"sqsdemo{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-{short}" for short in ("images", "emails", "reports", "payments")]
    sqs_queues.names += names + [f"{name}-dlq" for name in names]
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    env["TQADMIN_STORE_URL"] = f"{REDIS_URL}?prefix={prefix}"
    command = [sys.executable, "-m", "tqadmin.cli", "--broker", BROKER_URL, "--json", "demo", "--no-ui"]
    command += ["--duration", "8", "--drain", "15", "--queue-prefix", prefix, "--rate", "5"]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=150, check=False)
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"*{prefix}*"))
        if keys:
            client.delete(*keys)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["published"] > 0 and summary["done"] > 0
    assert f"{prefix}-images" in done.stderr  # SQS's names: the prefix joined with a hyphen
    assert {q["name"] for q in sqs_queues_listed(sqs_queues, prefix)} >= set(names)


def sqs_queues_listed(sqs_queues: SqsQueues, prefix: str) -> list[dict[str, str]]:
    urls = sqs_queues.client.list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
    return [{"name": url.rsplit("/", 1)[-1]} for url in urls]
