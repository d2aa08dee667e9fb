"""The SQS admin face and the CLI on it, against moto's server: figures, peeks that say what they cost,
purge's 60-second rule, replay (the client path, since moto has no move tasks), move, export, import, delete.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqs_kit import admin
from tqadmin_sqs.capabilities import CLOUDWATCH_ONLY

from tests.support.sqs_server import SqsQueues
from tqadmin.cli import main
from tqadmin.commands.peek import render
from tqadmin.plugin.models import HEADER_ORIGINAL_QUEUE, HEADER_REPLAYS
from tqadmin.tui.widgets.peek_cost import cost_notice

pytestmark = pytest.mark.sqs

TqJson = Callable[..., tuple[int, Any, str]]


def test_queues_lists_sqs_figures_and_says_which_it_cannot_give(
    sqs_env: str, sqs_queues: SqsQueues, tq_json: TqJson
) -> None:
    q, dlq = sqs_queues.create_with_dlq("listed")
    sqs_queues.send_jobs(q, 3)
    sqs_queues.send(q, "{}", DelaySeconds=60)
    sqs_queues.send_jobs(dlq, 1)
    code, doc, _ = tq_json("queues", "--filter", sqs_queues.unique)
    assert code == 0
    row = next(r for r in doc["queues"] if r["name"] == q)
    assert (row["ready"], row["unacked"], row["delayed"], row["dlq"], row["dlq_messages"]) == (
        3,
        0,
        1,
        dlq,
        1,
    )
    assert row["consumers"] is None and row["publish_rate"] is None and row["oldest_age_s"] is None
    assert doc["unavailable"]["oldest_age_s"].endswith(CLOUDWATCH_ONLY)
    assert main(["queues", "--filter", sqs_queues.unique]) == 0


def test_peek_says_its_cost_and_gives_every_message_back(sqs_env: str, sqs_queues: SqsQueues) -> None:
    q = sqs_queues.create("peek")
    sqs_queues.send_jobs(q, 12)
    with admin(sqs_env) as face:
        result = face.peek(q, 11)
        assert len({m.id for m in result.messages}) == 11
        assert "ApproximateReceiveCount" in result.cost and result.delivery_limit is None
        assert face.peek_risk(q) is None
    assert sqs_queues.visible(q) == 12


def test_peek_of_a_queue_with_a_redrive_policy_asks_first_and_without_a_terminal_is_refused(
    sqs_env: str, sqs_queues: SqsQueues, tq_json: TqJson, monkeypatch: pytest.MonkeyPatch
) -> None:
    q, _ = sqs_queues.create_with_dlq("risky", max_receive_count=2)
    sqs_queues.send_jobs(q, 1)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, doc, err = tq_json("peek", q)
    assert (code, doc) == (2, None) and "needs confirmation" in err and "--yes" in err
    (raw,) = sqs_queues.drain(q)
    assert raw["Attributes"]["ApproximateReceiveCount"] == "1"  # the refused peek received nothing


def test_two_peeks_at_max_receive_count_2_warn_that_the_next_receive_dead_letters_it(
    sqs_env: str, sqs_queues: SqsQueues, tq_json: TqJson
) -> None:
    q, _ = sqs_queues.create_with_dlq("twice", max_receive_count=2)
    sqs_queues.send_jobs(q, 1)
    code, first, _ = tq_json("peek", q, "--yes")
    assert code == 0 and first["messages"][0]["delivery_count"] == 1 and first["delivery_limit"] == 2
    with admin(sqs_env) as face:
        second = face.peek(q, 1)
    printed = render(second)  # what `tqadmin peek` prints
    assert "delivered 2 of the 2" in printed and "the next delivery dead-letters it" in printed
    notice = cost_notice(second, face.capabilities).plain  # what the TUI shows next to the messages
    assert "has 2 of the 2 after which the broker drops or dead-letters it" in notice
    assert "can dead-letter a message that never ran" in notice


def test_a_second_purge_within_60_s_is_exit_4_with_the_reason(
    sqs_env: str, sqs_queues: SqsQueues, tq_json: TqJson
) -> None:
    q = sqs_queues.create("purge")
    sqs_queues.send_jobs(q, 3)
    code, doc, _ = tq_json("purge", q, "--yes")
    assert code == 0 and doc["purged"] == 3
    sqs_queues.send_jobs(q, 1)
    code, _, err = tq_json("purge", q, "--yes")
    assert code == 4 and "once every 60 s" in err.replace("one purge of a queue every", "once every")
    assert sqs_queues.depth(q) == 1


def test_replay_without_the_move_task_api_takes_the_client_path_and_says_so(
    sqs_env: str, sqs_queues: SqsQueues, tq_json: TqJson
) -> None:
    q = sqs_queues.name("work")
    assert tq_json("publish", "--queue", q, "--job", '{"task_type": "t", "id": "x"}')[0] == 0
    work = sqs_queues.drain(q)[0]
    dlq = f"{q}-dlq"
    attributes = {HEADER_ORIGINAL_QUEUE: {"DataType": "String", "StringValue": q}}
    sqs_queues.send(dlq, work["Body"], MessageAttributes=attributes)
    code, doc, err = tq_json("replay", dlq)
    assert code == 0 and doc["moved"] == 1, err
    assert "server-side move not available" in err and "StartMessageMoveTask" in err
    (back,) = sqs_queues.drain(q)
    assert back["Body"] == work["Body"]
    assert back["MessageAttributes"][HEADER_REPLAYS]["StringValue"] == "1"


def test_replay_of_a_queue_that_is_no_dlq_is_exit_4_and_moves_nothing(
    sqs_env: str, sqs_queues: SqsQueues, tq_json: TqJson
) -> None:
    plain = sqs_queues.create("plain")
    sqs_queues.send_jobs(plain, 2)
    code, _, err = tq_json("replay", plain, "--to", sqs_queues.create("elsewhere"))
    assert code == 4 and "not a dead-letter queue" in err
    assert sqs_queues.depth(plain) == 2


def test_move_export_import_and_delete_by_id(
    sqs_env: str, sqs_queues: SqsQueues, tq_json: TqJson, tmp_path: Path
) -> None:
    src, dst, again = sqs_queues.create("src"), sqs_queues.create("dst"), sqs_queues.create("again")
    sqs_queues.send_jobs(src, 25)
    sqs_queues.send(src, json.dumps({"task_type": "t", "id": "other", "kind": "skip"}))
    code, doc, err = tq_json("move", src, dst, "--filter", "kind!=skip")
    assert code == 0 and doc["moved"] == 25, err
    assert (sqs_queues.depth(src), sqs_queues.depth(dst)) == (1, 25)
    export = tmp_path / "dst.jsonl"
    assert tq_json("export", dst, str(export))[0] == 0
    assert len(export.read_text().splitlines()) == 25 and sqs_queues.visible(dst) == 25
    assert tq_json("import", str(export), again)[0] == 0
    assert tq_json("delete", again, "--id", "job-7")[0] == 0
    ids = {json.loads(m["Body"])["id"] for m in sqs_queues.drain(again)}
    assert len(ids) == 24 and "job-7" not in ids
