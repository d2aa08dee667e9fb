"""The neutral ``ctx.once`` effects on every store, and README's task example run verbatim on them.

README's example is what a newcomer copies first: it is taken from README.md as it stands, executed as a task
module (``make_thumbnail`` is the reader's own function: a stand-in is given) and its job completed twice, as
a duplicate delivery would, on the embedded SQLite store and on Redis.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from storekit import StoreFactory

from tqadmin.files.sqlite import path_of
from tqadmin.pipeline import tasks
from tqadmin.pipeline.tasks import TaskContext, TaskRegistry
from tqadmin.store.completion.base import ClaimState, StateStore
from tqadmin.store.completion.effects import add, set_field
from tqadmin.store.keys import job_tag

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/0"


def task_example(document: Path) -> str:
    """The document's Python block that registers a task, as written."""
    blocks = re.findall(r"```python\n(.*?)```", document.read_text(encoding="utf-8"), re.DOTALL)
    [example] = [block for block in blocks if "@task(" in block and "ctx.once(" in block]
    return str(example)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> TaskRegistry:
    """A registry of the test's own: the example's ``resize_image`` must not meet the demo's."""
    fresh = TaskRegistry()
    monkeypatch.setattr(tasks, "REGISTRY", fresh)
    return fresh


@pytest.fixture
def read_field(stores: StoreFactory) -> Iterator[Any]:
    """``read_field(name, field)``: what an effect left on this store, as text (None when absent)."""
    if stores.kind == "sqlite":

        def from_file(name: str, field: str) -> str | None:
            with contextlib.closing(sqlite3.connect(path_of(stores.url))) as db:
                row = db.execute(
                    "SELECT value FROM tq_effects WHERE name = ? AND field = ?", (name, field)
                ).fetchone()
            return None if row is None else str(row[0])

        yield from_file
        return
    server = stores.url.partition("?")[0]
    client: Any = (
        redis.RedisCluster.from_url(server)
        if stores.kind == "redis-cluster"
        else redis.Redis.from_url(server)
    )
    written: list[tuple[str, str]] = []

    def from_redis(name: str, field: str) -> str | None:
        written.append((name, field))
        value = client.hget(name, field)
        return None if value is None else value.decode()

    yield from_redis
    for name, field in written:
        client.hdel(name, field)
    client.close()


def deliver(store: StateStore, job_id: str, run: Any) -> ClaimState:
    """One delivery of the job: claim it, and when this worker got it, run the task and complete it."""
    claim = store.claim(job_id, "worker-a", 30)
    if claim.state is ClaimState.CLAIMED:
        ctx = TaskContext(job_id, 1, "resize_image")
        run(ctx)
        assert store.complete(claim, ctx.combined_effect())
    return claim.state


@pytest.mark.parametrize("document", ["README.md", "docs/pipeline.md"])
def test_the_documented_task_example_commits_its_effect_once_on_each_store(
    document: str, stores: StoreFactory, registry: TaskRegistry, read_field: Any, unique: str
) -> None:
    if stores.kind == "redis-cluster":
        pytest.skip("the example's key carries no hash tag: a Redis Cluster needs one (docs/pipeline.md)")
    module: dict[str, Any] = {"__name__": "readme_tasks"}
    module["make_thumbnail"] = module["make_thumb"] = lambda source: f"thumb of {source}"
    module["fetch"] = lambda url: url
    exec(compile(task_example(ROOT / document), document, "exec"), module)
    spec = registry.get("resize_image")
    assert spec is not None and spec.max_retries == 5
    job_id = f"readme-{unique}"
    job = {"task_type": "resize_image", "image_url": "https://img/1.png", "url": "s3://img/1.png"}
    store = stores.make()
    states = [deliver(store, job_id, lambda ctx: spec.fn(ctx, job)) for _ in range(2)]
    assert states == [ClaimState.CLAIMED, ClaimState.DONE]  # the duplicate is not run again
    assert read_field("thumbs", job_id) in ("thumb of https://img/1.png", "thumb of s3://img/1.png")


def test_counters_add_and_fields_set_in_one_completion(
    stores: StoreFactory, read_field: Any, unique: str
) -> None:
    job_id = f"count-{unique}"
    name = f"counts:{job_tag(job_id)}"  # the job's slot, so it runs on a Redis Cluster too

    def run(ctx: TaskContext) -> None:
        ctx.once(add(name, "times"))
        ctx.once(add(name, "cents", 1999))
        ctx.once(add(name, "cents", -999))
        ctx.once(set_field(name, "status", "charged"))
        ctx.once(set_field(name, "rate", 0.5))

    store = stores.make()
    deliver(store, job_id, run)
    deliver(store, job_id, run)
    assert [read_field(name, f) for f in ("times", "cents", "status", "rate")] == [
        "1",
        "1000",
        "charged",
        "0.5",
    ]


def test_an_sqlite_add_to_a_field_holding_text_writes_nothing(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    set_field("n", "f", "seven")(db)
    db.execute("BEGIN IMMEDIATE")
    with pytest.raises(ValueError, match="'seven', not an integer"):
        add("n", "g")(db)
        add("n", "f")(db)
    db.execute("ROLLBACK")
    assert db.execute("SELECT field, value FROM tq_effects").fetchall() == [("f", "seven")]


def test_an_add_of_a_text_integer_counts_from_it_as_redis_does() -> None:
    db = sqlite3.connect(":memory:")
    set_field("n", "f", "41")(db)
    add("n", "f")(db)
    assert db.execute("SELECT value FROM tq_effects").fetchone() == (42,)


@pytest.mark.parametrize("value", [True, None, b"bytes", [1]])
def test_a_field_holds_text_or_a_number(value: Any) -> None:
    with pytest.raises(TypeError):
        set_field("n", "f", value)


def test_an_amount_is_an_integer() -> None:
    with pytest.raises(TypeError):
        add("n", "f", 1.5)  # type: ignore[arg-type]
