"""The worker benchmarks' checks (bench/drain.py): a run that skips a job, runs one twice where once is
promised, leaves jobs in its DLQ or in its queue is FAILED, with no rate; a clean run has one. The consumer
here is a tiny process that counts its "jobs" with bench/worker_apps/counting.py, as every bench task does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path[:0] = [str(BENCH), str(BENCH / "worker_apps")]

import drain  # noqa: E402


def consumer(ids: list[int]) -> drain.Start:
    """A consumer that runs (counts) these ids, then waits to be stopped (SIGTERM) as a worker does."""
    script = f"import time\nfrom counting import ran\nfor n in {ids!r}: ran(n)\ntime.sleep(60)"
    return drain.spawn(sys.executable, "-c", script)


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drain, "STALL_S", 0.5)
    monkeypatch.setattr(drain, "DEADLINE_S", 2.0)


def test_a_clean_run_has_a_rate() -> None:
    outcome = drain.drain(20, consumer(list(range(20))), lambda: 0, once=True, dlq=lambda: 0)
    assert outcome.failures == ()
    assert outcome.rate is not None and outcome.rate > 0
    assert (outcome.ran, outcome.runs, outcome.dlq_checked) == (20, 20, True)


def test_a_job_that_never_ran_fails_the_run() -> None:
    outcome = drain.drain(20, consumer(list(range(19))), lambda: 0)
    assert outcome.rate is None
    assert "1 of 20 jobs never ran" in outcome.failures


def test_a_job_run_twice_fails_where_once_is_promised_only() -> None:
    twice = [*range(20), 3]
    assert drain.drain(20, consumer(twice), lambda: 0).rate is not None
    outcome = drain.drain(20, consumer(twice), lambda: 0, once=True)
    assert outcome.rate is None
    assert "1 jobs ran more than once, though dedup promises once" in outcome.failures


def test_a_dead_letter_or_a_job_left_fails_the_run() -> None:
    dead = drain.drain(5, consumer(list(range(5))), lambda: 0, dlq=lambda: 2)
    assert dead.rate is None and "2 jobs in the dead-letter queue" in dead.failures
    polls = iter([0, 0])  # then 3 held: never settled, and still there after the stop
    outcome = drain.drain(5, consumer(list(range(5))), lambda: next(polls, 3))
    assert outcome.rate is None and "3 jobs left ready or unacked after the stop" in outcome.failures


def test_a_consumer_that_ends_by_itself_has_written_its_counts() -> None:
    script = "from counting import ran\nfor n in range(50): ran(n)"
    outcome = drain.drain(50, drain.spawn(sys.executable, "-c", script), lambda: 0)
    assert outcome.failures == () and outcome.ran == 50


def test_a_consumer_that_dies_is_quoted() -> None:
    script = "import sys\nsys.exit('no broker here')"
    outcome = drain.drain(5, drain.spawn(sys.executable, "-c", script), lambda: 5)
    assert outcome.rate is None
    assert any("exited (code 1)" in f and "no broker here" in f for f in outcome.failures)
