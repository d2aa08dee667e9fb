"""`tqadmin exporter --alert-rules`: Prometheus rules for exactly the conditions the dashboard paints red.

A real embedded broker and store are set up to meet every condition (a queue over the depth, age and
dead-letter thresholds, ready messages with no consumer, a dead-letter queue that must not count as
unconsumed, a queue whose only worker is dead, a task type failing too often), the exporter scrapes them,
the scrape becomes promtool's input series, and promtool must fire exactly the alerts the dashboard's
conditions (tqadmin.alerting.conditions) give for the same figures.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tqadmin.alerting import conditions
from tqadmin.alerting.rules import profile_rules, rules_yaml
from tqadmin.config import Overrides, resolve
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.exporter.service import Exporter
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.store import open_store
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.snapshot import WorkerSnapshot

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = (
    "depth_threshold = 2\noldest_age_threshold_s = 0.001\ndlq_threshold = 1\nfailure_rate_threshold = 0.05\n"
)


def promtool() -> str:
    found = shutil.which("promtool") or str(ROOT / ".tools" / "usr" / "bin" / "promtool")
    assert Path(found).exists(), "promtool is missing: run scripts/ready-promtool (make test does)"
    return found


@pytest.fixture
def prod(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A profile on an embedded file, with thresholds, holding a pipeline in trouble."""
    url = f"sqlite:///{isolated_env / 'tq.db'}"
    config = isolated_env / "config.toml"
    config.write_text(f'[profiles.prod]\nbroker = "{url}"\nstore = "{url}"\n{THRESHOLDS}')
    monkeypatch.setenv("TQADMIN_CONFIG", str(config))
    transport = plugin_for_url(url).transport(BrokerConfig(url=url))
    for queue in ("orders", "emails"):
        transport.declare(queue)
    jobs = [("orders", Message(b'{"task_type": "charge", "id": "%d"}' % i)) for i in range(3)]
    dead = [("orders.dlq", Message(b'{"task_type": "charge", "id": "d%d"}' % i)) for i in range(2)]
    assert transport.publish([*jobs, *dead]).all_confirmed
    transport.close()
    store = open_store(url)
    stats = {("emails", "send"): TaskStats(done=6, failed=4)}
    now = time.time()
    store.beat(WorkerSnapshot("w1", "h", 1, ("emails",), now - 60, now, stats=stats), ttl_s=0)
    store.close()
    return config


def scrape_and_judge() -> tuple[list[tuple[str, dict[str, str], float]], list[tuple[str, dict[str, str]]]]:
    """One real scrape, and the alerts the dashboard's conditions give for the same reading."""
    settings = resolve(Overrides(profile="prod"))
    poller = ProfilePoller(settings, 60.0)
    with Exporter([poller], "127.0.0.1", 0) as exporter:
        deadline = time.monotonic() + 60  # a deadline, not a speed
        while not poller.reading().up:
            assert time.monotonic() < deadline, "the exporter never read the profile"
            time.sleep(0.1)
        text = httpx.get(exporter.url, timeout=10).text
        reading = poller.reading()
    samples = [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]
    expected: list[tuple[str, dict[str, str]]] = []
    queues = reading.queues or ()
    contexts = conditions.queue_contexts(queues, reading.worker_queues)
    for queue in queues:
        for alert in conditions.queue_alerts(queue, settings.thresholds, contexts[queue.name]):
            labels = {"profile": "prod", "queue": queue.name}
            expected.append(
                (alert, {**labels, "state": "live"} if alert == conditions.WORKERS_DEAD else labels)
            )
    for task_type, stats in reading.tasks.items():
        if conditions.failure_rate_alert(stats.failed, stats.done + stats.failed, settings.thresholds):
            expected.append((conditions.FAILURE_RATE, {"profile": "prod", "task_type": task_type}))
    return samples, expected


def test_the_rules_pass_promtool_and_fire_exactly_where_the_dashboard_paints_red(
    prod: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tqadmin.cli import main

    assert main(["exporter", "--alert-rules", "--profiles", "prod"]) == 0
    rules = tmp_path / "rules.yml"
    rules.write_text(capsys.readouterr().out)
    checked = subprocess.run(
        [promtool(), "check", "rules", str(rules)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

    samples, expected = scrape_and_judge()
    fired = {alert for alert, _ in expected}
    assert fired == {
        conditions.DEPTH,
        conditions.OLDEST,
        conditions.DEAD_LETTERS,
        conditions.NO_CONSUMER,
        conditions.WORKERS_DEAD,
        conditions.FAILURE_RATE,
    }, "the fixture meets every condition"
    assert (conditions.NO_CONSUMER, {"profile": "prod", "queue": "orders.dlq"}) not in expected

    summaries = {
        alert: summary
        for alert, _, summary in profile_rules("prod", resolve(Overrides(profile="prod")).thresholds)
    }
    series = [
        # counters grow by their scraped value each step (the same ratios as the scrape), gauges stay
        {
            "series": _series(name, labels),
            "values": f"0+{value}x20" if name.endswith("_total") else f"{value}x20",
        }
        for name, labels, value in samples
        if not name.endswith(("_bucket", "_created"))
    ]
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": series,
                "alert_rule_test": [
                    {
                        "eval_time": "3m",
                        "alertname": alert,
                        "exp_alerts": [
                            {
                                "exp_labels": {**labels, "severity": "warning"},
                                "exp_annotations": {"summary": _render(summaries[alert], labels)},
                            }
                            for name, labels in expected
                            if name == alert
                        ],
                    }
                    for alert in summaries
                ],
            }
        ],
    }
    test_file = tmp_path / "rules_test.yml"
    test_file.write_text(json.dumps(tests))  # JSON is YAML
    result = subprocess.run(
        [promtool(), "test", "rules", str(test_file)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f"{key}={json.dumps(value)}" for key, value in sorted(labels.items())) + "}"


def _render(summary: str, labels: dict[str, str]) -> str:
    for key, value in labels.items():
        summary = summary.replace(f"{{{{ $labels.{key} }}}}", value)
    return summary


def test_rules_are_written_for_every_profile_named_with_its_own_thresholds() -> None:
    text = rules_yaml([("a", resolve(Overrides()).thresholds), ("b", resolve(Overrides()).thresholds)])
    assert '- name: "tqadmin-a"' in text and '- name: "tqadmin-b"' in text
    assert text.count("alert: TqadminQueueNoConsumer") == 2
    assert "TqadminQueueDepth" not in text, "no depth threshold configured: no depth rule"
