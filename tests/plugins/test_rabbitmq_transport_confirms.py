"""Confirm bookkeeping: a window of tags settled by single and multiple acks, nacks, returns and loss."""

from __future__ import annotations

from dataclasses import dataclass

from tqadmin_rabbitmq.confirms import ConfirmTracker, Settlement


@dataclass
class Ack:
    delivery_tag: int
    multiple: bool = False


@dataclass
class Nack:
    delivery_tag: int
    multiple: bool = False


def tracked(ids: list[str]) -> tuple[ConfirmTracker, dict[str, list[Settlement]]]:
    tracker = ConfirmTracker()
    seen: dict[str, list[Settlement]] = {}
    for message_id in ids:
        tracker.published(message_id, lambda s, m=message_id: seen.setdefault(m, []).append(s))
    return tracker, seen


def test_a_multiple_ack_settles_every_tag_up_to_it_and_no_further() -> None:
    tracker, seen = tracked(["a", "b", "c"])
    tracker.on_confirm(Ack(2, multiple=True))
    assert seen == {"a": [Settlement.CONFIRMED], "b": [Settlement.CONFIRMED]}
    assert len(tracker) == 1


def test_a_nack_settles_only_its_own_tag() -> None:
    tracker, seen = tracked(["a", "b"])
    tracker.on_confirm(Nack(2))
    assert seen == {"b": [Settlement.NACKED]}


def test_a_returned_message_is_reported_returned_even_though_the_broker_acks_it() -> None:
    tracker, seen = tracked(["a", "dup", "dup"])
    tracker.on_return("dup")
    tracker.on_confirm(Ack(3, multiple=True))
    assert seen == {"a": [Settlement.CONFIRMED], "dup": [Settlement.RETURNED, Settlement.CONFIRMED]}


def test_a_closed_channel_leaves_every_unsettled_message_lost_exactly_once() -> None:
    tracker, seen = tracked(["a", "b"])
    tracker.on_confirm(Ack(1))
    tracker.fail_all()
    tracker.fail_all()
    assert seen == {"a": [Settlement.CONFIRMED], "b": [Settlement.LOST]}
