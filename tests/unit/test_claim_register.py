"""The claim register: the claims a worker process leaves there when it dies are what its supervisor gives up
in the store, charging a crash to the runs under way; nothing a slot holds can stop the supervisor."""

from __future__ import annotations

import logging
import os
import struct
import uuid
from collections.abc import Callable

import pytest

from tqadmin.pipeline.claim_register import MAX_ID_BYTES, SLOT_BYTES, ClaimRegister, Left, recover_claims
from tqadmin.pipeline.supervisor import supervise
from tqadmin.store.completion.base import ClaimState
from tqadmin.store.factory import open_store

REDIS_URL = "redis://127.0.0.1:6379/0"


def _in_a_child_that_dies(work: Callable[[], object]) -> None:
    """Run ``work()`` in a forked process that then dies at once (``os._exit``), as a poison job makes it."""
    pid = os.fork()
    if pid == 0:
        try:
            work()
        finally:
            os._exit(1)
    os.waitpid(pid, 0)


def test_the_claims_held_and_the_runs_under_way_when_the_process_dies_are_read_by_the_parent() -> None:
    register = ClaimRegister(4)

    def hold_two_and_run_one() -> None:
        register.hold("job-é-1", 41)
        register.hold("waiting", 42)
        register.running("job-é-1", 41)

    _in_a_child_that_dies(hold_two_and_run_one)
    assert sorted(register.left(), key=lambda c: c.token) == [
        Left("job-é-1", 41, running=True),
        Left("waiting", 42, running=False),
    ]


def test_a_claim_given_up_leaves_nothing_and_a_run_whose_task_returned_is_held_not_running() -> None:
    register = ClaimRegister(4)

    def run_return_and_give_up() -> None:
        for job_id, token in (("done", 7), ("returned", 8)):
            register.hold(job_id, token)
            register.running(job_id, token)
            register.running(job_id, token, now=False)
        register.drop("done", 7)

    _in_a_child_that_dies(run_return_and_give_up)
    assert register.left() == [Left("returned", 8, running=False)]


def test_a_new_process_starts_with_an_empty_register() -> None:
    register = ClaimRegister(2)
    _in_a_child_that_dies(lambda: register.hold("left-by-the-dead", 1))
    register.clear()
    assert register.left() == []
    assert register.hold("a", 1) and register.hold("b", 2)


def test_a_claim_that_does_not_fit_is_refused_and_a_full_register_gives_up_its_oldest_waiting_claim() -> None:
    register = ClaimRegister(2)
    assert not register.hold("x" * (MAX_ID_BYTES + 1), 1)  # too long an id: its start goes to the store
    assert not register.running("x" * (MAX_ID_BYTES + 1), 1)
    assert (
        register.hold("x" * MAX_ID_BYTES, 1)
        and register.hold("running", 2)
        and register.running("running", 2)
    )
    assert register.hold("newest", 3)  # the oldest waiting claim gave its slot up
    assert register.running("newest", 3)
    assert not register.hold("one more", 4)  # every slot holds a running claim now
    assert sorted(c.job_id for c in register.left()) == ["newest", "running"]


@pytest.mark.redis
def test_recovering_the_claims_of_a_dead_process_charges_its_runs_and_frees_the_rest_at_once() -> None:
    prefix = f"tqt-register-{uuid.uuid4().hex[:8]}"
    store = open_store(REDIS_URL, prefix=prefix)
    try:
        died, waited = store.claim_many(["died-running", "waited"], "dead-worker", 30)
        register = ClaimRegister(4)

        def claim_both_run_one() -> None:
            register.hold(waited.job_id, waited.token)
            register.hold(died.job_id, died.token)
            register.running(died.job_id, died.token)

        _in_a_child_that_dies(claim_both_run_one)
        recover_claims(register, lambda: open_store(REDIS_URL, prefix=prefix))
        again = store.claim_many(["died-running", "waited"], "next-worker", 5)  # no 30 s lease to wait out
        assert [(c.state, c.crashes) for c in again] == [(ClaimState.CLAIMED, 1), (ClaimState.CLAIMED, 0)]
    finally:
        store.delete_prefix()
        store.close()


def test_a_store_out_of_reach_is_a_warning_and_the_supervisor_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    register = ClaimRegister(2)
    _in_a_child_that_dies(lambda: register.hold("poison", 3) and register.running("poison", 3))
    with caplog.at_level(logging.WARNING, "tqadmin.worker"):
        recover_claims(register, lambda: open_store("redis://:hunter2@127.0.0.1:1/0", timeout_s=0.5))
    assert "could not charge a crash to jobs poison" in caplog.text
    assert "hunter2" not in caplog.text


def _write_slot(
    register: ClaimRegister, slot: int, flag: int, token: int, name: bytes, size: int | None = None
) -> None:
    """Raw bytes into the shared memory, as a stray write or a bug would leave them."""
    head = struct.pack("<BqH", flag, token, len(name) if size is None else size)
    at = slot * SLOT_BYTES
    register._memory[at : at + len(head) + len(name)] = head + name  # the raw slot is the point


CORRUPT = [
    pytest.param(1, 5, b"\xff\xfe not utf-8", None, id="id-not-utf-8"),
    pytest.param(2, 5, b"job", MAX_ID_BYTES + 1, id="size-out-of-range"),
    pytest.param(2, 5, b"job", 65535, id="size-past-the-slot"),
    pytest.param(1, -7, b"job", None, id="token-below-1"),
    pytest.param(9, 5, b"job", None, id="unknown-flag"),
]


@pytest.mark.parametrize(("flag", "token", "name", "size"), CORRUPT)
def test_a_corrupt_slot_is_logged_and_skipped_and_the_others_are_read(
    flag: int, token: int, name: bytes, size: int | None, caplog: pytest.LogCaptureFixture
) -> None:
    register = ClaimRegister(3)
    register.hold("sound", 4)  # slot 2: the free slots are taken from the end
    _write_slot(register, 0, flag, token, name, size)
    with caplog.at_level(logging.WARNING, "tqadmin.worker"):
        assert register.left() == [Left("sound", 4, running=False)]
    assert "claim register slot 0 is corrupt, skipped" in caplog.text


def test_the_supervisor_survives_a_corrupt_register_and_an_on_death_that_raises() -> None:
    """The reproduction: a slot whose id is not UTF-8 made the supervisor die in ``on_death``. Now the slot is
    skipped, the sound claims are handed on, and even an ``on_death`` that raises leaves the supervisor to
    start the next child."""
    register = ClaimRegister(2)
    recovered: list[list[Left]] = []
    deaths = [0]

    def child() -> int:
        if deaths[0] == 0:  # the first child leaves a corrupt slot and a sound one, then dies
            register.hold("sound", 3)
            _write_slot(register, 0, 2, 9, b"\xc3\x28 bad")  # the sound claim took slot 1
            os._exit(1)
        return 0

    def on_death() -> None:
        deaths[0] += 1  # seen by the supervisor only (the forked child has its own copy)
        recovered.append(register.left())
        raise RuntimeError("a bug after a death")

    assert supervise(child, on_death=on_death) == 0  # the second child ran and returned
    assert recovered == [[Left("sound", 3, running=False)]]
