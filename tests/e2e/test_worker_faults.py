"""The worker end to end (publish -> RabbitMQ -> `tqadmin worker` -> Redis store), with faults."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import statistics
import time
from datetime import datetime
from pathlib import Path

import pytest
from worker_harness import Pipeline, pipeline_fixture  # noqa: F401 - the fixture

from tests.support.amqp_proxy import AmqpProxy
from tqadmin.store.factory import open_store

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis]

FAST_RETRIES = ("--backoff-base", "0.05", "--backoff-cap", "0.1")


def test_failed_runs_are_retried_by_the_broker_no_sooner_than_their_full_jitter_delays(
    pipeline: Pipeline,
) -> None:
    base, cap = 0.5, 1.5
    ids = pipeline.publish([{"task_type": "flaky", "id": f"f{i}", "succeed_on": 4} for i in range(12)])
    pipeline.start("--concurrency", "4", "--backoff-base", str(base), "--backoff-cap", str(cap))
    pipeline.wait_for(lambda: len(pipeline.effects()) == 12, 60, "12 flaky jobs to succeed on their 4th run")
    assert set(pipeline.effects().values()) == {1}
    drawn: list[float] = []
    for job_id in ids:
        times, delays = pipeline.run_times(job_id), pipeline.retry_delays(job_id)
        assert len(times) == 4 and len(delays) == 3
        for k, ((before, after), delay) in enumerate(zip(itertools.pairwise(times), delays, strict=True), 1):
            bound = min(cap, base * 2 ** (k - 1))
            assert 0 <= delay <= bound, (job_id, k, delay, bound)
            # the broker held it at least the delay drawn (less the rounding it declares): a lower bound,
            # which a loaded machine only widens
            assert after - before >= delay - pipeline.delay_tolerance_s(delay), (job_id, k, times, delays)
            drawn.append(delay / bound)
    # full jitter: the delays drawn spread over the whole range (uniform(0, 1) has mean 0.5, sd 0.29)
    assert statistics.pstdev(drawn) > 0.1
    assert 0.2 < statistics.mean(drawn) < 0.9


def test_dead_letters_keep_the_body_byte_for_byte_and_say_why_in_headers(pipeline: Pipeline) -> None:
    pipeline.publish(
        [
            {"task_type": "fatal", "id": "f1"},
            {"task_type": "flaky", "id": "r1", "succeed_on": 99},
            {"task_type": "no_such_task", "id": "u1"},
        ]
    )
    malformed = {
        b"not json at all": "malformed",
        b"\xff\xfe{}": "malformed",
        b"[1, 2, 3]": "malformed",
        b'{"task_type": "count", "x": NaN}': "malformed",
        b'{"task_type": 7}': "malformed",
        b'{"no": "task type"}': "malformed",
        b'{"task_type": "count", "deep": ' + b"[" * 60 + b"]" * 60 + b"}": "malformed",
        b'{"task_type": "count", "pad": "' + b"x" * 5000 + b'"}': "too_large",
    }
    pipeline.publish_raw(list(malformed))
    pipeline.publish([{"task_type": "count", "id": "after-the-poison"}])
    pipeline.start("--max-payload-bytes", "4000", *FAST_RETRIES)
    pipeline.wait_for(lambda: pipeline.depth(f"{pipeline.queue}.dlq") == 11, 60, "11 dead letters")
    pipeline.wait_for(lambda: pipeline.effects() == {"after-the-poison": 1}, 30, "the good job after them")

    letters = {body: properties.headers for properties, body in pipeline.dead_letters()}
    for body, reason in malformed.items():
        assert letters[body]["x-tq-reason"] == reason
        assert letters[body]["x-tq-attempts"] == 0
    by_id = {
        pipeline.short(json.loads(b)["id"]): h
        for b, h in letters.items()
        if b.startswith(b"{") and b'"id"' in b
    }
    assert by_id["f1"]["x-tq-reason"] == "fatal"
    assert by_id["f1"]["x-tq-attempts"] == 1
    assert by_id["f1"]["x-tq-error"].startswith("FatalError: cannot work with amqp://bob:***@")
    assert "hunter2" not in by_id["f1"]["x-tq-error"]
    assert len(by_id["f1"]["x-tq-error"].encode()) <= 2048
    assert by_id["r1"]["x-tq-reason"] == "max_retries"
    assert by_id["r1"]["x-tq-attempts"] == 6  # the decorator's max_retries=5 wins over --max-retries
    assert by_id["u1"]["x-tq-reason"] == "unknown_task"
    for headers in letters.values():
        assert headers["x-tq-original-queue"] == pipeline.queue
        assert headers["x-tq-first-seen"] <= headers["x-tq-dead-lettered-at"]
    # max_retries: the first run's time is carried along the retries
    assert by_id["r1"]["x-tq-first-seen"] < by_id["r1"]["x-tq-dead-lettered-at"]


def test_sigterm_finishes_the_running_job_returns_the_prefetched_one_and_exits_0(pipeline: Pipeline) -> None:
    pipeline.publish(
        [{"task_type": "sleep", "id": "slow", "seconds": 2}, {"task_type": "count", "id": "next"}]
    )
    worker = pipeline.start("--concurrency", "1", "--prefetch", "2")
    pipeline.wait_for(lambda: pipeline.claimed("slow"), 30, "the slow job to start")
    pipeline.wait_for(lambda: "slow" in pipeline.current_jobs(), 10, "a heartbeat naming the current job")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    assert pipeline.effects() == {"slow": 1}
    assert pipeline.depth() == 1  # "next" was prefetched, never started, and given back
    assert "slow" not in pipeline.current_jobs()  # its last heartbeat said goodbye


def test_a_burst_of_signals_to_the_whole_process_group_still_ends_in_a_clean_exit(pipeline: Pipeline) -> None:
    """A supervisor passing SIGTERM on, the demo stopping it and the parent dying all signal at once."""
    pipeline.publish([{"task_type": "sleep", "id": "slow", "seconds": 1}])
    worker = pipeline.start("--concurrency", "1")
    pipeline.wait_for(lambda: pipeline.claimed("slow"), 30, "the slow job to start")
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and worker.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGTERM)
    # 0, or killed by a late SIGTERM after the supervisor restored the default handler: never a hang
    code = worker.wait(timeout=30)
    assert code in (0, -signal.SIGTERM)
    if code == 0:
        assert pipeline.effects() == {"slow": 1}
    else:  # killed before or after the commit: nothing lost (done once, or back in the queue), nothing twice
        assert pipeline.effects() == {"slow": 1} or (pipeline.effects() == {} and pipeline.depth() == 1)


def test_a_run_past_the_job_timeout_is_dead_lettered_as_timeout_and_can_never_commit(
    pipeline: Pipeline,
) -> None:
    pipeline.publish([{"task_type": "sleep", "id": "stuck", "seconds": 3}])
    pipeline.start("--job-timeout", "1", "--max-retries", "0", "--lease", "5")
    pipeline.wait_for(lambda: pipeline.depth(f"{pipeline.queue}.dlq") == 1, 30, "the timed-out job")
    ((properties, _),) = pipeline.dead_letters()
    assert properties.headers["x-tq-reason"] == "timeout"
    assert properties.headers["x-tq-error"].startswith("TimeoutError")
    pipeline.wait_for(lambda: pipeline.runs() == {"stuck": 1}, 30, "the abandoned run to return")
    assert pipeline.effects() == {}  # it finished after its claim was released: fenced off


def test_a_job_that_kills_its_worker_is_quarantined_as_crash_loop_and_its_neighbours_run(
    pipeline: Pipeline,
) -> None:
    pipeline.publish([{"task_type": "poison", "id": "poison"}])
    innocents = pipeline.publish([{"task_type": "count", "id": f"ok-{i}"} for i in range(6)])
    worker = pipeline.start("--concurrency", "1", "--prefetch", "10", "--lease", "1", "--crash-limit", "3")
    pipeline.wait_for(lambda: pipeline.depth(f"{pipeline.queue}.dlq") == 1, 60, "the poison job's quarantine")
    pipeline.wait_for(lambda: len(pipeline.effects()) == 6, 30, "the innocent jobs")
    ((properties, body),) = pipeline.dead_letters()
    assert pipeline.short(json.loads(body)["id"]) == "poison"
    assert properties.headers["x-tq-reason"] == "crash_loop"
    assert pipeline.effects() == dict.fromkeys(innocents, 1)
    assert pipeline.runs()["poison"] == 3
    assert worker.poll() is None  # the supervisor kept the worker alive through the crashes


def test_a_task_module_that_cannot_be_imported_is_exit_2(pipeline: Pipeline) -> None:
    worker = pipeline.start_with_tasks("no_such_module_anywhere")
    assert worker.wait(timeout=30) == 2
    assert "cannot import task module" in pipeline.log_text()


def test_a_refused_login_is_exit_3_with_the_password_masked(pipeline: Pipeline) -> None:
    worker = pipeline.start(broker="amqp://guest:wrong-secret@127.0.0.1:5672/%2F")
    assert worker.wait(timeout=30) == 3
    log = pipeline.log_text()
    assert "refused the login" in log and "wrong-secret" not in log


def test_a_worker_whose_connection_drops_reconnects_and_every_effect_happens_once(pipeline: Pipeline) -> None:
    proxy = AmqpProxy()
    try:
        ids = pipeline.publish([{"task_type": "count", "id": f"d{i}", "work_s": 0.01} for i in range(300)])
        pipeline.start("--concurrency", "4", "--lease", "2", broker=proxy.url())
        for done_before_drop in (50, 150):
            pipeline.wait_for(
                lambda n=done_before_drop: len(pipeline.effects()) >= n, 60, f"{done_before_drop} jobs"
            )
            proxy.drop_all()
        pipeline.wait_for(lambda: len(pipeline.effects()) == 300, 60, "every job after the drops")
        assert pipeline.effects() == dict.fromkeys(ids, 1)
        assert proxy.connections >= 3  # declare, first consumer, at least one reconnect
        assert "reconnecting" in pipeline.log_text()
    finally:
        proxy.close()


def test_duplicates_run_once_whether_the_job_is_done_or_still_running_elsewhere(pipeline: Pipeline) -> None:
    # "held": two copies taken at once, one waits for the other's lease; "done": a copy after completion
    pipeline.publish([{"task_type": "sleep", "id": "held", "seconds": 1}] * 2)
    pipeline.start("--concurrency", "2", "--lease", "2")
    pipeline.wait_for(lambda: pipeline.effects() == {"held": 1}, 30, "the held job")
    pipeline.publish([{"task_type": "count", "id": "held"}])
    pipeline.wait_for(lambda: pipeline.pending() == 0, 30, "every copy to be settled")
    assert pipeline.runs() == {"held": 1}
    assert pipeline.effects() == {"held": 1}


def test_a_job_running_beside_a_worker_killer_is_not_quarantined_with_it(pipeline: Pipeline) -> None:
    """Both runs die with the process, so both claims count a crash; a job with a crash on record (a suspect)
    then runs alone in its worker, so later crashes are charged to the job that causes them, not to the job
    that happened to share the process."""
    pipeline.publish([{"task_type": "sleep", "id": "bystander", "seconds": 2}])
    pipeline.publish([{"task_type": "poison", "id": "poison"}])
    worker = pipeline.start("--concurrency", "4", "--lease", "1", "--crash-limit", "3")
    pipeline.wait_for(lambda: pipeline.depth(f"{pipeline.queue}.dlq") >= 1, 60, "the poison job's quarantine")
    pipeline.wait_for(lambda: pipeline.effects() == {"bystander": 1}, 30, "the bystander")
    dead = [pipeline.short(json.loads(body)["id"]) for _, body in pipeline.dead_letters()]
    assert dead == ["poison"]
    assert worker.poll() is None


def test_a_task_calling_sys_exit_is_a_failed_run_and_its_job_thread_goes_on(pipeline: Pipeline) -> None:
    pipeline.publish([{"task_type": "exits", "id": "exits"}, {"task_type": "count", "id": "after"}])
    pipeline.start("--concurrency", "1")
    pipeline.wait_for(
        lambda: pipeline.depth(f"{pipeline.queue}.dlq") == 1, 30, "the exiting job's dead letter"
    )
    pipeline.wait_for(lambda: pipeline.effects() == {"after": 1}, 30, "the next job, on the same thread")
    ((properties, _),) = pipeline.dead_letters()
    assert properties.headers["x-tq-reason"] == "max_retries"
    assert properties.headers["x-tq-error"].startswith("SystemExit")


def test_a_job_held_by_another_worker_keeps_its_first_seen_time_while_it_waits(pipeline: Pipeline) -> None:
    pipeline.publish([{"task_type": "fatal", "id": "held"}])
    store = open_store(pipeline.store_url)
    try:
        # a live lease elsewhere (HELD), long enough to outlast a worker's start on a loaded machine
        store.claim(pipeline.id_prefix + "held", "another-worker", 8.0)
    finally:
        store.close()
    pipeline.start()
    pipeline.wait_for(
        lambda: pipeline.depth(f"{pipeline.queue}.dlq") == 1, 30, "the job, once the lease ended"
    )
    ((properties, _),) = pipeline.dead_letters()
    headers = properties.headers
    seen, dead = (datetime.fromisoformat(headers[h]) for h in ("x-tq-first-seen", "x-tq-dead-lettered-at"))
    assert (dead - seen).total_seconds() >= 1.0, "first seen when it was first held, not when it died"


def test_a_job_timeout_past_the_brokers_consumer_timeout_is_warned_about_at_start(pipeline: Pipeline) -> None:
    pipeline.declare(pipeline.queue)
    worker = pipeline.start("--job-timeout", "3600", verbose=False)
    pipeline.wait_for(lambda: "exceeds the consumer timeout" in pipeline.log_text(), 30, "the warning")
    assert "--job-timeout 3600 s" in pipeline.log_text() and "1800 s" in pipeline.log_text()
    pipeline.stop_all()
    assert worker.returncode == 0


def test_a_worker_that_hangs_mid_run_instead_of_dying_still_charges_its_job_a_crash(
    pipeline: Pipeline,
) -> None:
    """A process that dies has its runs charged by its supervisor (the claim register); one that hangs
    (stopped, locked up) cannot tell it, so the store already has the start of every run that outlasts a
    monitor tick: once the hung process's lease runs out, the next claim of the job shows the crash."""
    pipeline.publish([{"task_type": "sleep", "id": "hangs", "seconds": 5}])
    worker = pipeline.start("--concurrency", "1", "--lease", "1")
    pipeline.wait_for(lambda: pipeline.runs() == {"hangs": 1}, 30, "the long run to start")
    pipeline.wait_for(lambda: pipeline.claim_record("hangs")[0] == "running", 30, "a monitor tick's record")
    (child,) = map(int, Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split())
    os.kill(child, signal.SIGSTOP)
    store = open_store(pipeline.store_url)
    try:
        time.sleep(1.5)  # the lease it can no longer renew runs out
        claim = store.claim(pipeline.id_prefix + "hangs", "the-next-worker", 5)
        assert claim.crashes == 1
        store.release(claim)
    finally:
        store.close()
        os.kill(child, signal.SIGCONT)
