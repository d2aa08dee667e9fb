"""Task type names a producer makes up are not kept: 10,000 jobs, each of a task type of its own that no
handler takes, through a real worker leave one label in its telemetry, so its heartbeat snapshot and the
exporter's series stay at the size of the task types it has, whatever the names (docs/pipeline.md)."""

from __future__ import annotations

import json

from prometheus_client.core import Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from worker_harness import SQLitePipeline, sqlite_pipeline_fixture  # noqa: F401 - the fixture

from tqadmin.config import Overrides, resolve
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.exporter.series import fold, reading_families
from tqadmin.store import open_store
from tqadmin.telemetry import metric_names as names
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.telemetry.task_names import UNKNOWN_TASK

MADE_UP = 10_000
SERIES_PER_TASK_TYPE = 45  # docs/exporter.md: 5 counters, dead letters by reason, 2 histograms of 17 + 2


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self):  # type: ignore[no-untyped-def]
        return iter(self.families)


def test_ten_thousand_made_up_task_types_leave_one_label_in_the_snapshot_and_the_exporter(
    sqlite_pipeline: SQLitePipeline,
) -> None:
    pipeline = sqlite_pipeline
    made_up = [
        json.dumps({"task_type": f"made-up-{n:05d}-{'x' * 66}", "id": f"{pipeline.id_prefix}u{n}"}).encode()
        for n in range(MADE_UP)
    ]
    pipeline.publish_raw(made_up)
    ids = pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(20)])
    pipeline.start("--concurrency", "4", "--heartbeat", "0.5")
    pipeline.wait_for(lambda: pipeline.depth(pipeline.dlq) == MADE_UP, 300, "the made-up jobs' dead letters")
    pipeline.wait_for(lambda: pipeline.effects() == dict.fromkeys(ids, 1), 60, "the jobs of a real task")

    store = open_store(pipeline.store_url)
    try:

        def snapshot() -> WorkerSnapshot:
            [record] = store.workers()
            return record.snapshot

        pipeline.wait_for(
            lambda: snapshot().totals().dead_lettered == MADE_UP, 60, "a heartbeat with every dead letter"
        )
        last = snapshot()
    finally:
        store.close()
    assert sorted(last.stats) == [(pipeline.queue, UNKNOWN_TASK), (pipeline.queue, "count")]
    assert last.stats[(pipeline.queue, UNKNOWN_TASK)].by_reason() == {"unknown_task": MADE_UP}
    assert len(last.encode()) < 10_000  # 1.8 MB when each made-up name was a key

    profile = Overrides(broker_url=pipeline.broker_url, store_url=pipeline.store_url)
    poller = ProfilePoller(resolve(profile), 5)
    try:
        assert poller.poll()
        readings = [poller.reading()]
    finally:
        poller.close()
    text = generate_latest(_Families(reading_families(readings, fold(readings, 2000)))).decode()
    samples = [(s.name, s.labels) for f in text_string_to_metric_families(text) for s in f.samples]
    task_series = [labels for _, labels in samples if "task_type" in labels]
    assert {labels["task_type"] for labels in task_series} == {UNKNOWN_TASK, "count"}
    assert len(task_series) <= 2 * SERIES_PER_TASK_TYPE
    assert (names.TASK_TYPES_FOLDED, {"profile": "default", "framework": "tqadmin"}) in samples
