"""The run ledger: what a worker process leaves there when it dies is what its supervisor charges a crash."""

from __future__ import annotations

import logging
import os
import time
import uuid

import pytest

from tqadmin.pipeline.ledger import MAX_ID_BYTES, RunLedger, charge_crashes
from tqadmin.store.base import ClaimState
from tqadmin.store.factory import open_store

REDIS_URL = "redis://127.0.0.1:6379/0"


def _in_a_child_that_dies(work: object) -> None:
    """Run ``work()`` in a forked process that then dies at once (``os._exit``), as a poison job makes it."""
    pid = os.fork()
    if pid == 0:
        try:
            work()  # type: ignore[operator]
        finally:
            os._exit(1)
    os.waitpid(pid, 0)


def test_a_run_under_way_when_the_process_dies_is_read_by_the_parent() -> None:
    ledger = RunLedger(4)
    _in_a_child_that_dies(lambda: ledger.enter("job-é-1", 41))
    assert ledger.left() == [("job-é-1", 41)]


def test_a_run_whose_task_returned_leaves_nothing() -> None:
    ledger = RunLedger(4)

    def run_and_return() -> None:
        ledger.leave(ledger.enter("done", 7))  # type: ignore[arg-type]
        ledger.enter("running", 8)

    _in_a_child_that_dies(run_and_return)
    assert ledger.left() == [("running", 8)]


def test_a_new_process_starts_with_an_empty_ledger() -> None:
    ledger = RunLedger(2)
    _in_a_child_that_dies(lambda: ledger.enter("left-by-the-dead", 1))
    ledger.clear()
    assert ledger.left() == []
    assert ledger.enter("a", 1) is not None and ledger.enter("b", 2) is not None


def test_a_run_that_does_not_fit_is_refused_so_the_store_hears_of_it_instead() -> None:
    ledger = RunLedger(1)
    assert ledger.enter("x" * (MAX_ID_BYTES + 1), 1) is None  # too long an id
    assert ledger.enter("x" * MAX_ID_BYTES, 1) is not None
    assert ledger.enter("another", 2) is None  # every slot taken
    assert ledger.left() == [("x" * MAX_ID_BYTES, 1)]


@pytest.mark.redis
def test_charging_the_runs_left_makes_their_next_claims_show_a_crash() -> None:
    prefix = f"tqt-ledger-{uuid.uuid4().hex[:8]}"
    store = open_store(REDIS_URL, prefix=prefix)
    try:
        died, waited = (
            store.claim("died-running", "dead-worker", 0.3),
            store.claim("waited", "dead-worker", 0.3),
        )
        ledger = RunLedger(4)
        _in_a_child_that_dies(lambda: ledger.enter(died.job_id, died.token))
        charge_crashes(ledger, lambda: open_store(REDIS_URL, prefix=prefix))
        time.sleep(0.5)  # both leases run out
        again = store.claim("died-running", "next-worker", 5)
        assert (again.state, again.crashes) == (ClaimState.CLAIMED, 1)
        assert store.claim(waited.job_id, "next-worker", 5).crashes == 0  # it never ran: no crash
    finally:
        store.delete_prefix()
        store.close()


def test_a_store_out_of_reach_is_a_warning_and_the_supervisor_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger = RunLedger(2)
    _in_a_child_that_dies(lambda: ledger.enter("poison", 3))
    with caplog.at_level(logging.WARNING, "tqadmin.worker"):
        charge_crashes(ledger, lambda: open_store("redis://:hunter2@127.0.0.1:1/0", timeout_s=0.5))
    assert "could not charge a crash to jobs poison" in caplog.text
    assert "hunter2" not in caplog.text
