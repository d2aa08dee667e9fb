"""peek, dead-letters, purge, export/import and delete against the real RabbitMQ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tqadmin.cli import main

pytestmark = pytest.mark.rabbitmq


def ids(messages: list[tuple[Any, bytes]]) -> list[str]:
    return [json.loads(body)["id"] for _, body in messages]


def test_peek_shows_messages_with_their_cost_and_consumes_nothing(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 5)
    code, doc, _ = tq_json("peek", q, "-n", "3")
    assert code == 0 and doc is not None
    assert [m["id"] for m in doc["messages"]] == ["job-0", "job-1", "job-2"]
    assert "requeue" in doc["cost"]
    assert ids(amqp_queues.drain(q)) == [f"job-{i}" for i in range(5)]


def test_peek_in_human_form_escapes_control_characters_and_states_the_cost(
    isolated_env: Path, amqp_queues: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish(q, b'{"task_type": "t", "note": "\x1b[31mred"}')
    assert main(["peek", q]) == 0
    out = capsys.readouterr().out
    assert "cost:" in out and "\x1b" not in out


def test_peek_at_a_missing_queue_is_exit_4(isolated_env: Path, amqp_queues: Any, tq_json: Any) -> None:
    code, _, err = tq_json("peek", amqp_queues.name("missing"))
    assert code == 4 and "does not exist" in err


def test_dead_letters_group_by_our_headers_and_by_what_rabbitmq_recorded_in_x_death(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    dlq = amqp_queues.declare("dlq")
    work = amqp_queues.declare("work", {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
    for _ in range(3):
        amqp_queues.publish(
            dlq, b'{"task_type": "resize"}', {"x-tq-reason": "max_retries", "x-tq-error": "Timeout: 5s"}
        )
    amqp_queues.publish(
        dlq, b'{"task_type": "mail"}', {"x-tq-reason": "fatal", "x-tq-error": "ValueError: bad"}
    )
    amqp_queues.publish(work, b'{"task_type": "mail"}')
    method, _, _ = amqp_queues.channel.basic_get(work)
    amqp_queues.channel.basic_reject(method.delivery_tag, requeue=False)  # the broker dead-letters it
    code, doc, _ = tq_json("dead-letters", dlq)
    assert code == 0 and doc is not None
    assert doc["groups"] == [
        {"reason": "max_retries", "count": 3},
        {"reason": "fatal", "count": 1},
        {"reason": "rejected (by the broker)", "count": 1},
    ]
    code, doc, _ = tq_json("dead-letters", dlq, "--group-by", "task_type")
    assert doc is not None and doc["groups"][0] == {"task_type": "resize", "count": 3}
    assert amqp_queues.depth(dlq) == 5


def test_purge_without_yes_and_without_a_terminal_is_refused_with_exit_2(
    isolated_env: Path,
    amqp_queues: Any,
    tq_json: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 2)
    monkeypatch.setattr("sys.stdin", io.StringIO(q + "\n"))
    code, _, err = tq_json("purge", q)
    assert code == 2 and "--yes" in err
    assert amqp_queues.depth(q) == 2


def test_purge_on_a_terminal_needs_the_queue_name_typed(
    isolated_env: Path,
    amqp_queues: Any,
    tq_json: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 2)
    monkeypatch.setattr("sys.stdin", Tty("wrong\n"))
    assert tq_json("purge", q)[0] == 2
    monkeypatch.setattr("sys.stdin", Tty(q + "\n"))
    code, doc, _ = tq_json("purge", q)
    assert code == 0 and doc is not None and doc["purged"] == 2
    assert amqp_queues.depth(q) == 0


def test_purge_with_backup_writes_every_message_before_removing_it(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 25)
    backup = isolated_env / "backup.jsonl"
    code, doc, _ = tq_json("purge", q, "--yes", "--backup", str(backup))
    assert code == 0 and doc is not None and doc["purged"] == 25
    lines = [json.loads(line) for line in backup.read_text().splitlines()]
    assert [json.loads(line["body"])["id"] for line in lines] == [f"job-{i}" for i in range(25)]
    assert amqp_queues.depth(q) == 0
    audit = [json.loads(line) for line in (isolated_env / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["action"] == "purge" and audit[-1]["count"] == 25 and audit[-1]["outcome"] == "ok"


def test_export_then_import_round_trips_bodies_headers_and_properties(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish(
        src, b"\x00\x01\xff", {"x-bin": b"\xff\x00", "x-uni": "naïve ✓"}, message_id="bin", priority=2
    )
    amqp_queues.publish(
        src,
        '{"task_type": "t", "text": "日本語"}'.encode(),
        {"x-tq-reason": "fatal"},
        content_type="application/json",
    )
    dump = isolated_env / "dump.jsonl"
    code, doc, _ = tq_json("export", src, str(dump))
    assert code == 0 and doc is not None and doc["moved"] == 2
    assert amqp_queues.depth(src) == 2
    first = json.loads(dump.read_text().splitlines()[0])
    assert first["body_encoding"] == "base64"
    code, doc, _ = tq_json("import", str(dump), dst)
    assert code == 0 and doc is not None and doc["moved"] == 2
    (p1, b1), (p2, b2) = amqp_queues.drain(dst)
    assert b1 == b"\x00\x01\xff" and p1.headers == {"x-bin": b"\xff\x00", "x-uni": "naïve ✓"}
    assert (p1.message_id, p1.priority, p1.delivery_mode) == ("bin", 2, 2)
    assert b2.decode() == '{"task_type": "t", "text": "日本語"}' and p2.content_type == "application/json"


def test_import_of_a_malformed_file_names_the_line_and_sends_nothing(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    bad = isolated_env / "bad.jsonl"
    bad.write_text('{"body": "ok"}\n{"body": "ok"}\nnot json\n')
    code, _, err = tq_json("import", str(bad), q)
    assert code == 2 and "line 3" in err
    assert amqp_queues.depth(q) == 0


def test_import_into_a_missing_queue_is_exit_4(isolated_env: Path, amqp_queues: Any, tq_json: Any) -> None:
    good = isolated_env / "good.jsonl"
    good.write_text('{"body": "ok"}\n')
    assert tq_json("import", str(good), amqp_queues.name("missing"))[0] == 4


def test_delete_removes_one_message_by_job_id_and_the_others_keep_their_order(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 10)
    amqp_queues.publish(q, b"opaque", message_id="by-property")
    code, doc, _ = tq_json("delete", q, "--id", "job-4")
    assert code == 0 and doc is not None and doc["moved"] == 1
    assert tq_json("delete", q, "--id", "by-property")[0] == 0
    assert tq_json("delete", q, "--id", "nope")[0] == 4
    assert ids(amqp_queues.drain(q)) == [f"job-{i}" for i in range(10) if i != 4]
