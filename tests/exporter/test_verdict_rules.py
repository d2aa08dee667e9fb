"""The rules on the verdicts and on the oldest dead letter fire where the dashboard paints the same: promtool
over the exporter's series of a stalled and a degraded queue, and of dead letters either side of the
profile's ``dlq_age_threshold_s`` (the real scrape of a stalled queue: tests/e2e/test_health_alerts.py)."""

from __future__ import annotations

from pathlib import Path

from tests.exporter.trouble import firing, promtool_test
from tqadmin.alerting import conditions
from tqadmin.alerting.conditions import QueueContext, queue_alerts
from tqadmin.alerting.rules import rules_yaml
from tqadmin.config import Thresholds
from tqadmin.plugin.models import QueueStats
from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.verdict import VERDICTS, QueueVerdict

THRESHOLDS = Thresholds(dlq_oldest_age_s=600)


def verdict_series(queue: str, verdict: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (names.QUEUE_VERDICT, {"profile": "p", "queue": queue, "verdict": v}, float(v == verdict))
        for v in VERDICTS
    ]


def test_stalled_degraded_and_old_dead_letters_page_as_the_dashboard_paints_them(tmp_path: Path) -> None:
    queues = {
        "stuck": (QueueStats("stuck", 9, 9, 0, 2), QueueVerdict("stalled", "ready 9 for 1m00s, 2 consumers")),
        "slow": (QueueStats("slow", 90, 90, 0, 2), QueueVerdict("degraded", "backlog growing")),
        "fine": (
            QueueStats("fine", 0, 0, 0, 2, dlq_messages=1, dlq_oldest_age_s=599),
            QueueVerdict("idle", ""),
        ),
        "old": (
            QueueStats("old", 0, 0, 0, 2, dlq_messages=1, dlq_oldest_age_s=600),
            QueueVerdict("idle", ""),
        ),
    }
    samples = [s for name, (_, v) in queues.items() for s in verdict_series(name, v.verdict)]
    samples += [
        (names.QUEUE_DLQ_OLDEST_AGE, {"profile": "p", "queue": name}, q.dlq_oldest_age_s)
        for name, (q, _) in queues.items()
        if q.dlq_oldest_age_s is not None
    ]
    painted = {
        (alert, name)
        for name, (q, v) in queues.items()
        for alert in queue_alerts(q, THRESHOLDS, QueueContext(verdict=v))
        if alert != conditions.DEAD_LETTERS
    }
    assert painted == {
        (conditions.STALLED, "stuck"),
        (conditions.DEGRADED, "slow"),
        (conditions.DLQ_AGE, "old"),
    }
    promtool_test(
        rules_yaml([("p", THRESHOLDS)]),
        samples,
        tmp_path,
        promql_expr_test=[
            firing(
                "group by (alertname, queue)"
                f' (ALERTS{{alertstate="firing",alertname!="{conditions.DEAD_LETTERS}"}})',
                [{"alertname": a, "queue": q} for a, q in sorted(painted)],
            )
        ],
    )


def test_the_dashboards_phrase_carries_the_verdicts_reason() -> None:
    stuck = QueueStats("stuck", 9, 9, 0, 2)
    reason = "ready 9 for 1m00s, 2 consumers, no ack since 14:02:11"
    found = queue_alerts(stuck, Thresholds(), QueueContext(verdict=QueueVerdict("stalled", reason)))
    assert found[conditions.STALLED] == f"stalled: {reason}"
