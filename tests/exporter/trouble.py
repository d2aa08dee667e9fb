"""A pipeline in trouble on a real embedded broker and store, the exporter's scrape of it with queues folded
past ``--max-queues``, and promtool over that scrape: what the alert-rule tests (``test_alert_rules.py``) and
the dashboard's agreement test (``tests/tui/test_alerts_agree.py``) share.

The profile ``prod`` has a depth threshold of 2 and an oldest-message threshold of 1 ms; the dead-letter and
failure-rate thresholds are left at their defaults (1, 0.05). Every queue is declared (with its ``.dlq``), so
in name order the first :data:`MAX_QUEUES` keep their own series and the rest are folded:

- ``_other`` (named like the fold used to be): one message ready, no consumer;
- ``a.orders``: three ready, no consumer, two in its dead-letter queue ``a.orders.dlq`` (which is nobody's to
  consume);
- ``b.emails``: empty, its only worker dead;
- ``c.served``: one message, held by a live consumer;
- past the cap: ``d.unconsumed`` (one ready, no consumer: red on the dashboard, seen by no per-queue rule),
  ``e.served`` (one held by a live consumer), ``f.idle`` (empty).

A live worker reports two task types: ``send`` failing 4 of its 10 runs, ``charge`` 1 of 100.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tqadmin.config import Overrides, Settings, resolve
from tqadmin.exporter.polling import ProfilePoller, Served
from tqadmin.exporter.service import Exporter
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.transport import BrokerTransport
from tqadmin.store import open_store
from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.snapshot import WorkerSnapshot

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "prod"
THRESHOLDS = "depth_threshold = 2\noldest_age_threshold_s = 0.001\n"
MAX_QUEUES = 8
KEPT = (
    "_other",
    "_other.dlq",
    "a.orders",
    "a.orders.dlq",
    "b.emails",
    "b.emails.dlq",
    "c.served",
    "c.served.dlq",
)
PAST_THE_CAP = ("d.unconsumed", "d.unconsumed.dlq", "e.served", "e.served.dlq", "f.idle", "f.idle.dlq")
MESSAGES = {"_other": 1, "a.orders": 3, "a.orders.dlq": 2, "c.served": 1, "d.unconsumed": 1, "e.served": 1}
SERVED = ("c.served", "e.served")
WAIT_S = 60.0
EVAL = "3m"  # every rule's ``for`` long past

Sample = tuple[str, dict[str, str], float]


def promtool() -> str:
    found = shutil.which("promtool") or str(ROOT / ".tools" / "usr" / "bin" / "promtool")
    assert Path(found).exists(), "promtool is missing: run scripts/ready-promtool (make test does)"
    return found


@contextmanager
def pipeline_in_trouble(home: Path) -> Iterator[Path]:
    """Writes the profile's config file under ``home`` and sets the pipeline up; yields the config file (for
    ``TQADMIN_CONFIG``) while the consumers of :data:`SERVED` hold their message."""
    url = f"sqlite:///{home / 'tq.db'}"
    config = home / "config.toml"
    config.write_text(f'[profiles.{PROFILE}]\nbroker = "{url}"\nstore = "{url}"\n{THRESHOLDS}')
    with ExitStack() as stack:
        transport = plugin_for_url(url).transport(BrokerConfig(url=url))
        stack.callback(transport.close)
        for queue in KEPT + PAST_THE_CAP:
            if not queue.endswith(".dlq"):
                transport.declare(queue)
        jobs = [
            (queue, Message(json.dumps({"task_type": "charge", "id": f"{queue}-{n}"}).encode()))
            for queue, count in MESSAGES.items()
            for n in range(count)
        ]
        assert transport.publish(jobs).all_confirmed
        for queue in SERVED:
            _hold_one(stack, transport, queue)
        _beat(url)
        _wait_until_held(url)
        yield config


def _hold_one(stack: ExitStack, transport: BrokerTransport, queue: str) -> None:
    """A live consumer that takes the queue's one message and holds it (never acked) until the end."""
    consumer = transport.consumer(queue, prefetch=1, lease_s=3600.0)
    thread = threading.Thread(target=consumer.run, args=(lambda _delivery: None,), daemon=True)
    thread.start()

    def stop() -> None:
        consumer.stop()
        consumer.drained()
        thread.join(timeout=WAIT_S)

    stack.callback(stop)


