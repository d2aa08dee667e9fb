"""The state store contract, run against the real Redis and an SQLite file alike.

Leases here are tens of milliseconds and tests sleep past them: the sleeps set up an expired lease, nothing
asserts on speed.
"""

from __future__ import annotations

import threading
import time

import pytest
from storekit import StoreFactory

from tqadmin.store.completion.base import ClaimState, StateStore

SHORT = 0.05  # a lease that has surely expired after PAST seconds
PAST = 0.2


def test_a_new_job_is_claimed_with_a_fencing_token_and_no_crashes(store: StateStore) -> None:
    claim = store.claim("job-1", "worker-a", 30)
    assert claim.state is ClaimState.CLAIMED
    assert (claim.owner, claim.token, claim.crashes) == ("worker-a", 1, 0)


def test_a_live_lease_holds_the_job_off_other_workers(store: StateStore) -> None:
    store.claim("job-1", "worker-a", 30)
    other = store.claim("job-1", "worker-b", 30)
    assert other.state is ClaimState.HELD
    assert other.owner == "worker-a"
    assert 0 < other.retry_after_s <= 30


def test_a_done_job_is_reported_done_on_reclaim_and_among_done_ids(store: StateStore) -> None:
    claim = store.claim("job-1", "worker-a", 30)
    assert store.complete(claim)
    again = store.claim("job-1", "worker-b", 30)
    assert again.state is ClaimState.DONE
    assert store.done_among(["job-1", "job-2", "job-1"]) == {"job-1"}
    assert store.done_among([]) == set()


def test_a_worker_paused_past_its_lease_cannot_commit_after_a_takeover(stores: StoreFactory) -> None:
    store, kit = stores.make(), stores.kit
    paused = store.claim("job-1", "worker-a", SHORT)
    assert store.start(paused)
    time.sleep(PAST)
    taker = store.claim("job-1", "worker-b", 30)
    assert taker.state is ClaimState.CLAIMED
    assert taker.token > paused.token
    assert taker.crashes == 1
    assert not store.renew(paused, 30)
    assert not store.complete(paused, kit.effect("job-1"))
    assert not store.release(paused)
    assert kit.count("job-1") == 0
    assert store.complete(taker, kit.effect("job-1"))
    assert kit.count("job-1") == 1


def test_an_expired_lease_nobody_took_over_still_commits_with_its_current_token(store: StateStore) -> None:
    claim = store.claim("job-1", "worker-a", SHORT)
    time.sleep(PAST)
    assert store.complete(claim)


def test_renewing_keeps_other_workers_off_past_the_first_lease(store: StateStore) -> None:
    claim = store.claim("job-1", "worker-a", SHORT)
    assert store.renew(claim, 30)
    time.sleep(PAST)
    assert store.claim("job-1", "worker-b", 30).state is ClaimState.HELD


def test_crashes_count_expired_claims_but_not_releases_and_can_be_forgotten(store: StateStore) -> None:
    for expected in range(3):
        claim = store.claim("poison", f"worker-{expected}", SHORT)
        assert claim.crashes == expected
        assert store.start(claim)
        time.sleep(PAST)
    claim = store.claim("poison", "worker-x", 30)
    assert claim.crashes == 3
    assert store.release(claim)
    claim = store.claim("poison", "worker-y", 30)
    assert claim.crashes == 3  # a release is a retry, not a crash
    assert store.release(claim, forget_crashes=True)
    assert store.claim("poison", "worker-z", 30).crashes == 0


def test_a_claim_that_expires_before_its_run_started_counts_no_crash(store: StateStore) -> None:
    """A job that waited, claimed, in a worker's prefetch window when the worker died never ran: its
    ``x-tq-attempts`` counts runs made, so no crash is charged to it; one whose run started is charged."""
    waited = store.claim("job-1", "worker-a", SHORT)
    ran = store.claim("job-2", "worker-a", SHORT)
    assert store.start_many([ran]) == [True]
    time.sleep(PAST)
    assert [c.crashes for c in store.claim_many(["job-1", "job-2"], "worker-b", 30)] == [0, 1]
    assert not store.start(waited)  # superseded: a stale claim's run must not start
    assert store.start_many([]) == []


def test_a_started_claim_renews_completes_and_releases_as_a_claimed_one(store: StateStore) -> None:
    claim = store.claim("job-1", "worker-a", SHORT)
    assert store.start(claim)
    assert store.renew(claim, 30)
    time.sleep(PAST)
    assert store.claim("job-1", "worker-b", 30).state is ClaimState.HELD
    assert store.release(claim)
    again = store.claim("job-1", "worker-b", 30)
    assert (again.state, again.crashes) == (ClaimState.CLAIMED, 0)  # a release is a retry, not a crash
    assert store.start(again) and store.complete(again)
    assert store.done_among(["job-1"]) == {"job-1"}


