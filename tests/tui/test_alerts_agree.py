"""The rows the dashboard paints red and the alerts the shipped rules fire are the same set for one state.

The pipeline in trouble of ``tests/exporter/trouble.py`` (queues on both sides of the ``--max-queues`` fold,
with and without consumers; a task type failing more often than the default failure-rate threshold allows)
is shown by the real dashboard and scraped by the real exporter, and promtool evaluates the rules
``tqadmin exporter --alert-rules`` writes over the scrape. Each red row is carried by firing alerts: a queue
with series of its own by alerts labelled with it, a queue past the cap by the fold alert, a task type by
its failure-rate alert; and no alert fires that no red row carries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.style import Style
from rich.table import Table
from textual.widgets import Static

from tests.exporter import trouble
from tests.tui.seeded import until
from tqadmin.alerting.conditions import FAILURE_RATE, queue_alerts
from tqadmin.alerting.rules import QUEUES_FOLDED, rules_yaml
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.widgets.queue_table import QueueTable, row_text

pytestmark = pytest.mark.anyio
SIZE = (160, 50)


async def test_the_dashboards_red_rows_are_exactly_the_rows_the_alert_rules_fire_on(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with trouble.pipeline_in_trouble(isolated_env) as config:
        monkeypatch.setenv("TQADMIN_CONFIG", str(config))
        red_queues, red_tasks = await painted_red()  # first: its telemetry is the minute after the beats
        samples, _ = trouble.scrape()
    assert set(red_queues) == {"_other", "a.orders", "a.orders.dlq", "b.emails", "d.unconsumed"}
    assert red_tasks == {"send"}, "failing 40 % of its runs, over the default threshold of 5 %"
    own = trouble.own_series(samples)
    past_the_cap = set(red_queues) - own
    assert past_the_cap == {"d.unconsumed"}, "a red queue past the cap"

    trouble.promtool_test(
        rules_yaml([(trouble.PROFILE, trouble.settings().thresholds)]),
        samples,
        tmp_path,
        promql_expr_test=[
            trouble.firing(
                'group by (alertname, queue) (ALERTS{alertstate="firing",queue!=""})',
                [
                    {"alertname": alert, "queue": queue}
                    for queue, alerts in sorted(red_queues.items())
                    if queue in own
                    for alert in sorted(alerts)
                ],
            ),
            trouble.firing(
                'group by (alertname, task_type) (ALERTS{alertstate="firing",task_type!=""})',
                [{"alertname": FAILURE_RATE, "task_type": task_type} for task_type in sorted(red_tasks)],
            ),
            trouble.firing(
                'group by (alertname) (ALERTS{alertstate="firing",queue="",task_type=""})',
                [{"alertname": QUEUES_FOLDED}] if past_the_cap else [],
            ),
        ],
    )


async def painted_red() -> tuple[dict[str, set[str]], set[str]]:
    """The queues the dashboard paints red, each with the conditions it paints it for (evaluated on the
    table's own figures, thresholds and worker contexts), and the task types it paints red; read once it
    shows every queue and task type."""
    app = TqadminApp(profile=trouble.PROFILE, refresh_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(QueueTable)
        await until(
            pilot,
            lambda: table.row_count == len(trouble.KEPT + trouble.PAST_THE_CAP) and len(task_rows(app)) == 2,
        )
        queues: dict[str, set[str]] = {}
        for name in table.order:
            stats, context = table.board.stats[name], table.context(name)
            alerts = set(queue_alerts(stats, table.thresholds, context))
            painted = row_text(stats, table.board, table.thresholds, context)
            assert any(red(span.style) for span in painted.spans) == bool(alerts), name
            if alerts:
                queues[name] = alerts
        return queues, {name for name, painted in task_rows(app).items() if painted}


def task_rows(app: TqadminApp) -> dict[str, bool]:
    """Each task type of the percentiles table, and whether its name is painted red."""
    table = app.screen.query_one("#telemetry-table", Static).content
    if not isinstance(table, Table) or not table.columns:
        return {}
    return {str(cell): red(getattr(cell, "style", "")) for cell in table.columns[0].cells}


def red(style: Any) -> bool:
    color = Style.parse(str(style)).color
    return color is not None and color.name == "red"
