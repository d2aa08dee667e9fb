"""Celery and Dramatiq messages in the TUI: the queue table and the inspector name the framework and show
the job by its own id, task, arguments and last error."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.framework_samples import celery_message, dramatiq_message
from tests.tui.conftest import screen_text, settled
from tests.tui.seeded import SIZE
from tqadmin.plugin.models import Message
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.screens.inspector import InspectorScreen
from tqadmin.tui.screens.queue_detail import message_row

pytestmark = pytest.mark.anyio


def test_the_queue_table_shows_a_celery_task_by_its_task_id_and_name() -> None:
    cells = [cell.plain for cell in message_row(celery_message("capp.charge", "c0ffee", "order-1", 10))]
    assert cells[:2] == ["c0ffee", "capp.charge"]


async def test_the_inspector_names_the_framework_and_shows_the_celery_job(
    make_app: Callable[..., TqadminApp],
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await app.push_screen(
            InspectorScreen("billing.dlq", celery_message("capp.charge", "c0ffee", "o-1", 10))
        )
        await pilot.pause()
        shown = screen_text(app)
        for expected in ("message c0ffee", "celery task capp.charge", "celery job", '"o-1", 10', "retries"):
            assert expected in shown


async def test_the_inspector_shows_the_error_dramatiq_stored_as_the_last_error(
    make_app: Callable[..., TqadminApp],
) -> None:
    app = make_app()
    dead = dramatiq_message("charge", retries=1, traceback="Traceback...\nValueError: card declined\n")
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await app.push_screen(InspectorScreen("orders.XQ", dead))
        await pilot.pause()
        shown = screen_text(app)
        assert "dramatiq task charge" in shown and "ValueError: card declined" in shown


async def test_a_body_that_is_no_json_object_is_shown_below_its_note(
    make_app: Callable[..., TqadminApp],
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await app.push_screen(InspectorScreen("q", Message(body=b"plain words")))
        await pilot.pause()
        body = app.screen.query_one("#body")
        assert body.size.height == 2 and "plain words" in screen_text(app)
