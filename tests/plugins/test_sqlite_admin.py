"""The SQLite broker's admin face: figures, a free peek, and every admin command on a real file."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlite_kit import Kit, wait_for

from tqadmin.errors import QueueNotFound, Unroutable
from tqadmin.plugin.models import HEADER_ORIGINAL_QUEUE, HEADER_REPLAYS, HEADER_RETRY_COUNT, Message

TqJson = Callable[..., tuple[int, Any, str]]


@pytest.fixture
def kit(tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kit]:
    k = Kit(tmp_path / "broker.db")
    monkeypatch.setenv("TQADMIN_BROKER_URL", k.url)
    monkeypatch.setenv("TQADMIN_STORE_URL", k.url)
    yield k
    k.close()


def job(n: int, **fields: object) -> bytes:
    return json.dumps({"task_type": "t", "id": f"j{n}", **fields}).encode()


def test_figures_count_ready_in_flight_and_delayed_messages_and_live_consumers(kit: Kit) -> None:
    kit.publish("q", job(1), job(2), job(3), job(4))
    with kit.consuming("q", prefetch=2) as (consumer, got):
        wait_for(lambda: len(got) == 2)
        assert consumer.retry_later(got[0], 60, {})
        wait_for(lambda: len(got) == 3)
        time.sleep(1.1)
        stats = kit.stats("q")
        assert (stats.messages, stats.ready, stats.unacked, stats.delayed) == (4, 1, 2, 1)
        assert stats.consumers == 1 and stats.dlq == "q.dlq" and stats.dlq_messages == 0
        assert stats.oldest_age_s is not None and stats.oldest_age_s >= 1.0
        assert stats.publish_rate is not None and stats.publish_rate > 0
        assert stats.deliver_rate is not None and stats.deliver_rate > 0
        assert stats.ack_rate is not None and stats.ack_rate > 0  # the retry acked the original
    assert kit.stats("q").consumers == 0, "a consumer that stopped leaves the count at once"


def test_peek_reads_without_any_side_effect(kit: Kit) -> None:
    kit.publish("q", job(1), job(2), b"\x00raw")
    before = kit.admin.peek("q", 10)
    again = kit.admin.peek("q", 10)
    assert before == again
    assert [m.body for m in before.messages] == [job(1), job(2), b"\x00raw"]
    assert [m.id for m in before.messages] == ["j1", "j2", None]
    assert all(m.delivery_count == 0 and not m.redelivered for m in before.messages)
    assert "nothing is marked redelivered" in before.cost
    with pytest.raises(QueueNotFound):
        kit.admin.peek("nope", 1)


def test_a_transfer_session_holds_what_it_fetched_and_puts_back_the_rest_in_place(kit: Kit) -> None:
    kit.publish("src", job(1), job(2), job(3))
    kit.transport.declare("dst")
    with kit.admin.open_transfer("src") as session:
        assert session.count_at_start() == 3
        first = session.fetch(2)
        with kit.consuming("src") as (_, got):
            time.sleep(0.1)
            assert [d.message.body for d in got] == [job(3)], "a worker cannot take what the session holds"
            got.clear()
        session.publish_confirmed([("dst", first[1].message)])
        session.ack([first[1]])
    assert kit.bodies("src") == [job(1), job(3)], "what was not acked went back to its place"
    assert kit.bodies("dst") == [job(2)]
    with kit.admin.open_transfer("src") as session, pytest.raises(Unroutable):
        session.publish_confirmed([("missing", Message(b"x"))])


def test_purge_drops_what_no_consumer_holds_in_one_statement(kit: Kit) -> None:
    kit.publish("q", job(1), job(2), job(3))
    with kit.consuming("q", prefetch=1) as (consumer, got):
        wait_for(lambda: len(got) == 1)
        assert kit.admin.purge("q") == 2
        assert consumer.ack(got[0])
    wait_for(lambda: kit.stats("q").messages == 0)


def test_a_server_side_move_is_one_transaction_to_the_tail_of_the_target(kit: Kit) -> None:
    kit.publish("dst", b"already there")
    kit.publish("src", job(1), job(2), job(3))
    report = kit.admin.server_side_move("src", "dst", 2)
    assert (report.matched, report.moved) == (2, 2) and "one SQLite transaction" in report.detail
    assert kit.bodies("dst") == [b"already there", job(1), job(2)]
    assert kit.bodies("src") == [job(3)]
    with pytest.raises(QueueNotFound):
        kit.admin.server_side_move("src", "missing", None)


def test_move_and_purge_commands_with_a_backup(kit: Kit, tq_json: TqJson, tmp_path: Path) -> None:
    kit.publish("src", job(1), job(2), job(3, kind="x"))
    kit.transport.declare("dst")
    code, report, _ = tq_json("move", "src", "dst", "--filter", "kind=x")
    assert code == 0 and report["moved"] == 1, report
    code, report, _ = tq_json("move", "src", "dst")
    assert code == 0 and report["moved"] == 2 and "server-side" in report["detail"]
    assert kit.bodies("dst") == [job(3, kind="x"), job(1), job(2)]
    backup = tmp_path / "backup.jsonl"
    code, report, _ = tq_json("purge", "dst", "--yes", "--backup", str(backup))
    assert code == 0 and report["purged"] == 3
    lines = [json.loads(line) for line in backup.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["j3", "j1", "j2"]
    assert kit.stats("dst").messages == 0


def test_replayed_messages_land_at_the_tail_with_x_tq_replays(kit: Kit, tq_json: TqJson) -> None:
    kit.publish("work", job(1), job(2))
    dead = {HEADER_ORIGINAL_QUEUE: "work", HEADER_RETRY_COUNT: 3}
    kit.publish("work.dlq", job(9), headers=dead)
    code, report, err = tq_json("replay", "work.dlq")
    assert code == 0 and report["moved"] == 1, err
    messages = kit.admin.peek("work", 10).messages
    assert [m.body for m in messages] == [job(1), job(2), job(9)], "behind what was waiting"
    assert messages[2].headers == {HEADER_ORIGINAL_QUEUE: "work", HEADER_REPLAYS: 1}


def test_export_import_and_delete_by_id_keep_bodies_and_order(
    kit: Kit, tq_json: TqJson, tmp_path: Path
) -> None:
    kit.publish("q", job(1), b"\xff\x00 binary", job(3), headers={"h": "v"})
    path = tmp_path / "out.jsonl"
    code, report, _ = tq_json("export", "q", str(path))
    assert code == 0 and report["moved"] == 3
    assert kit.admin.peek("q", 10).messages == kit.admin.peek("q", 10).messages
    kit.transport.declare("copy")
    code, report, _ = tq_json("import", str(path), "copy")
    assert code == 0 and report["moved"] == 3
    assert kit.bodies("copy") == kit.bodies("q")
    assert kit.admin.peek("copy", 1).messages[0].headers == {"h": "v"}
    code, report, _ = tq_json("delete", "q", "--id", "j1")
    assert code == 0 and report["moved"] == 1
    assert kit.bodies("q") == [b"\xff\x00 binary", job(3)]


def test_dead_letters_are_grouped_by_reason(kit: Kit, tq_json: TqJson) -> None:
    kit.publish("w.dlq", job(1), job(2), headers={"x-tq-reason": "fatal"})
    kit.publish("w.dlq", job(3), headers={"x-tq-reason": "max_retries"})
    code, report, _ = tq_json("dead-letters", "w.dlq")
    assert code == 0 and report["groups"] == [
        {"reason": "fatal", "count": 2},
        {"reason": "max_retries", "count": 1},
    ]
