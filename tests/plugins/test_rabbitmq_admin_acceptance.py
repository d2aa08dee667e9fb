"""What an on-call engineer ran into on first use, against the real RabbitMQ (acceptance of issue 2)."""

from __future__ import annotations

import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tqadmin.cli import main

pytestmark = pytest.mark.rabbitmq


def test_a_float_header_in_an_imported_file_arrives_as_an_amqp_decimal(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    path = isolated_env / "in.jsonl"
    path.write_text(json.dumps({"body": "x", "headers": {"ratio": 1.5, "deep": {"r": 0.25}}}) + "\n")
    code, _doc, err = tq_json("import", str(path), q)
    assert code == 0, err
    [(props, body)] = amqp_queues.drain(q)
    assert body == b"x"
    assert props.headers == {"ratio": decimal.Decimal("1.5"), "deep": {"r": decimal.Decimal("0.25")}}


def test_a_header_amqp_cannot_carry_is_exit_2_and_nothing_is_sent(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    path = isolated_env / "in.jsonl"
    lines = [{"body": "ok"}, {"body": "x", "id": "bad-1", "headers": {"tiny": 1e-300}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, _, err = tq_json("import", str(path), q)
    assert code == 2
    assert "tiny" in err and "bad-1" in err and "Traceback" not in err
    assert amqp_queues.depth(q) == 0


def test_export_to_a_full_disk_is_one_line_and_exit_2(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 3)
    code, _, err = tq_json("export", q, "/dev/full")
    assert code == 2
    assert err.startswith("tqadmin: cannot write /dev/full") and err.count("\n") == 1
    assert amqp_queues.depth(q) == 3


def test_purge_with_a_backup_that_cannot_be_written_removes_nothing(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 3)
    missing = isolated_env / "no-such-dir" / "backup.jsonl"
    code, _, err = tq_json("purge", q, "--yes", "--backup", str(missing))
    assert code == 2 and f"cannot write {missing}" in err
    assert amqp_queues.depth(q) == 3


def test_a_broker_url_with_a_bad_port_is_a_usage_error(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["peek", "q", "--broker", "amqp://guest:pw-9x7@127.0.0.1:notaport/%2F"]) == 2
    err = capsys.readouterr().err
    assert "port" in err and "pw-9x7" not in err and err.count("\n") == 1


def test_dead_letters_escape_control_characters_from_headers(
    isolated_env: Path, amqp_queues: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dlq = amqp_queues.declare("dlq")
    amqp_queues.publish(dlq, b"{}", {"x-tq-reason": "fatal\x1b[2J", "x-tq-error": "Boom \x1b]0;title\x07"})
    for by in ("reason", "error"):
        assert main(["dead-letters", dlq, "--group-by", by]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and ("fatal" in out or "Boom" in out)


def test_replay_sends_a_broker_dead_lettered_message_back_to_the_queue_in_x_death(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    dlq = amqp_queues.declare("dlq")
    work = amqp_queues.declare("work", {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
    amqp_queues.publish(work, b'{"task_type": "t", "id": "x"}')
    method, _, _ = amqp_queues.channel.basic_get(work)
    amqp_queues.channel.basic_reject(method.delivery_tag, requeue=False)
    code, doc, err = tq_json("replay", dlq)
    assert code == 0, err
    assert doc is not None and doc["moved"] == 1
    [(props, body)] = amqp_queues.drain(work)
    assert body == b'{"task_type": "t", "id": "x"}' and props.headers["x-tq-replays"] == 1


def test_a_server_side_move_into_a_full_queue_does_not_claim_it_moved_everything(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    src = amqp_queues.declare("src")
    dst = amqp_queues.declare("dst", {"x-max-length": 2, "x-overflow": "reject-publish"})
    amqp_queues.publish_jobs(src, 5)
    code, doc, err = tq_json("move", src, dst, "--server-side", "--timeout", "3")
    assert amqp_queues.depth(src) + amqp_queues.depth(dst) == 5
    assert code == 5, err
    assert doc is not None and doc["moved"] == amqp_queues.depth(dst) < 5
    assert doc["not_done"]


def test_peek_at_a_quorum_queue_warns_that_each_look_counts_toward_its_delivery_limit(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("quorum", {"x-queue-type": "quorum", "x-delivery-limit": 50})
    amqp_queues.publish_jobs(q, 1)
    code, doc, _ = tq_json("peek", q)
    assert code == 0 and doc is not None and len(doc["messages"]) == 1
    assert "delivery-limit" in doc["cost"] and "x-delivery-count" in doc["cost"]


def test_purge_never_overwrites_an_existing_backup_file(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 3)
    backup = isolated_env / "backup.jsonl"
    backup.write_text("the first run's messages\n")
    code, _, err = tq_json("purge", q, "--yes", "--backup", str(backup))
    assert code == 2 and "exists" in err
    assert backup.read_text() == "the first run's messages\n"
    assert amqp_queues.depth(q) == 3


def test_an_audit_log_that_cannot_be_written_refuses_the_write_before_anything_is_sent(
    isolated_env: Path, amqp_queues: Any, tq_json: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 3)
    (isolated_env / "a-file").write_text("")
    monkeypatch.setenv("TQADMIN_AUDIT_LOG", str(isolated_env / "a-file" / "audit.jsonl"))
    code, _, err = tq_json("move", src, dst, "--client-side")
    assert code == 2 and "audit log" in err and err.count("\n") == 1
    assert (amqp_queues.depth(src), amqp_queues.depth(dst)) == (3, 0)


def test_the_amqp_url_pointing_at_the_management_port_says_to_check_the_port(isolated_env: Path) -> None:
    from tqadmin_rabbitmq.connection import connect

    from tqadmin.errors import ConnectTimeout

    with pytest.raises(ConnectTimeout) as info:
        connect("amqp://guest:guest@127.0.0.1:15672/%2F", timeout_s=1)
    text = str(info.value)
    assert "5672" in text and "AddressFamily" not in text and "port" in text


def test_exported_messages_are_readable_by_their_owner_only(
    isolated_env: Path, amqp_queues: Any, tq_json: Any
) -> None:
    q = amqp_queues.declare("q")
    amqp_queues.publish_jobs(q, 1)
    export, backup = isolated_env / "export.jsonl", isolated_env / "backup.jsonl"
    assert tq_json("export", q, str(export))[0] == 0
    assert tq_json("purge", q, "--yes", "--backup", str(backup))[0] == 0
    assert export.stat().st_mode & 0o777 == 0o600
    assert backup.stat().st_mode & 0o777 == 0o600


@pytest.fixture
def read_only_user(unique: str) -> Iterator[str]:
    """A broker user (management tag) that may read every queue of / but write and configure none."""
    import httpx

    name, password = f"test-ro-{unique}", f"pw-{unique}"
    api = httpx.Client(base_url="http://127.0.0.1:15672/api/", auth=("guest", "guest"))
    api.put(f"users/{name}", json={"password": password, "tags": "management"}).raise_for_status()
    api.put(f"permissions/%2F/{name}", json={"configure": "", "write": "", "read": ".*"}).raise_for_status()
    yield f"amqp://{name}:{password}@127.0.0.1:5672/%2F"
    api.delete(f"users/{name}")
    api.close()


def test_a_user_who_may_not_write_the_target_is_exit_3_at_once_and_nothing_is_lost(
    isolated_env: Path, amqp_queues: Any, tq_json: Any, read_only_user: str
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 3)
    code, _, err = tq_json("move", src, dst, "--client-side", "--broker", read_only_user, "--timeout", "30")
    assert code == 3, err
    assert "ACCESS_REFUSED" in err and "within" not in err
    assert (amqp_queues.depth(src), amqp_queues.depth(dst)) == (3, 0)


def test_without_the_right_to_run_a_shovel_the_move_runs_through_the_client(
    isolated_env: Path, amqp_queues: Any, tq_json: Any, read_only_user: str
) -> None:
    src, dst = amqp_queues.declare("src"), amqp_queues.declare("dst")
    amqp_queues.publish_jobs(src, 3)
    _, _, err = tq_json("move", src, dst, "--broker", read_only_user)
    assert "moving through the client" in err
    assert "refused the login" not in err


def test_a_401_for_a_missing_permission_is_not_called_a_failed_login(read_only_user: str) -> None:
    from tqadmin_rabbitmq.management import ManagementClient
    from tqadmin_rabbitmq.urls import management_endpoint

    from tqadmin.errors import NotAuthorized

    client = ManagementClient(management_endpoint(read_only_user, None), 5)
    with pytest.raises(NotAuthorized) as info:
        client.get_json("api/parameters/shovel/%2F")
    client.close()
    assert "refused the login" not in str(info.value) and "not authorised" in str(info.value)
