"""The dashboard's replay of an SQS dead-letter queue takes the broker's own redrive (a message move task)
where the CLI takes it. moto answers the move-task API with HTTP 500, so the endpoint in front of it
(``tests/support/sqs_proxy.py``, as the CLI's tests use it) runs the tasks as AWS does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sqs_proxy import MoveTasks, SqsProxy
from tests.support.sqs_server import BROKER_URL, SqsQueues
from tests.tui.conftest import select_queue, settled
from tqadmin.config import Settings
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.screens.action import ActionScreen

SIZE = (140, 45)
pytestmark = [pytest.mark.anyio, pytest.mark.sqs]


@pytest.fixture
def proxy(sqs_env: str) -> Iterator[SqsProxy]:
    endpoint = SqsProxy(sqs_env)
    MoveTasks(sqs_env).install(endpoint)
    yield endpoint
    endpoint.close()


async def test_a_whole_dlq_replay_from_the_keyboard_is_one_move_task(
    proxy: SqsProxy, sqs_queues: SqsQueues, tmp_path: Path
) -> None:
    work, dlq = sqs_queues.create_with_dlq("redrive")
    sqs_queues.send_jobs(dlq, 3)
    settings = Settings(
        broker_url=BROKER_URL,
        broker_options={"endpoint_url": proxy.endpoint},
        audit_log=tmp_path / "audit.jsonl",
        timeout_s=30.0,  # a deadline for moto on a loaded machine, not a speed
    )
    app = TqadminApp(settings=settings, refresh_s=1.0, telemetry=None, cron=None)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: dlq in app.board.stats)
        await select_queue(pilot, dlq, needle=sqs_queues.unique)
        await pilot.press("R", "enter")  # empty target: where each message came from
        await settled(pilot, lambda: getattr(app.screen, "plan", None) is not None)
        assert app.screen.plan.matched == 3  # type: ignore[attr-defined]
        assert proxy.count("StartMessageMoveTask") == 0  # the dry run only looked
        await pilot.press("enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
    assert proxy.count("StartMessageMoveTask") == 1
    assert (sqs_queues.visible(work), sqs_queues.depth(dlq)) == (3, 0)
    record = json.loads((tmp_path / "audit.jsonl").read_text().splitlines()[-1])
    assert (record["action"], record["count"], record["outcome"]) == ("replay", 3, "ok")
