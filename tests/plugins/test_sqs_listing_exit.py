"""An SQS listing half-way through never holds up its process's exit: its per-queue calls run in daemon
threads (``tqadmin_sqs.admin.each_of``), not in a pool that Python's exit joins and that would go on through
every queue left (the exporter on SIGTERM over 10,000 queues: tens of seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from tqadmin_sqs.admin import each_of

from tests.support.hanging_sqs import HangingSqs
from tests.support.sqs_server import CREDENTIALS

DEADLINE_S = 30.0  # a hang guard: the listing left behind would hold the exit 5 x 60 s

LEAVING = """
import sys, threading, time
from tqadmin.plugin.base import BrokerConfig
from tqadmin_sqs.admin import SqsAdmin

admin = SqsAdmin(BrokerConfig("sqs://us-east-1", timeout_s=60, options={"endpoint_url": sys.argv[1]}))
print(len(admin.list_queues().queues), "queues listed", flush=True)
threading.Thread(target=admin.list_queues, daemon=True).start()
time.sleep(1)
print("leaving", flush=True)
"""


def test_a_process_ends_while_a_listing_is_under_way_without_waiting_for_it() -> None:
    sqs = HangingSqs()
    try:
        process = subprocess.run(
            [sys.executable, "-c", LEAVING, sqs.url],
            check=False,
            env={**os.environ, **CREDENTIALS},
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert sqs.held > 0, "the second listing was under way, its calls held"
    finally:
        sqs.close()
    assert process.returncode == 0, process.stderr
    assert process.stdout.splitlines() == ["40 queues listed", "leaving"]


def test_each_of_keeps_the_order_and_raises_the_first_items_error_starting_none_after_it() -> None:
    assert each_of(str.upper, [f"q{i}" for i in range(50)], 8, "t") == [f"Q{i}" for i in range(50)]
    started: list[str] = []
    lock = threading.Lock()

    def work(item: str) -> str:
        with lock:
            started.append(item)
        if item in ("b", "d"):
            raise ValueError(item)
        return item

    with pytest.raises(ValueError, match="b"):
        each_of(work, list("abcdefgh"), 1, "t")
    assert started == ["a", "b"]
