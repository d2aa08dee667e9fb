"""Where a run's start is recorded before its task runs: the claim register when it fits, else the store."""

from __future__ import annotations

from collections.abc import Sequence

from tqadmin.pipeline.claim_register import ClaimRegister, Left
from tqadmin.pipeline.job import new_job
from tqadmin.pipeline.outcomes import Run
from tqadmin.pipeline.starts import RunStarts
from tqadmin.pipeline.tasks import TaskSpec
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import Message
from tqadmin.store.completion.base import Claim, ClaimState


class StoreStarts:
    """The store's ``start_many`` as the worker's round trips see it: what it was sent, what it answers."""

    def __init__(self, answer: bool = True) -> None:
        self.sent: list[list[str]] = []
        self.answer = answer

    def __call__(self, claims: Sequence[Claim]) -> list[bool]:
        self.sent.append([c.job_id for c in claims])
        return [self.answer] * len(claims)


def a_run(job_id: str) -> Run:
    job = new_job("noop", job_id=job_id)
    claim = Claim(job_id, ClaimState.CLAIMED, "me", 7)
    return Run(Delivery(Message(b"{}"), None), job, TaskSpec("noop", lambda _c, _j: None), claim, 1)


def test_under_a_supervisor_a_start_costs_no_store_round_trip_and_ends_with_its_task() -> None:
    store, register = StoreStarts(), ClaimRegister(2)
    starts, run = RunStarts(store, register), a_run("j1")
    register.hold("j1", 7)  # as the claim's trip wrote it
    assert starts.begin(run)
    assert register.left() == [Left("j1", 7, running=True)] and not run.recorded and store.sent == []
    starts.end(run)
    assert register.left() == [Left("j1", 7, running=False)]  # held until its mark lands: no crash to charge


def test_a_run_whose_claim_the_register_does_not_hold_is_recorded_in_the_store_before_it_runs() -> None:
    store, register = StoreStarts(), ClaimRegister(1)
    starts = RunStarts(store, register)
    first, second = a_run("j1"), a_run("j2")
    register.hold("j1", 7)
    register.running("j1", 7)
    assert not register.hold("j2", 7)  # the one slot holds a running claim
    assert starts.begin(first) and starts.begin(second)
    assert store.sent == [["j2"]] and second.recorded and not first.recorded


def test_without_a_register_every_start_goes_to_the_store_and_a_superseded_claim_is_not_run() -> None:
    store = StoreStarts(answer=False)
    starts, run = RunStarts(store, None), a_run("j1")
    assert not starts.begin(run)
    assert store.sent == [["j1"]]
