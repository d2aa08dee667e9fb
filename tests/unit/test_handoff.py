"""The handoff's decisions, one thread playing every job thread in turn (no waiting is involved)."""

from __future__ import annotations

from tqadmin.pipeline.handoff import Handoff, Take, Trip


def handoff(low: int = 2, batch: int = 4) -> Handoff[str, str, str]:
    return Handoff[str, str, str](low=low, batch=batch)


def test_one_trip_claims_every_fresh_delivery_with_every_pending_mark_and_its_jobs_come_back_ready() -> None:
    h = handoff()
    for d in ("d1", "d2", "d3"):
        h.offer(d)
    h.finished("m1")
    assert h.next() == Trip(["d1", "d2", "d3"], ["m1"])
    h.landed(["j1", "j2", "j3"], [])
    assert [h.next() for _ in range(3)] == [Take("j1", solo=False), Take("j2", solo=False), Take("j3", False)]


def test_no_second_trip_while_one_is_on_the_wire() -> None:
    h = handoff(low=1)
    h.offer("d1")
    assert isinstance(h.next(), Trip)
    h.offer("d2")
    h.finished("m1")
    h.landed(["j1"], [])
    assert h.next() == Take("j1", solo=False)
    assert h.next() == Trip(["d2"], ["m1"])


def test_while_enough_jobs_are_ready_marks_wait_for_a_batch() -> None:
    h = handoff(low=2, batch=4)
    h.offer("d")
    h.next()
    h.landed(["j1", "j2", "j3", "j4", "j5"], [])
    h.next()
    h.finished("m1")
    assert h.next() == Take("j2", solo=False)  # 3 ready: the mark waits
    for mark in ("m2", "m3", "m4"):
        h.finished(mark)
    assert h.next() == Trip([], ["m1", "m2", "m3", "m4"])  # a batch's worth


def test_a_suspect_runs_once_the_ready_jobs_are_taken_and_nothing_fresh_is_claimed_until_it_is_over() -> None:
    h = handoff()
    h.offer("d1")
    h.next()
    h.landed(["j1"], ["s1"])
    h.offer("d2")
    assert h.next() == Take("j1", solo=False)
    assert h.next() == Take("s1", solo=True)
    h.finished("m1")
    assert h.next() == Trip([], ["m1"])  # marks still go out; the fresh delivery is not claimed
    h.landed([], [])
    h.solo_over()
    assert h.next() == Trip(["d2"], [])


def test_stop_sends_the_pending_marks_hands_out_nothing_more_and_leaves_the_rest_to_give_back() -> None:
    h = handoff()
    h.offer("d1")
    h.next()
    h.landed(["j1", "j2"], ["s1"])
    h.offer("d2")
    h.finished("m1")
    assert h.waiting() == ["j1", "j2"]  # claims to renew while they wait
    h.stop()
    assert h.next() == Trip([], ["m1"])
    h.landed([], [])
    assert h.next() is None
    left = h.take_all()
    assert (left.fresh, left.ready, left.suspects, left.marks) == (["d2"], ["j1", "j2"], ["s1"], [])
