"""The dashboard on SQS (moto's server): its queues listed like any broker's, and a look at a queue with a
redrive policy that says, next to the messages, what it cost and how close it brings them to the DLQ."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sqs_server import BROKER_URL, SqsQueues
from tests.tui.conftest import select_queue, settled, text_of
from tqadmin.config import Settings
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.screens.queue_detail import QueueDetailScreen
from tqadmin.tui.widgets.queue_table import QueueTable

SIZE = (140, 45)
pytestmark = [pytest.mark.anyio, pytest.mark.sqs]


def _sqs_app(endpoint_url: str, tmp_path: Path) -> TqadminApp:
    """The dashboard on moto's SQS server, as a user with only a region and an endpoint would open it."""
    settings = Settings(
        broker_url=BROKER_URL,
        broker_options={"endpoint_url": endpoint_url},
        audit_log=tmp_path / "audit.jsonl",
        timeout_s=30.0,  # a deadline for moto on a loaded machine, not a speed
    )
    return TqadminApp(settings=settings, refresh_s=1.0)


async def test_on_sqs_the_overview_lists_a_queue_and_its_peek_warns_of_the_redrive_policy(
    sqs_env: str, sqs_queues: SqsQueues, tmp_path: Path
) -> None:
    work, _dlq = sqs_queues.create_with_dlq("tui", max_receive_count=2)
    sqs_queues.send_jobs(work, 2, task_type="resize_image")
    app = _sqs_app(sqs_env, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: work in app.board.stats)
        await select_queue(pilot, work, needle=sqs_queues.unique)
        assert app.screen.query_one(QueueTable).row_count == 2  # the queue and its DLQ
        await pilot.press("enter")
        await settled(pilot, lambda: isinstance(app.screen, QueueDetailScreen) and bool(app.screen.peeked))
        cost = text_of(app.screen.query_one("#peek-cost"))
        assert "ApproximateReceiveCount" in cost
        assert "can dead-letter a message that never ran" in cost
        assert "of the 2 after which the broker drops or dead-letters it" in cost
    assert sqs_queues.visible(work) == 2


async def test_on_sqs_the_queue_detail_says_why_a_figure_is_missing_and_writes_the_queue_name_as_it_is(
    sqs_env: str, sqs_queues: SqsQueues, tmp_path: Path
) -> None:
    work, _dlq = sqs_queues.create_with_dlq("names", max_receive_count=3)
    sqs_queues.send_jobs(work, 1, task_type="resize_image")
    app = _sqs_app(sqs_env, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: work in app.board.stats)
        await select_queue(pilot, work, needle=sqs_queues.unique)
        await pilot.press("enter")
        await settled(pilot, lambda: isinstance(app.screen, QueueDetailScreen) and bool(app.screen.peeked))
        figures = text_of(app.screen.query_one("#queue-figures"))
        cost = text_of(app.screen.query_one("#peek-cost"))
    assert "None" not in figures
    assert "consumers n/a" in figures and "SQS has no notion of consumers" in figures
    assert f"{work}'s redrive policy" in cost, "a queue name is data: never re-cased"
    assert work[0].upper() + work[1:] not in cost + figures
