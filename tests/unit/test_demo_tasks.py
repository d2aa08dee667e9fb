"""The demo's task module: registered like any user's, failing as the chaos says, charging exactly once."""

import sqlite3
from collections import defaultdict

import pytest

from tqadmin import FatalError, TransientError
from tqadmin.demo import tasks
from tqadmin.demo.chaos import Chaos, Fate
from tqadmin.pipeline.tasks import REGISTRY, TaskContext


class FakePipeline:
    def __init__(self) -> None:
        self.hashes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def hincrby(self, key: str, field: str, amount: int) -> None:
        self.hashes[key][field] += amount


def job_with(fate: Fate, chaos: Chaos, task_type: str) -> str:
    return next(f"job-{i}" for i in range(10_000) if chaos.fate(task_type, f"job-{i}", 1) is fate)


def test_every_demo_task_type_is_registered_with_its_retry_budget() -> None:
    for name in ("resize_image", "send_email", "generate_report", "charge_card"):
        spec = REGISTRY.get(name)
        assert spec is not None and spec.max_retries is not None


@pytest.mark.parametrize(("fate", "error"), [(Fate.TRANSIENT, TransientError), (Fate.FATAL, FatalError)])
def test_injected_failures_raise_what_steers_the_worker(fate: Fate, error: type[Exception]) -> None:
    chaos = Chaos(failure_rate=0.5, seed=2, slow_s=0)
    job_id = job_with(fate, chaos, "charge_card")
    with pytest.raises(error, match=r"payment gateway|card declined"):
        tasks.strike(TaskContext(job_id, 1, "charge_card"), chaos)


def test_a_slow_run_sleeps_and_then_goes_on() -> None:
    chaos = Chaos(failure_rate=0.5, seed=2, slow_s=0.01)
    tasks.strike(TaskContext(job_with(Fate.SLOW, chaos, "generate_report"), 1, "generate_report"), chaos)


def test_a_resize_computes_a_thumbnail_that_fits_256_pixels() -> None:
    ctx = TaskContext(job_with(Fate.OK, tasks.CHAOS, "resize_image"), 1, "resize_image")
    result = tasks.resize_image(ctx, {"image_url": "s3://b/x.jpg", "width": 1280, "height": 720})
    assert result == {"thumbnail": "s3://b/x.jpg@256x144"}


def test_a_charge_is_an_effect_committed_with_the_completion_not_a_direct_write() -> None:
    job_id = job_with(Fate.OK, tasks.CHAOS, "charge_card")
    ctx = TaskContext(job_id, 1, "charge_card", queue="t1.payments")
    tasks.charge_card(ctx, {"customer": "cus_1", "amount_cents": 1999})
    effect = ctx.combined_effect()
    assert effect is not None
    tx = FakePipeline()
    effect(tx)
    key = tasks.ledger_key("t1", job_id)
    assert key.startswith("t1:charge:{") and job_id in key
    assert tx.hashes[key] == {"times": 1, "cents": 1999}


def test_the_ledger_also_works_in_an_sqlite_transaction() -> None:
    job_id = job_with(Fate.OK, tasks.CHAOS, "charge_card")
    connection = sqlite3.connect(":memory:")
    for _ in range(2):  # two charges of one card: the effects add up as Redis's HINCRBY would
        ctx = TaskContext(job_id, 1, "charge_card", queue="t1.payments")
        tasks.charge_card(ctx, {"customer": "cus_1", "amount_cents": 500})
        effect = ctx.combined_effect()
        assert effect is not None
        effect(connection)
    rows = connection.execute(
        "SELECT field, value FROM tq_effects WHERE name = ?", (tasks.ledger_key("t1", job_id),)
    ).fetchall()
    assert dict(rows) == {"times": 2, "cents": 1000}
