"""`tqadmin exporter --alert-rules`: Prometheus rules for exactly the conditions the dashboard paints red.

A real embedded broker and store are set up to meet every condition on both sides of the ``--max-queues``
fold (tests/exporter/trouble.py), the exporter scrapes them, the scrape becomes promtool's input series, and
promtool must fire exactly the alerts the dashboard's conditions (tqadmin.alerting.conditions) give for each
queue with a series of its own, the failure-rate alert at its default threshold, and the fold alert; never a
queue alert on the fold series. The dashboard's own painted rows are compared with the firing alerts in
tests/tui/test_alerts_agree.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from tests.exporter.trouble import (
    EVAL,
    KEPT,
    MAX_QUEUES,
    PAST_THE_CAP,
    PROFILE,
    firing,
    own_series,
    pipeline_in_trouble,
    promtool_test,
    scrape,
    settings,
)
from tqadmin.alerting import conditions
from tqadmin.alerting.rules import (
    POLL_STALE,
    PROFILE_DOWN,
    QUEUES_FOLDED,
    health_rules,
    profile_rules,
    rules_yaml,
)
from tqadmin.config import Overrides, Thresholds, resolve
from tqadmin.errors import ConfigError
from tqadmin.telemetry import metric_names as names


@pytest.fixture
def prod(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with pipeline_in_trouble(isolated_env) as config:
        monkeypatch.setenv("TQADMIN_CONFIG", str(config))
        yield config


def test_the_rules_fire_exactly_the_dashboards_conditions_on_each_queue_served_as_itself_and_page_on_the_fold(
    prod: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tqadmin.cli import main

    assert main(["exporter", "--alert-rules", "--profiles", PROFILE]) == 0
    rules = capsys.readouterr().out
    samples, reading = scrape()
    thresholds = settings().thresholds
    assert own_series(samples) == set(KEPT), f"the first {MAX_QUEUES} queues keep their series"
    assert (names.QUEUES_FOLDED, {"profile": PROFILE}, len(PAST_THE_CAP)) in samples

    queues = {q.name: q for q in reading.queues or ()}
    contexts = conditions.queue_contexts(queues.values(), reading.worker_queues)
    painted = {name: conditions.queue_alerts(q, thresholds, contexts[name]) for name, q in queues.items()}
    assert set(painted["d.unconsumed"]) == {conditions.NO_CONSUMER, conditions.OLDEST}, (
        "a queue past the cap is red on the dashboard: only the fold alert can say so"
    )
    expected: list[tuple[str, dict[str, str]]] = [(QUEUES_FOLDED, {"profile": PROFILE})]
    for name in KEPT:
        for alert in painted[name]:
            labels = {"profile": PROFILE, "queue": name}
            expected.append(
                (alert, {**labels, "state": "live"} if alert == conditions.WORKERS_DEAD else labels)
            )
    for task_type, stats in reading.tasks.items():
        if conditions.failure_rate_alert(stats.failed, stats.done + stats.failed, thresholds):
            expected.append((conditions.FAILURE_RATE, {"profile": PROFILE, "task_type": task_type}))
    assert {alert for alert, _ in expected} == {
        conditions.DEPTH,
        conditions.OLDEST,
        conditions.DEAD_LETTERS,
        conditions.NO_CONSUMER,
        conditions.WORKERS_DEAD,
        conditions.FAILURE_RATE,
        QUEUES_FOLDED,
    }, "the pipeline meets every condition, the failure rate at its default threshold"
    assert (conditions.NO_CONSUMER, {"profile": PROFILE, "queue": "a.orders.dlq"}) not in expected

    summaries = {alert: summary for alert, _, summary in profile_rules(PROFILE, thresholds)}
    promtool_test(
        rules,
        samples,
        tmp_path,
        alert_rule_test=[
            {
                "eval_time": EVAL,
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
    )


def test_a_real_queue_named_like_the_old_fold_keeps_its_own_series_and_is_alerted_on_as_itself(
    prod: Path, tmp_path: Path
) -> None:
    samples, _ = scrape()
    ready = [(labels, value) for name, labels, value in samples if name == names.QUEUE_READY]
    assert ({"profile": PROFILE, "queue": "_other"}, 1) in ready
    folds = [labels for labels, _ in ready if names.FOLDED in labels]
    assert folds == [{"profile": PROFILE, "queue": names.OTHER_QUEUES, names.FOLDED: "true"}]
    promtool_test(
        rules_yaml([(PROFILE, settings().thresholds)]),
        samples,
        tmp_path,
        promql_expr_test=[
            firing(
                'group by (alertname, queue) (ALERTS{alertstate="firing",queue="_other"})',
                [
                    {"alertname": conditions.NO_CONSUMER, "queue": "_other"},
                    {"alertname": conditions.OLDEST, "queue": "_other"},
                ],
            ),
            firing(f'ALERTS{{alertstate="firing",queue="{names.OTHER_QUEUES}"}}', []),
        ],
    )


def test_thresholds_are_written_exactly_and_fire_at_the_value_configured(tmp_path: Path) -> None:
    thresholds = Thresholds(depth=1234567, oldest_age_s=0.30000000000000004, failure_rate=0.07)
    rules = rules_yaml([("p", thresholds)])
    assert 'tqadmin_queue_messages{profile=\\"p\\",folded!=\\"true\\"} >= 1234567' in rules
    assert ">= 0.30000000000000004" in rules and "e+" not in rules
    assert "7 % or more of its runs failed" in rules
    gauges = [
        ("tqadmin_queue_messages", {"profile": "p", "queue": "under"}, 1234566.0),
        ("tqadmin_queue_messages", {"profile": "p", "queue": "at"}, 1234567.0),
        ("tqadmin_queue_oldest_age_seconds", {"profile": "p", "queue": "under"}, 0.3),
    ]
    promtool_test(
        rules,
        gauges,
        tmp_path,
        promql_expr_test=[
            firing(
                'group by (alertname, queue) (ALERTS{alertstate="firing"})',
                [{"alertname": conditions.DEPTH, "queue": "at"}],
            )
        ],
    )


def test_a_profile_without_a_failure_rate_threshold_gets_the_documented_five_percent(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    thresholds = configured(isolated_env, monkeypatch, "")
    assert thresholds.failure_rate == 0.05 and thresholds.dlq_messages == 1
    rules = {alert: (expr, summary) for alert, expr, summary in profile_rules("bare", thresholds)}
    expr, summary = rules[conditions.FAILURE_RATE]
    assert expr.endswith(" >= 0.05") and "5 % or more" in summary


@pytest.mark.parametrize("value", ["inf", "nan", "true"])
def test_a_threshold_that_is_no_finite_number_is_a_config_error(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    with pytest.raises(ConfigError, match="threshold depth_threshold must be a finite number"):
        configured(isolated_env, monkeypatch, f"depth_threshold = {value}\n")


def configured(home: Path, monkeypatch: pytest.MonkeyPatch, thresholds: str) -> Thresholds:
    """The thresholds of a profile configured with ``thresholds`` (TOML lines) and nothing else."""
    config = home / "config.toml"
    config.write_text(f'[profiles.bare]\nbroker = "sqlite:///x.db"\n{thresholds}')
    monkeypatch.setenv("TQADMIN_CONFIG", str(config))
    return resolve(Overrides(profile="bare")).thresholds


def test_rules_are_written_for_every_profile_named_with_its_own_thresholds() -> None:
    text = rules_yaml([("a", resolve(Overrides()).thresholds), ("b", resolve(Overrides()).thresholds)])
    assert '- name: "tqadmin-a"' in text and '- name: "tqadmin-b"' in text
    assert text.count("alert: TqadminQueueNoConsumer") == 2
    assert text.count(f"alert: {QUEUES_FOLDED}") == 2
    assert "TqadminQueueDepth" not in text, "no depth threshold configured: no depth rule"


@pytest.mark.rabbitmq
def test_the_fold_series_is_named_as_no_rabbitmq_queue_can_be() -> None:
    connection = pika.BlockingConnection(pika.URLParameters("amqp://guest:guest@127.0.0.1:5672/%2F"))
    try:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            connection.channel().queue_declare(names.OTHER_QUEUES)
        assert refused.value.reply_code == 403
    finally:
        connection.close()


@pytest.mark.sqs
def test_the_fold_series_is_named_as_no_sqs_queue_can_be(moto_endpoint: str) -> None:
    from botocore.exceptions import ClientError

    from tests.support.sqs_server import client

    with pytest.raises(ClientError, match="alphanumeric characters, hyphens, or underscores"):
        client(moto_endpoint).create_queue(QueueName=names.OTHER_QUEUES)


def _render(summary: str, labels: dict[str, str]) -> str:
    for key, value in labels.items():
        summary = summary.replace(f"{{{{ $labels.{key} }}}}", value)
    return summary


def test_a_profile_down_for_5_minutes_and_values_older_than_2_minutes_page(tmp_path: Path) -> None:
    series = [  # p: up, then down from 2m15s on, its values ageing from then; q: up all along
        {"series": 'tqadmin_up{profile="p"}', "values": "1x8 0x40"},
        {"series": 'tqadmin_poll_age_seconds{profile="p"}', "values": "5x8 20+15x40"},
        {"series": 'tqadmin_up{profile="q"}', "values": "1x48"},
        {"series": 'tqadmin_poll_age_seconds{profile="q"}', "values": "5x48"},
    ]
    summaries = {alert: summary for alert, _, summary, _ in health_rules("{{ $labels.profile }}")}

    def alerts(at: str, name: str, profiles: list[str]) -> dict[str, object]:
        return {
            "eval_time": at,
            "alertname": name,
            "exp_alerts": [
                {
                    "exp_labels": {"profile": p, "severity": "warning"},
                    "exp_annotations": {"summary": summaries[name].replace("{{ $labels.profile }}", p)},
                }
                for p in profiles
            ],
        }

    promtool_test(
        rules_yaml([("p", Thresholds()), ("q", Thresholds())]),
        [],
        tmp_path,
        input_series=series,
        alert_rule_test=[
            alerts("6m", PROFILE_DOWN, []),  # down for 3m45s: not yet
            alerts("7m15s", PROFILE_DOWN, ["p"]),
            alerts("4m45s", POLL_STALE, []),  # over 120 s old from 4m on: not for a minute yet
            alerts("6m", POLL_STALE, ["p"]),
        ],
    )


def test_a_pause_standing_past_the_threshold_pages(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tqadmin.alerting.rules import PAUSE_LONG, pause_rules

    assert Thresholds().pause_s == 3600  # the documented default
    assert configured(isolated_env, monkeypatch, "pause_threshold_s = 600\n").pause_s == 600
    assert pause_rules("p", Thresholds(pause_s=None)) == []
    since = names.PAUSED_SINCE
    series = [  # set at 0 s (a whole queue) and at 4000 s (one task type), standing all along
        {"series": f'{since}{{profile="p",queue="orders",task_type="(all)"}}', "values": "0x600"},
        {"series": f'{since}{{profile="p",queue="mail",task_type="send"}}', "values": "4000x600"},
    ]
    ((_, _, summary),) = pause_rules("p", Thresholds())

    def alerts(at: str, paused: list[tuple[str, str]]) -> dict[str, object]:
        return {
            "eval_time": at,
            "alertname": PAUSE_LONG,
            "exp_alerts": [
                {
                    "exp_labels": {"profile": "p", "queue": q, "task_type": t, "severity": "warning"},
                    "exp_annotations": {"summary": _render(summary, {"queue": q, "task_type": t})},
                }
                for q, t in paused
            ],
        }

    promtool_test(
        rules_yaml([("p", Thresholds())]),
        [],
        tmp_path,
        input_series=series,
        alert_rule_test=[
            alerts("59m", []),  # not an hour yet
            alerts("62m", [("orders", "(all)")]),  # over an hour, for a minute
            alerts("2h", [("orders", "(all)")]),
            alerts("2h10m", [("orders", "(all)"), ("mail", "send")]),  # 3800 s for the second
        ],
    )
