"""A multiple ack only ever covers deliveries that are all settled: never one still running, given back, or
waiting for its retry's or dead letter's confirm; anything it cannot cover is acked on its own."""

from __future__ import annotations

from tqadmin_rabbitmq.ackruns import AckRuns


def runs_with(*tags: int) -> AckRuns:
    runs = AckRuns()
    for tag in tags:
        runs.delivered(tag)
    return runs


def test_acks_of_every_delivery_so_far_go_out_as_one_multiple_ack_of_the_highest() -> None:
    runs = runs_with(1, 2, 3, 4)
    assert runs.acked([3, 1, 4, 2]) == (4, [])
    assert len(runs) == 0


def test_a_delivery_still_running_ends_the_run_and_the_acks_above_it_go_one_by_one() -> None:
    runs = runs_with(1, 2, 3, 4, 5, 6)
    assert runs.acked([1, 2, 4, 6]) == (2, [4, 6])
    assert len(runs) == 2  # 3 and 5 still running


def test_once_the_running_delivery_is_acked_the_next_run_starts_above_what_went_out() -> None:
    runs = runs_with(1, 2, 3, 4, 5)
    assert runs.acked([1, 2, 4]) == (2, [4])
    assert runs.acked([3, 5]) == (5, [])  # 4 is acked already: the multiple ack reaches past it


def test_a_single_ack_is_a_plain_ack_even_when_a_multiple_one_would_be_safe() -> None:
    runs = runs_with(1, 2)
    assert runs.acked([1]) == (None, [1])
    assert runs.acked([2]) == (None, [2])


def test_a_delivery_waiting_for_its_copys_confirm_holds_the_run_back_until_it_is_acked_on_its_own() -> None:
    runs = runs_with(1, 2, 3, 4)
    assert runs.acked([1, 3, 4]) == (None, [1, 3, 4])  # 2 is being retried: 1 alone is below it
    runs.settled(2)  # its copy was confirmed and it was acked by itself
    runs.delivered(5)
    runs.delivered(6)
    assert runs.acked([5, 6]) == (6, [])


def test_a_delivery_given_back_is_settled_and_a_later_multiple_ack_may_reach_past_it() -> None:
    runs = runs_with(1, 2, 3)
    runs.settled(2)  # nacked with requeue: the broker redelivers it under a new tag
    assert runs.acked([1, 3]) == (3, [])


def test_a_tag_this_channel_never_delivered_or_already_settled_is_acked_on_its_own() -> None:
    runs = runs_with(1, 2, 3)
    runs.settled(1)
    assert runs.acked([1, 2, 3, 9]) == (3, [1, 9])


def test_with_nothing_to_ack_nothing_goes_out() -> None:
    assert runs_with(1).acked([]) == (None, [])
