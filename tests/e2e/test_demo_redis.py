"""`tqadmin demo --no-ui --broker redis://...`: the whole pipeline on the Redis broker, every message
accounted for. Keys live under a prefix of this run's own (broker URL and store URL), deleted after."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from test_demo import demo_env

REDIS_URL = "redis://127.0.0.1:6379/0"

pytestmark = [pytest.mark.redis, pytest.mark.xdist_group("demo")]


def test_the_demo_on_redis_accounts_for_every_message_and_charges_each_card_once(tmp_path: Path) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    command = [sys.executable, "-m", "tqadmin.cli", "--broker", f"{REDIS_URL}?prefix={prefix}-broker"]
    command += ["demo", "--no-ui", "--json", "--queue-prefix", prefix, "--duration", "8", "--rate", "15"]
    command += ["--workers", "4", "--failure-rate", "0.2", "--job-timeout", "1", "--drain", "40"]
    client = redis.Redis.from_url(REDIS_URL)
    try:
        done = subprocess.run(
            command, env=demo_env(tmp_path, prefix), capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        s = json.loads(done.stdout)
        assert s["balanced"], s
        incoming = s["published"] + s["scheduled"]  # the demo's cron fires jobs too
        assert incoming == s["done"] + s["dead_lettered"] + s["deduplicated"] + s["left_in_queues"]
        assert s["left_in_queues"] == 0, s["notes"]
        assert s["in_dead_letter_queues"] == s["dead_lettered"] > 0
        assert s["dead_letter_reasons"].get("malformed", 0) >= 1
        charges = [client.hgetall(k) for k in client.scan_iter(match=f"{prefix}:charge:*", count=1000)]
        assert charges and {int(c[b"times"]) for c in charges} == {1}
    finally:
        patterns = (f"{prefix}*", f"{{{prefix}:*", f"*tqcron:demo-{prefix}*")  # the cron's namespace too
        keys = [k for p in patterns for k in client.scan_iter(match=p, count=1000)]
        if keys:
            client.delete(*keys)
        client.close()
