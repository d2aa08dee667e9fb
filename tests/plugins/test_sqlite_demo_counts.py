"""The demo's closing count on the embedded broker: a job waiting out its retry delay is one job left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.plugins.sqlite_kit import Kit, wait_for
from tqadmin.demo.layout import Layout
from tqadmin.demo.wiring import read_broker


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    k = Kit(tmp_path / "broker.db")
    yield k
    k.close()


def test_a_job_waiting_out_its_retry_delay_is_counted_once_not_again_as_the_queues_delayed(kit: Kit) -> None:
    layout = Layout("p", {"t": "p.tasks"}, ("p.tasks",))
    kit.transport.declare("p.tasks.dlq")
    kit.publish("p.tasks", b'{"task_type": "t", "id": "j1"}', b'{"task_type": "t", "id": "j2"}')
    with kit.consuming("p.tasks", prefetch=1) as (consumer, got):
        wait_for(lambda: len(got) == 1)
        assert consumer.retry_later(got[0], 60.0, {})
    assert kit.stats("p.tasks").delayed == 1
    view = read_broker(kit.admin, layout)
    assert view.left_in_queues == 2, "one ready, one delayed"
    assert view.dead_letters == {"p.tasks.dlq": 0}
