"""Other frameworks' worker registries decoded whatever they hold: what the framework writes is read, an
absent field is unknown, and a field that is there but not what the framework writes makes the entry
malformed, naming the field, so that the reader skips it and names it (the dashboard's poll and the
exporter's thread must outlive any key). The fuzz over every field is in test_hostile_fields.py."""

from __future__ import annotations

import pytest

from tqadmin.frameworks import dramatiq_workers, rq_workers, sidekiq_workers
from tqadmin.plugin.workers import MalformedEntry

NOW = 1_780_000_000.0


def test_an_rq_hash_with_nothing_but_its_queues_is_a_live_worker_with_nothing_else_known() -> None:
    worker = rq_workers.worker("rq:worker:w", {"queues": b"a,b"}, None, {}, NOW)
    assert (worker.name, worker.alive, worker.heartbeat_age_s, worker.pid, worker.queues) == (
        "w",
        True,
        None,
        None,
        ("a", "b"),
    )


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("last_heartbeat", b"\xff\xfe", "last_heartbeat is not a time"),
        ("birth", "yesterday", "birth is not a time"),
        ("queues", 7, "queues is not text"),
        ("pid", "-3", "pid is not a process id"),
        ("state", ["x"], "state is not a name"),
    ],
)
def test_an_rq_hash_with_a_field_rq_would_not_write_is_malformed_naming_the_field(
    field: str, value: object, why: str
) -> None:
    with pytest.raises(MalformedEntry, match=f"^{why}$"):
        rq_workers.worker("rq:worker:w", {"queues": "a", field: value}, None, {}, NOW)


def test_an_rq_hash_with_under_a_minute_to_live_has_missed_its_own_ttl() -> None:
    fields = {"last_heartbeat": "2026-05-28T20:20:00.000000Z", "queues": "a,b"}
    assert rq_workers.worker("rq:worker:w", fields, 61.0, {}, NOW).alive
    late = rq_workers.worker("rq:worker:w", fields, 59.0, {}, NOW)
    assert (late.alive, late.dead_reason, late.heartbeat_age_s) == (
        False,
        "heartbeat overdue (past its own TTL)",
        400.0,
    )


def test_rq_current_jobs_come_from_executions_or_the_older_field() -> None:
    assert rq_workers.current_job_ids({"current_job": "old"}, [b"j1:e1", b"j:2:e2"]) == ("j1", "j:2")
    assert rq_workers.current_job_ids({"current_job": b"old"}, []) == ("old",)
    assert rq_workers.current_job_ids(None, [None, 5]) == ()


def test_a_sidekiq_hash_with_fields_missing_is_read_as_far_as_it_goes() -> None:
    work = {
        b"t2": b'{"payload": "{\\"jid\\": 5}"}',
        b"t3": b'{"payload": {"jid": "j", "class": "K"}}',
        b"t4": b"{}",
    }
    process = sidekiq_workers.process("h:1:x", {"quiet": "true"}, work, NOW)
    assert (process.alive, process.heartbeat_age_s, process.state, process.queues) == (
        True,
        None,
        "quiet",
        (),
    )
    assert [(j.id, j.task) for j in process.current_jobs] == [("5", None), ("j", "K"), ("thread t4", None)]


@pytest.mark.parametrize(
    ("fields", "work", "why"),
    [
        ({"info": b'{"queues": 5}'}, {}, "info.queues is not a list"),
        ({"info": b'{"queues": ["a", {}]}'}, {}, r"info.queues\[1\] is not a name"),
        ({"info": b"{not json"}, {}, "info is not a JSON object"),
        ({"info": b'{"pid": -1}'}, {}, "info.pid is not a process id"),
        ({"info": b'{"started_at": -Infinity}'}, {}, "info.started_at is not a time"),
        ({"beat": "soon"}, {}, "beat is not a time"),
        ({"busy": "many"}, {}, "busy is not a count"),
        ({"quiet": "maybe"}, {}, 'quiet is not "true" or "false"'),
        ({"beat": "1"}, {b"t1": b"[1, 2]"}, r"work\[t1\] is not a JSON object"),
        ({"beat": "1"}, {b"t1": b'{"payload": "[]"}'}, r"work\[t1\].payload is not a JSON object"),
        ({"beat": "1"}, {b"t1": b'{"run_at": 1e400}'}, r"work\[t1\].run_at is not a time"),
    ],
)
def test_a_sidekiq_process_with_a_field_sidekiq_would_not_write_is_malformed_naming_the_field(
    fields: dict[str, object], work: dict[bytes, bytes], why: str
) -> None:
    with pytest.raises(MalformedEntry, match=f"^{why}$"):
        sidekiq_workers.process("h:1:x", fields, work, NOW)


def test_a_sidekiq_beat_older_than_its_hash_ttl_is_dead() -> None:
    process = sidekiq_workers.process("h:1:x", {"beat": str(NOW - 61)}, {}, NOW)
    assert (process.alive, process.dead_reason) == (False, "heartbeat older than Sidekiq's 60 s")


def test_a_dramatiq_message_body_gone_or_not_json_still_names_the_held_id() -> None:
    worker = dramatiq_workers.worker("ns", "w1", (NOW - 1) * 1000, {"q": {"h1": None, "h2": b"\x00"}}, NOW)
    assert worker.name == "ns:w1" and worker.alive and worker.state == "busy"
    assert [(j.id, j.task, j.queue) for j in worker.current_jobs] == [("h1", None, "q"), ("h2", None, "q")]


def test_a_dramatiq_beat_or_held_message_dramatiq_would_not_write_is_malformed_naming_it() -> None:
    with pytest.raises(MalformedEntry, match=r"^its heartbeat score is not a time$"):
        dramatiq_workers.worker("dramatiq", "w1", float("nan"), {}, NOW)
    with pytest.raises(MalformedEntry, match=r"^message h1 of q: actor_name is not a name$"):
        dramatiq_workers.worker("dramatiq", "w1", NOW * 1000, {"q": {"h1": b'{"actor_name": [1]}'}}, NOW)
