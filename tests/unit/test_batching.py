"""Group commit: concurrent calls share batches, each caller gets its own answer, errors reach everyone."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from tqadmin.pipeline.batching import Coalescer


def test_calls_made_while_a_batch_is_in_flight_go_out_together_and_each_gets_its_answer() -> None:
    first_batch_sent = threading.Event()
    release_first = threading.Event()
    batches: list[list[int]] = []

    def send(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        if len(batches) == 1:
            first_batch_sent.set()
            release_first.wait(5)
        return [i * 10 for i in items]

    coalescer = Coalescer(send)
    answers: dict[int, int] = {}

    def call(i: int) -> None:
        answers[i] = coalescer.call(i)

    leader = threading.Thread(target=call, args=(0,))
    leader.start()
    first_batch_sent.wait(5)
    followers = [threading.Thread(target=call, args=(i,)) for i in range(1, 6)]
    for t in followers:
        t.start()
    while len(coalescer._waiting) < 5:  # all five queued behind the batch on the wire
        threading.Event().wait(0.01)
    release_first.set()
    for t in [leader, *followers]:
        t.join(5)
    assert answers == {i: i * 10 for i in range(6)}
    assert batches[0] == [0]
    assert sorted(batches[1]) == [1, 2, 3, 4, 5]


def test_a_failed_batch_raises_in_every_caller_and_the_next_call_works() -> None:
    fail = [True]

    def send(items: Sequence[str]) -> list[str]:
        if fail[0]:
            raise ConnectionError("store down")
        return list(items)

    coalescer = Coalescer(send)
    with pytest.raises(ConnectionError):
        coalescer.call("a")
    fail[0] = False
    assert coalescer.call("b") == "b"
