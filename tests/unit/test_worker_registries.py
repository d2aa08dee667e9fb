"""Other frameworks' worker registries decoded whatever they hold: a hash of garbage is a worker with what
could be read, never an exception (the dashboard's poll and the exporter's thread must outlive any key)."""

from __future__ import annotations

from tqadmin.frameworks import dramatiq_workers, rq_workers, sidekiq_workers

NOW = 1_780_000_000.0


def test_an_rq_hash_of_garbage_is_a_live_worker_with_nothing_known() -> None:
    fields = {"last_heartbeat": b"\xff\xfe", "queues": 7, "pid": "-3", "state": ["x"], "birth": "yesterday"}
    worker = rq_workers.worker("rq:worker:w", fields, None, {}, NOW)
    assert (worker.name, worker.alive, worker.heartbeat_age_s, worker.pid, worker.queues) == (
        "w",
        True,
        None,
        None,
        (),
    )


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


def test_a_sidekiq_hash_of_garbage_is_read_as_far_as_it_goes() -> None:
    fields = {"info": b"{not json", "beat": "soon", "busy": "many", "quiet": "true"}
    work = {
        b"t1": b"[1, 2]",
        b"t2": b'{"payload": "{\\"jid\\": 5}"}',
        b"t3": b'{"payload": {"jid": "j", "class": "K"}}',
    }
    process = sidekiq_workers.process("h:1:x", fields, work, NOW)
    assert (process.alive, process.heartbeat_age_s, process.state, process.queues) == (
        True,
        None,
        "quiet",
        (),
    )
    assert [(j.id, j.task) for j in process.current_jobs] == [("thread t1", None), ("5", None), ("j", "K")]


def test_a_sidekiq_beat_older_than_its_hash_ttl_is_dead() -> None:
    process = sidekiq_workers.process("h:1:x", {"beat": str(NOW - 61)}, {}, NOW)
    assert (process.alive, process.dead_reason) == (False, "heartbeat older than Sidekiq's 60 s")


def test_a_dramatiq_message_body_gone_or_garbage_still_names_the_held_id() -> None:
    worker = dramatiq_workers.worker("ns", "w1", (NOW - 1) * 1000, {"q": {"h1": None, "h2": b"\x00"}}, NOW)
    assert worker.name == "ns:w1" and worker.alive and worker.state == "busy"
    assert [(j.id, j.task, j.queue) for j in worker.current_jobs] == [("h1", None, "q"), ("h2", None, "q")]
    assert not dramatiq_workers.worker("dramatiq", "w1", float("nan"), {}, NOW).alive