def _beat(url: str) -> None:
    """``w-dead`` served ``b.emails`` and stopped; ``w-live`` serves ``c.served`` and beats twice, the runs
    of its task types between the two (the dashboard's window counts what happened between two beats)."""
    store = open_store(url)
    try:
        now = time.time()
        store.beat(WorkerSnapshot("w-dead", "h", 1, ("b.emails",), now - 60, now), ttl_s=0)
        ran = {
            ("c.served", "send"): TaskStats(done=6, failed=4),
            ("c.served", "charge"): TaskStats(done=99, failed=1),
        }
        for stats in ({}, ran):
            snapshot = WorkerSnapshot("w-live", "h", 2, ("c.served",), now - 60, time.time(), stats=stats)
            store.beat(snapshot, ttl_s=3600)
    finally:
        store.close()


def _wait_until_held(url: str) -> None:
    admin = plugin_for_url(url).admin(BrokerConfig(url=url))
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            listed = {q.name: q for q in admin.list_queues().queues}
            if all(listed[q].consumers == 1 and listed[q].unacked == 1 for q in SERVED):
                return
            assert time.monotonic() < deadline, "the consumers never took their message"
            time.sleep(0.1)
    finally:
        admin.close()


def settings() -> Settings:
    return resolve(Overrides(profile=PROFILE))


def scrape() -> tuple[list[Sample], Served]:
    """One real scrape of the exporter over the profile, folding past :data:`MAX_QUEUES`, and the reading
    it served."""
    poller = ProfilePoller(settings(), 60.0)
    with Exporter([poller], "127.0.0.1", 0, max_queues=MAX_QUEUES) as exporter:
        deadline = time.monotonic() + WAIT_S
        while not poller.reading().up:
            assert time.monotonic() < deadline, "the exporter never read the profile"
            time.sleep(0.1)
        text = httpx.get(exporter.url, timeout=10).text
        reading = poller.reading()
    samples = [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]
    return samples, reading


def own_series(samples: list[Sample]) -> set[str]:
    """The queues served with series of their own (not summed into the fold)."""
    return {
        labels["queue"]
        for name, labels, _ in samples
        if name == names.QUEUE_MESSAGES and names.FOLDED not in labels
    }


def input_series(samples: list[Sample]) -> list[dict[str, str]]:
    """The scrape as promtool's input: counters grow by their scraped value each step (the same ratios as
    the scrape), gauges stay."""
    return [
        {
            "series": name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items())) + "}",
            "values": f"0+{value}x20" if name.endswith("_total") else f"{value}x20",
        }
        for name, labels, value in samples
        if not name.endswith(("_bucket", "_created"))
    ]


def promtool_test(rules: str, samples: list[Sample], tmp_path: Path, **checks: Any) -> None:
    """``promtool check rules`` and ``promtool test rules`` of ``rules`` over the scrape; ``checks`` are the
    test's ``alert_rule_test`` and ``promql_expr_test`` (evaluated at :data:`EVAL`)."""
    rule_file = tmp_path / "rules.yml"
    rule_file.write_text(rules)
    checked = subprocess.run(
        [promtool(), "check", "rules", str(rule_file)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    test = {"interval": "15s", "input_series": input_series(samples), **checks}
    test_file = tmp_path / "rules_test.yml"
    test_file.write_text(  # JSON is YAML
        json.dumps({"rule_files": [str(rule_file)], "evaluation_interval": "15s", "tests": [test]})
    )
    result = subprocess.run(
        [promtool(), "test", "rules", str(test_file)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def firing(expr: str, labels: list[dict[str, str]]) -> dict[str, Any]:
    """A ``promql_expr_test`` of ``expr`` (over ``ALERTS``) expecting exactly one sample per label set."""
    return {
        "expr": expr,
        "eval_time": EVAL,
        "exp_samples": [
            {"labels": "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in labels_.items()) + "}", "value": 1}
            for labels_ in labels
        ],
    }
