"""move and replay against the real RabbitMQ: confirmed before acked, filters, dry runs, read-only, paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tqadmin.cli import main

pytestmark = pytest.mark.rabbitmq


def bodies(messages: list[tuple[Any, bytes]]) -> list[dict[str, Any]]:
    return [json.loads(body) for _, body in messages]


def test_move_takes_every_message_in_order_and_preserves_bytes_and_properties(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 30)
    amqp_queues.publish(
        src,
        b"\x00\xff\xfe binary",
        {"x-big": "h" * 60_000, "x-uni": "émoji 🚒", "x-num": 7},
        message_id="m-1",
        correlation_id="c-1",
        content_type="application/octet-stream",
        priority=3,
        timestamp=1_700_000_000,
        type="kind",
        app_id="app",
    )
    code, doc, _ = tq_json("move", src, dst, "--client-side")
    assert code == 0
    assert doc is not None and (doc["matched"], doc["moved"], doc["failed"]) == (31, 31, 0)
    assert "client-side" in doc["detail"]
    taken = amqp_queues.drain(dst)
    assert [json.loads(b)["n"] for _, b in taken[:30]] == list(range(30))
    props, body = taken[30]
    assert body == b"\x00\xff\xfe binary"
    assert props.headers == {"x-big": "h" * 60_000, "x-uni": "émoji 🚒", "x-num": 7}
    assert (props.message_id, props.correlation_id, props.content_type) == (
        "m-1",
        "c-1",
        "application/octet-stream",
    )
    assert (props.priority, props.timestamp, props.type, props.app_id, props.delivery_mode) == (
        3,
        1_700_000_000,
        "kind",
        "app",
        2,
    )
    assert amqp_queues.depth(src) == 0


def test_a_filter_moves_matching_messages_and_the_others_keep_their_order(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    for i in range(40):
        amqp_queues.publish(
            src, json.dumps({"task_type": "resize" if i % 4 == 0 else "mail", "id": str(i)}).encode()
        )
    code, doc, _ = tq_json("move", src, dst, "--filter", "task_type=resize")
    assert code == 0 and doc is not None
    assert (doc["matched"], doc["moved"]) == (10, 10)
    assert [int(j["id"]) for j in bodies(amqp_queues.drain(dst))] == list(range(0, 40, 4))
    assert [int(j["id"]) for j in bodies(amqp_queues.drain(src))] == [i for i in range(40) if i % 4]


def test_limit_moves_at_most_n_and_leaves_the_rest(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 20)
    code, doc, _ = tq_json("move", src, dst, "--limit", "7", "--client-side")
    assert code == 0 and doc is not None and doc["moved"] == 7
    assert (amqp_queues.depth(dst), amqp_queues.depth(src)) == (7, 13)


def test_a_dry_run_reports_matches_and_changes_nothing(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 12)
    code, doc, _ = tq_json("move", src, dst, "--dry-run", "--filter", "n!=3")
    assert code == 0 and doc is not None
    assert (doc["matched"], doc["moved"], doc["dry_run"]) == (11, 0, True)
    assert amqp_queues.depth(dst) == 0
    assert [j["n"] for j in bodies(amqp_queues.drain(src))] == list(range(12))


def test_read_only_refuses_before_connecting_with_exit_6(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nowhere = ["--broker", "amqp://guest:guest@127.0.0.1:1/"]
    for argv in (["move", "a", "b"], ["replay", "a"], ["purge", "a", "--yes"], ["delete", "a", "--id", "x"]):
        assert main([*argv, "--read-only", *nowhere]) == 6, argv
        assert "read-only" in capsys.readouterr().err


def test_moving_to_a_queue_that_does_not_exist_is_exit_4_and_loses_nothing(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src = amqp_queues.declare("src")
    missing = amqp_queues.name("missing")
    amqp_queues.publish_jobs(src, 5)
    for side in ("--client-side", "--server-side"):
        code, _, err = tq_json("move", src, missing, side)
        assert code == 4, side
        assert missing in err
    assert amqp_queues.depth(src) == 5


def test_replay_returns_messages_to_their_original_queues_and_counts_the_replay(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    dlq, q1, q2 = amqp_queues.declare("dlq"), amqp_queues.declare("q1"), amqp_queues.declare("q2")
    amqp_queues.publish(
        dlq, b'{"task_type": "a", "id": "1"}', {"x-tq-original-queue": q1, "x-tq-reason": "fatal"}
    )
    amqp_queues.publish(dlq, b'{"task_type": "b", "id": "2"}', {"x-tq-original-queue": q2, "x-tq-replays": 1})
    amqp_queues.publish(dlq, b'{"task_type": "c", "id": "3"}', {"x-tq-reason": "malformed"})
    code, doc, _ = tq_json("replay", dlq)
    assert code == 5 and doc is not None
    assert (doc["moved"], doc["failed"]) == (2, 1)
    assert "x-tq-original-queue" in doc["not_done"][0]
    (p1, _), (p2, _) = amqp_queues.drain(q1)[0], amqp_queues.drain(q2)[0]
    assert (p1.headers["x-tq-replays"], p1.headers["x-tq-reason"]) == (1, "fatal")
    assert p2.headers["x-tq-replays"] == 2
    assert [json.loads(b)["id"] for _, b in amqp_queues.drain(dlq)] == ["3"]


def test_replay_with_to_and_a_filter_sends_only_matches_there(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    dlq, target = amqp_queues.declare("dlq"), amqp_queues.declare("target")
    for i in range(6):
        reason = "timeout" if i % 2 else "fatal"
        amqp_queues.publish(
            dlq, json.dumps({"task_type": "t", "id": str(i)}).encode(), {"x-tq-reason": reason}
        )
    code, doc, _ = tq_json("replay", dlq, "--to", target, "--filter", "reason=timeout", "--rate", "1000")
    assert code == 0 and doc is not None and doc["moved"] == 3
    assert [json.loads(b)["id"] for _, b in amqp_queues.drain(target)] == ["1", "3", "5"]


def test_without_a_filter_the_broker_moves_the_messages_through_a_shovel(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 50)
    code, doc, _ = tq_json("move", src, dst, "--limit", "20")
    assert code == 0 and doc is not None
    assert doc["moved"] == 20 and doc["detail"].startswith("server-side")
    assert (amqp_queues.depth(dst), amqp_queues.depth(src)) == (20, 30)
    code, doc, _ = tq_json("replay", src, "--to", dst, "--server-side")
    assert code == 0 and doc is not None and doc["detail"].startswith("server-side")
    assert amqp_queues.depth(dst) == 50


def test_server_side_with_a_filter_is_a_usage_error(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["move", "a", "b", "--server-side", "--filter", "x=1"]) == 2
    assert "--filter" in capsys.readouterr().err


def test_moving_a_queue_onto_itself_is_a_usage_error(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["move", "q", "q"]) == 2
    assert main(["replay", "q", "--to", "q"]) == 2
    assert "same queue" in capsys.readouterr().err


def test_skip_done_leaves_jobs_the_completion_store_marks_done_in_the_dlq(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    from tqadmin.store import open_store

    dlq, target = amqp_queues.declare("dlq"), amqp_queues.declare("orders")
    amqp_queues.publish_jobs(dlq, 4)
    store_url = f"sqlite:///{isolated_env / 'store.db'}"
    store = open_store(store_url)
    for job_id in ("job-1", "job-2"):
        assert store.complete(store.claim(job_id, "test", 30))
    store.close()
    code, doc, _ = tq_json("replay", dlq, "--to", target, "--skip-done", "--store", store_url)
    assert code == 0 and doc is not None
    assert doc["moved"] == 2 and "skipped 2" in doc["detail"]
    assert [json.loads(b)["id"] for _, b in amqp_queues.drain(target)] == ["job-0", "job-3"]
    assert [json.loads(b)["id"] for _, b in amqp_queues.drain(dlq)] == ["job-1", "job-2"]


def test_a_message_dead_lettered_by_the_broker_replays_with_its_x_death_intact(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    dlq, target = amqp_queues.declare("dlq"), amqp_queues.declare("target")
    work = amqp_queues.declare("work", {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
    amqp_queues.publish(work, b'{"task_type": "t", "id": "x"}', {"x-tq-original-queue": target})
    method, _, _ = amqp_queues.channel.basic_get(work)
    amqp_queues.channel.basic_reject(method.delivery_tag, requeue=False)
    code, doc, _ = tq_json("replay", dlq, "--client-side")
    assert code == 0 and doc is not None and doc["moved"] == 1
    [(props, body)] = amqp_queues.drain(target)
    assert body == b'{"task_type": "t", "id": "x"}'
    assert props.headers["x-death"][0]["reason"] == "rejected"
    assert props.headers["x-death"][0]["queue"] == work
    assert props.headers["x-tq-replays"] == 1


def test_queue_names_and_data_in_any_script_move_untouched(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("源-ü"), amqp_queues.declare("цель-🚒")
    amqp_queues.publish(
        src, '{"task_type": "t", "text": "\\u0000 日本 \U0001f525"}'.encode(), {"ключ": "значение"}
    )
    code, doc, _ = tq_json("move", src, dst, "--filter", "task_type=t")
    assert code == 0 and doc is not None and doc["moved"] == 1
    [(props, body)] = amqp_queues.drain(dst)
    assert json.loads(body)["text"] == "\x00 日本 🔥"
    assert props.headers == {"ключ": "значение"}


def test_messages_published_after_the_start_are_not_chased(isolated_env: Path, amqp_queues: Any) -> None:
    from tqadmin_rabbitmq.admin import RabbitMQAdmin

    from tqadmin.admin.transfer import TransferPlan, to_queue, transfer
    from tqadmin.plugin.base import BrokerConfig

    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 600)
    with RabbitMQAdmin(BrokerConfig(url="amqp://guest:guest@127.0.0.1:5672/%2F")) as admin:
        session = admin.open_transfer(src)
        amqp_queues.publish_jobs(src, 300, task_type="late")  # a live feeder, after the count was taken
        outcome = transfer(session, TransferPlan(action="move", source=src, target=dst, route=to_queue(dst)))
    assert outcome.error is None and outcome.report.moved == 600
    assert amqp_queues.depth(dst) == 600
    assert {json.loads(b)["task_type"] for _, b in amqp_queues.drain(src)} == {"late"}


def test_a_dry_run_is_allowed_in_read_only_mode_and_sends_nothing(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 3)
    code, doc, _ = tq_json("replay", src, "--to", dst, "--dry-run", "--read-only")
    assert code == 0 and doc is not None and (doc["matched"], doc["moved"]) == (3, 0)
    assert (amqp_queues.depth(src), amqp_queues.depth(dst)) == (3, 0)


def test_a_copy_the_broker_refuses_leaves_every_original_of_its_batch_in_place(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src = amqp_queues.declare("src")
    full = amqp_queues.declare("full", {"x-max-length": 2, "x-overflow": "reject-publish"})
    amqp_queues.publish_jobs(src, 5)
    code, doc, err = tq_json("move", src, full, "--client-side")
    assert code == 4 and "refused 3" in err
    assert doc is not None and (doc["moved"], doc["failed"]) == (0, 5)
    assert [json.loads(b)["n"] for _, b in amqp_queues.drain(src)] == [0, 1, 2, 3, 4]


def test_without_the_shovel_plugin_the_move_runs_through_the_client(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    from tests.support.management_api import FakeManagementAPI, status

    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 5)
    with FakeManagementAPI() as api:
        api.fail("/api/parameters/shovel", status(404))
        api.fail("/api/shovels", status(404, "Object Not Found"))
        code, doc, err = tq_json("move", src, dst, "--management-url", api.url)
    assert code == 0 and doc is not None and doc["moved"] == 5
    assert doc["detail"].startswith("client-side") and "not available" in err
    assert amqp_queues.depth(dst) == 5


def test_a_management_api_failing_on_the_shovel_is_exit_4_and_moves_nothing(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    from tests.support.management_api import FakeManagementAPI, status

    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 5)
    with FakeManagementAPI() as api:
        api.fail("/api/parameters/shovel", status(500))
        code, _, err = tq_json("move", src, dst, "--management-url", api.url)
    assert code == 4 and "500" in err
    assert (amqp_queues.depth(src), amqp_queues.depth(dst)) == (5, 0)