def test_the_claims_of_a_dead_holder_are_given_up_at_once_and_the_started_ones_charged_a_crash(
    store: StateStore,
) -> None:
    """What a supervisor does when its worker process dies: nothing waits out a 30 s lease. A run under way
    (the claim register says so; the store may not know it started) is charged its crash on the next claim; a
    claim whose run had not started, or whose task had returned, is released; a superseded one is left."""
    ran, waited, returned = store.claim_many(["ran", "waited", "returned"], "dead", 30)
    assert store.start(returned)  # the monitor recorded its start; its task returned before the death
    taken = store.claim("taken", "dead", SHORT)
    time.sleep(PAST)
    later = store.claim("taken", "alive", 30)  # the dead holder's lease on it ran out and it moved on
    assert store.abandon_many([ran], started=True) == [True]
    assert store.abandon_many([waited, returned, taken], started=False) == [True, True, False]
    again = store.claim_many(["ran", "waited", "returned", "taken"], "next", 30)
    assert [(c.state, c.crashes) for c in again[:3]] == [(ClaimState.CLAIMED, n) for n in (1, 0, 0)]
    assert (again[3].state, again[3].owner, again[3].token) == (ClaimState.HELD, "alive", later.token)
    assert not store.complete(ran)  # the dead holder's token is fenced off
    assert store.abandon_many([], started=True) == []


def test_a_released_job_can_be_claimed_at_once_with_a_new_token(store: StateStore) -> None:
    first = store.claim("job-1", "worker-a", 30)
    assert store.release(first)
    second = store.claim("job-1", "worker-b", 30)
    assert second.state is ClaimState.CLAIMED
    assert second.token == first.token + 1


def test_an_effect_that_raises_commits_neither_the_effect_nor_the_mark(stores: StoreFactory) -> None:
    store, kit = stores.make(), stores.kit
    claim = store.claim("job-1", "worker-a", 30)

    def effect_then_crash(tx: object) -> None:
        kit.effect("job-1")(tx)
        raise RuntimeError("the task's effect broke half way")

    with pytest.raises(RuntimeError):
        store.complete(claim, effect_then_crash)
    assert kit.count("job-1") == 0
    assert store.done_among(["job-1"]) == set()
    assert store.complete(claim, kit.effect("job-1"))
    assert kit.count("job-1") == 1
    assert store.done_among(["job-1"]) == {"job-1"}


def test_completing_twice_commits_the_effect_once(stores: StoreFactory) -> None:
    store, kit = stores.make(), stores.kit
    claim = store.claim("job-1", "worker-a", 30)
    assert store.complete(claim, kit.effect("job-1"))
    assert not store.complete(claim, kit.effect("job-1"))
    assert kit.count("job-1") == 1


def test_racing_claims_of_one_job_let_exactly_one_worker_run_it(stores: StoreFactory) -> None:
    store = stores.make()
    states: list[ClaimState] = []
    barrier = threading.Barrier(6)

    def race(n: int) -> None:
        barrier.wait()
        states.append(store.claim("contended", f"worker-{n}", 30).state)

    threads = [threading.Thread(target=race, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert states.count(ClaimState.CLAIMED) == 1
    assert states.count(ClaimState.HELD) == 5


def test_job_ids_with_braces_or_odd_characters_get_their_own_records(store: StateStore) -> None:
    ids = ["a{b}", "ab", "{}", "", "ü/é:*?"]
    for job_id in ids:
        assert store.claim(job_id, "worker-a", 30).state is ClaimState.CLAIMED
    claim = store.claim("a{b}", "worker-b", 30)
    assert claim.state is ClaimState.HELD


def test_batches_behave_like_one_call_per_job_in_order(store: StateStore) -> None:
    done_before = store.claim("b-done", "worker-a", 30)
    store.complete(done_before)
    store.claim("b-held", "worker-a", 30)
    claims = store.claim_many(["b-new", "b-done", "b-held"], "worker-b", 30)
    assert [c.state for c in claims] == [ClaimState.CLAIMED, ClaimState.DONE, ClaimState.HELD]
    assert [c.job_id for c in claims] == ["b-new", "b-done", "b-held"]
    assert store.renew_many([claims[0], done_before], 30) == [True, False]
    assert store.complete_many([claims[0], done_before]) == [True, False]
    assert store.done_among(["b-new", "b-done", "b-held"]) == {"b-new", "b-done"}
    assert store.claim_many([], "worker-b", 30) == []


def test_completing_and_claiming_together_marks_the_finished_jobs_then_claims_the_next(
    store: StateStore,
) -> None:
    ran = store.claim("c-ran", "worker-a", 30)
    superseded = store.claim("c-stale", "worker-a", 30)
    store.release(superseded)
    done, claims = store.complete_and_claim([ran, superseded], ["c-next", "c-ran"], "worker-a", 30)
    assert done == [True, False]
    assert [c.state for c in claims] == [ClaimState.CLAIMED, ClaimState.DONE]  # marked before the claims
    assert store.done_among(["c-ran", "c-stale", "c-next"]) == {"c-ran"}
    assert store.complete_and_claim([], [], "worker-a", 30) == ([], [])


def test_a_batch_counts_a_lapsed_lease_as_a_crash_and_reports_the_live_holder(store: StateStore) -> None:
    assert store.start(store.claim("k-lapsed", "worker-a", 0.05))
    store.claim("k-live", "worker-a", 30)
    time.sleep(0.2)  # the short lease runs out (a state change waited for, not a speed measured)
    claims = store.claim_many(["k-lapsed", "k-live", "k-fresh"], "worker-b", 30)
    assert [(c.state, c.crashes) for c in claims] == [
        (ClaimState.CLAIMED, 1),
        (ClaimState.HELD, 0),
        (ClaimState.CLAIMED, 0),
    ]
    assert claims[1].owner == "worker-a" and claims[1].retry_after_s > 0
    assert claims[0].token > 0 and claims[0].owner == "worker-b"
