"""The exporter serves each queue's verdict, and the shipped rules page on it: a real worker whose task blocks
on the embedded broker makes its queue ``stalled`` in the exporter's reading (the read service's verdict
judge, over the profile's ``stall_after_s``) and its worker wedged; promtool over the real scrape fires
``TqadminQueueStalled`` for that queue and ``TqadminWorkersWedged``, and nothing else of theirs. The time from
the block to the verdict served is printed."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from worker_harness import SQLitePipeline, sqlite_pipeline_fixture  # noqa: F401 - the fixture

from tests.exporter.trouble import EVAL, promtool_test
from tqadmin.alerting import conditions
from tqadmin.alerting.rules import rules_yaml, verdict_rules
from tqadmin.config import Overrides, resolve
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.exporter.service import Exporter
from tqadmin.telemetry import metric_names as names

TASKS = str(Path(__file__).with_name("health_tasks.py"))
STALL_AFTER_S = 3


def test_a_stalled_queue_and_a_wedged_worker_are_served_and_page(
    sqlite_pipeline: SQLitePipeline,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, queue = sqlite_pipeline.broker_url, sqlite_pipeline.queue
    config = tmp_path / "config.toml"
    config.write_text(
        f'[profiles.h]\nbroker = "{url}"\nstore = "{url}"\nstall_after_s = {STALL_AFTER_S}\n'
        "wedged_no_history_s = 1\nwedged_min_s = 1\n"
    )
    monkeypatch.setenv("TQADMIN_CONFIG", str(config))
    release, ran = tmp_path / "release", tmp_path / "runs"
    sqlite_pipeline.start_with_tasks(TASKS, "--concurrency", "1", "--heartbeat", "0.5")
    job = {"task_type": "block", "release": str(release), "runs": str(ran)}
    sqlite_pipeline.publish([{**job, "id": f"j{i}"} for i in range(2)])
    capsys.readouterr()  # what publish printed
    sqlite_pipeline.wait_for(ran.exists, 60, "the job thread blocked")
    blocked_at = time.monotonic()
    poller = ProfilePoller(resolve(Overrides(profile="h")), 0.5)
    try:
        with Exporter([poller], "127.0.0.1", 0, max_queues=100) as exporter:
            sqlite_pipeline.wait_for(
                lambda: (v := poller.reading().verdicts.get(queue)) is not None and v.verdict == "stalled",
                60,
                "the queue served stalled",
            )
            served_s = time.monotonic() - blocked_at
            sqlite_pipeline.wait_for(lambda: poller.reading().wedged[names.FRAMEWORK] == 1, 60, "wedged")
            text = httpx.get(exporter.url, timeout=10).text
    finally:
        release.touch()
    samples = [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]
    verdicts = {labels["verdict"]: value for name, labels, value in samples if name == names.QUEUE_VERDICT
                and labels["queue"] == queue}  # fmt: skip
    assert verdicts == {v: float(v == "stalled") for v in verdicts} and len(verdicts) == 7, verdicts
    assert not any(
        name == names.QUEUE_VERDICT and labels["queue"].endswith(".dlq") for name, labels, _ in samples
    )

    summaries = {alert: summary for alert, _, summary, _ in verdict_rules("h")}
    labels = {"profile": "h", "severity": "warning"}
    promtool_test(
        rules_yaml([("h", resolve(Overrides(profile="h")).thresholds)]),
        samples,
        tmp_path,
        alert_rule_test=[
            {
                "eval_time": EVAL,
                "alertname": conditions.STALLED,
                "exp_alerts": [
                    {
                        "exp_labels": {**labels, "queue": queue, "verdict": "stalled"},
                        "exp_annotations": {
                            "summary": summaries[conditions.STALLED].replace("{{ $labels.queue }}", queue)
                        },
                    }
                ],
            },
            {"eval_time": EVAL, "alertname": conditions.DEGRADED, "exp_alerts": []},
            {
                "eval_time": EVAL,
                "alertname": conditions.WEDGED,
                "exp_alerts": [
                    {
                        "exp_labels": {**labels, "framework": names.FRAMEWORK},
                        "exp_annotations": {
                            "summary": summaries[conditions.WEDGED]
                            .replace("{{ $labels.profile }}", "h")
                            .replace("{{ $labels.framework }}", names.FRAMEWORK)
                        },
                    }
                ],
            },
        ],
    )
    with capsys.disabled():
        print(
            f"\nexporter: stalled served {served_s:.1f} s after the block (stall_after_s {STALL_AFTER_S});"
            " TqadminQueueStalled and TqadminWorkersWedged fire under promtool"
        )
