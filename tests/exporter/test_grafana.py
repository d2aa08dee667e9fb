"""deploy/grafana/tqadmin.json: every query names only series the exporter serves, and parses as PromQL."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from tests.exporter.trouble import promtool
from tqadmin.exporter.polling import Served
from tqadmin.exporter.series import fold, health_families, reading_families
from tqadmin.pipeline.cron.status import CronStatus, ScheduleRow
from tqadmin.plugin.models import QueueStats
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.verdict import QueueVerdict

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "tqadmin.json"


def queries() -> list[str]:
    document = json.loads(DASHBOARD.read_text())
    found = [target["expr"] for panel in document["panels"] for target in panel["targets"]]
    found += [v["query"] for v in document["templating"]["list"] if v["type"] == "query"]
    return found


def served_names() -> set[str]:
    """Every sample name a scrape serves when every part has something to show."""
    telemetry = Telemetry()
    telemetry.started("q", "t", 0.1)
    telemetry.finished("q", "t", 0.2, ok=False)
    telemetry.retried("q", "t")
    telemetry.deduplicated("q", "t")
    telemetry.dead_lettered("q", "t", "fatal")
    queue = QueueStats(
        "q",
        1,
        1,
        0,
        1,
        1.0,
        1.0,
        1.0,
        oldest_age_s=3.0,
        dlq="q.dlq",
        dlq_messages=1,
        delayed=0,
        dlq_oldest_age_s=5.0,
        drain_s=10.0,
        growing=False,
    )
    reading = Served(
        "p",
        queues=(queue,),
        tasks={"t": telemetry.read()[("q", "t")]},
        workers=Counter(live=1),
        worker_queues=((("q",), True),),
        cron=CronStatus((_fired(),), None, 3, (), (), time.time()),
        verdicts={"q": QueueVerdict("stalled", "ready 1 for 1m00s, 1 consumer, no ack in 1m00s")},
        up=True,
        last_success_s=time.time(),
        duration_s=0.1,
    )

    class ServedOnce(Collector):
        def collect(self):  # type: ignore[no-untyped-def]
            return iter(
                [*health_families([reading], time.time()), *reading_families([reading], fold([reading], 10))]
            )

    text = generate_latest(ServedOnce()).decode()
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


def _fired() -> ScheduleRow:
    return ScheduleRow(
        "s", "* * * * *", "UTC", "q", "t", 0.0, 0.0, 60.0, 2, 1, 1.0, 0.2, "i", 3, 0, "i", 3, 1.0, "file"
    )


def test_every_query_names_only_series_the_exporter_serves() -> None:
    served = served_names()
    used = {name for query in queries() for name in re.findall(r"\btqadmin_\w+", query)}
    assert used, "the dashboard has queries"
    assert used - served == set(), "names the exporter does not serve"


def test_every_query_parses_as_promql(tmp_path: Path) -> None:
    exprs = [q for q in queries() if not q.startswith("label_values(")]
    rules = {
        "groups": [
            {"name": "grafana", "rules": [{"record": f"panel:q{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    path = tmp_path / "panels.yml"
    path.write_text(json.dumps(rules))
    checked = subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_variable_offering_all_selects_every_value_by_one_regex() -> None:
    """Without ``allValue``, Grafana's All sends every value it listed at its last refresh joined into one
    regex: over 2,000 queues a query too long to send, and a queue created since is left out."""
    document = json.loads(DASHBOARD.read_text())
    offering = {v["name"]: v.get("allValue") for v in document["templating"]["list"] if v.get("includeAll")}
    assert offering == {"profile": ".*", "queue": ".*"}
