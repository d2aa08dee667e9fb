"""No plugin moves a queue onto itself, by any path: the broker's own move, the client-side move, a replay
sent ``--to`` the dead-letter queue it reads. Such a move would at best reshuffle the queue and at worst
(one statement copying and one deleting the same rows) empty it, so the contract refuses it (exit 2)
before anything is read or written, and the queue keeps every message.
"""

from __future__ import annotations

import pytest
from contract_harness import Harness  # the harnesses sit beside this file

from tqadmin.admin.paths import run_redrive, run_server_side
from tqadmin.admin.transfer import TransferPlan, replay_route, to_queue, transfer
from tqadmin.errors import ExitCode, UsageError
from tqadmin.plugin.models import HEADER_ORIGINAL_QUEUE, Message

BODIES = [b'{"task_type": "t", "id": "a"}', b'{"task_type": "t", "id": "b"}', b"\x00\xff"]


def test_the_brokers_own_move_of_a_queue_onto_itself_is_refused_and_the_queue_keeps_its_messages(
    harness: Harness,
) -> None:
    queue = harness.make_queue(BODIES)
    with harness.admin() as admin:
        with pytest.raises(UsageError, match="same queue") as refused:
            run_server_side(admin, lambda _line: None, "move", queue, queue, limit=None)
        assert refused.value.exit_code == ExitCode.USAGE
        with pytest.raises(UsageError, match="same queue"):
            run_redrive(admin, lambda _line: None, queue, queue)
    assert harness.depth(queue) == len(BODIES)


@pytest.mark.parametrize("action", ["move", "replay"])
def test_a_client_side_move_or_replay_onto_the_queue_it_reads_is_refused_before_it_opens_a_session(
    harness: Harness, action: str
) -> None:
    queue = harness.make_queue(BODIES)
    route = to_queue(queue) if action == "move" else replay_route(queue)
    with pytest.raises(UsageError, match="same queue"):
        TransferPlan(action, queue, route, target=queue)
    assert harness.depth(queue) == len(BODIES)


def test_a_replay_leaves_a_message_whose_original_queue_is_the_dlq_itself_where_it_is(
    harness: Harness,
) -> None:
    dlq = harness.make_queue([])
    with harness.admin() as admin:
        with admin.open_transfer(dlq) as session:
            session.publish_confirmed([(dlq, Message(BODIES[0], headers={HEADER_ORIGINAL_QUEUE: dlq}))])
        outcome = transfer(admin.open_transfer(dlq), TransferPlan("replay", dlq, replay_route(None)))
    assert (outcome.report.moved, outcome.report.failed) == (0, 1)
    assert any("the queue it is in" in line for line in outcome.report.not_done)
    assert harness.depth(dlq) == 1
