"""The SQLite broker's transport face on a real file: consume, settle, retry, dead-letter, leases, clocks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlite_kit import Kit, SteppedClock, wait_for

from tqadmin.errors import Unroutable, UsageError
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import HEADER_REASON, HEADER_RETRY_COUNT, Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.transport import Consumer


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    k = Kit(tmp_path / "broker.db")
    yield k
    k.close()


def test_the_sqlite_scheme_finds_the_plugin_and_its_dead_letter_queues_are_named_q_dlq() -> None:
    plugin = plugin_for_url("sqlite:///x.db")
    assert plugin.name == "sqlite" and plugin.dlq_name("orders") == "orders.dlq"


def test_published_messages_are_delivered_in_order_and_an_ack_removes_them(kit: Kit) -> None:
    kit.publish("q", b"one", b"two", b"\x00\xff binary")
    with kit.consuming("q") as (consumer, got):
        wait_for(lambda: len(got) == 3, what="three deliveries")
        assert [d.message.body for d in got] == [b"one", b"two", b"\x00\xff binary"]
        assert [d.message.delivery_count for d in got] == [1, 1, 1]
        assert not any(d.message.redelivered for d in got)
        assert all(consumer.ack(d) for d in got)
        wait_for(lambda: kit.stats("q").messages == 0, what="the acks")
    assert not consumer.ack(got[0]), "a delivery is settled once"


def test_a_publish_to_an_undeclared_queue_fails_and_publish_options_are_refused(kit: Kit) -> None:
    result = kit.transport.publish([("nowhere", Message(b"x"))])
    assert not result.all_confirmed and isinstance(result.error, Unroutable)
    with pytest.raises(UsageError, match="no publish option exchange"):
        kit.transport.publish([("q", Message(b"x"))], options={"exchange": "e"})


def test_a_retry_comes_back_after_its_delay_to_the_millisecond_with_the_body_untouched(kit: Kit) -> None:
    body = b'{"task_type": "t", "id": "r1", "retry_count": 0}'
    kit.publish("q", body)
    with kit.consuming("q") as (consumer, got):
        wait_for(lambda: len(got) == 1)
        asked = time.time()
        assert consumer.retry_later(got[0], 0.3, {HEADER_RETRY_COUNT: 1})
        answered = time.time()
        (waiting,) = kit.admin.peek("q", 5).messages
        assert waiting.enqueued_at is not None
        # due 300 ms after the call, to the millisecond; the bounds are the call's, however long it took
        due = waiting.enqueued_at
        assert asked + 0.3 - 0.001 <= due <= answered + 0.3 + 0.001, (
            "due 300 ms after the retry was asked for"
        )
        assert kit.stats("q").delayed == 1
        wait_for(lambda: len(got) == 2, what="the retry")
        assert time.time() >= waiting.enqueued_at
        again = got[1].message
        assert again.body == body and again.headers[HEADER_RETRY_COUNT] == 1
        assert consumer.ack(got[1])


def test_a_dead_letter_keeps_the_body_byte_for_byte_and_the_original_headers(kit: Kit) -> None:
    body = b"\xff\xfe not json"
    kit.publish("q", body, headers={"trace": "abc"})
    with kit.consuming("q") as (consumer, got):
        wait_for(lambda: len(got) == 1)
        assert consumer.dead_letter(got[0], {HEADER_REASON: "malformed"})
    (dead,) = kit.admin.peek("q.dlq", 5).messages
    assert dead.body == body and dead.headers == {"trace": "abc", HEADER_REASON: "malformed"}
    assert kit.stats("q").dlq_messages == 1 and kit.stats("q").messages == 0


def test_a_released_delivery_goes_back_to_its_place_at_the_head(kit: Kit) -> None:
    kit.publish("q", b"a", b"b", b"c")
    with kit.consuming("q", prefetch=1) as (consumer, got):
        wait_for(lambda: len(got) == 1)
        consumer.release([got[0]])
        wait_for(lambda: len(got) == 2, what="the redelivery")
        assert got[1].message.body == b"a" and got[1].message.redelivered
        assert got[1].message.delivery_count == 2


@contextmanager
def zombie_and_heir(kit: Kit, tmp_path: Path) -> Iterator[tuple[Consumer, Delivery, Consumer, Delivery]]:
    """One job taken by a consumer that then stalls past its lease (its window full, it takes no more), and
    taken again by another consumer of the file: ``(zombie, its delivery, heir, the heir's delivery)``."""
    kit.publish("q", b"job")
    other = Kit(tmp_path / "broker.db")
    with kit.consuming("q", prefetch=1, lease_s=0.3) as (zombie, first):
        wait_for(lambda: len(first) == 1)
        time.sleep(0.4)
        with other.consuming("q") as (heir, second):
            wait_for(lambda: len(second) == 1, what="the lease to pass to the other consumer")
            yield zombie, first[0], heir, second[0]
    other.close()


def test_a_zombies_ack_after_its_lease_expired_is_refused_and_the_new_holders_works(
    kit: Kit, tmp_path: Path
) -> None:
    with zombie_and_heir(kit, tmp_path) as (zombie, stale, heir, fresh):
        assert not zombie.alive(stale)
        assert not zombie.ack(stale), "the zombie's ack is refused"
        assert not zombie.dead_letter(stale, {HEADER_REASON: "fatal"})
        assert zombie.extend([stale], 30) == [stale], "it is no longer the zombie's to extend"
        assert kit.stats("q").messages == 1, "the zombie removed nothing"
        assert heir.ack(fresh)
        wait_for(lambda: kit.stats("q").messages == 0)


def test_the_database_fences_a_settlement_whose_lease_passed_even_if_the_holder_thinks_it_alive(
    kit: Kit, tmp_path: Path
) -> None:
    """The consumer's own check is a shortcut: the statement itself names the delivery by its token."""
    with zombie_and_heir(kit, tmp_path) as (zombie, stale, _, _):
        stale.token.until = time.monotonic() + 60  # type: ignore[attr-defined]  # a confused clock
        assert zombie.retry_later(stale, 0, {}) is False
        assert kit.bodies("q") == [b"job"]


def test_extend_keeps_running_and_prefetched_deliveries_past_their_first_lease(
    kit: Kit, tmp_path: Path
) -> None:
    kit.publish("q", b"a", b"b")
    other = Kit(tmp_path / "broker.db")
    with kit.consuming("q", lease_s=3) as (consumer, got):  # 2.5 s to spare between renewals under load
        wait_for(lambda: len(got) == 2)
        with other.consuming("q") as (_, stolen):
            for _ in range(8):  # past the first lease
                time.sleep(0.5)
                assert consumer.extend(got, 3) == []
            assert stolen == []
            assert all(consumer.alive(d) for d in got)
    other.close()


def test_a_clock_stepping_back_keeps_order_and_never_lets_two_leases_overlap(tmp_path: Path) -> None:
    clock = SteppedClock()
    kit = Kit(tmp_path / "broker.db", clock=clock)
    other = Kit(tmp_path / "broker.db", clock=clock)
    kit.publish("q", b"old-1", b"old-2")
    clock.step(-3600)  # NTP puts the clock back an hour
    kit.publish("q", b"new")
    assert kit.stats("q").ready == 3, "what was due stays due"
    assert kit.bodies("q") == [b"old-1", b"old-2", b"new"], "a later message still lands at the tail"
    # the holder acks after the others took theirs: a lease no loaded machine's turn outlasts
    with kit.consuming("q", prefetch=1, lease_s=10) as (holder, got):
        wait_for(lambda: len(got) == 1)
        clock.step(-60)
        with other.consuming("q", prefetch=5) as (_, rest):
            wait_for(lambda: len(rest) == 2)
            time.sleep(0.2)
            assert [d.message.body for d in rest] == [b"old-2", b"new"], "the held lease is not taken over"
            assert holder.ack(got[0])
    kit.close()
    other.close()


def test_a_clock_stepping_forward_ends_the_holders_lease_where_the_others_see_it_end(tmp_path: Path) -> None:
    """The broker's clock is what another consumer compares with, so a holder whose wall clock jumped past its
    lease's end no longer calls its delivery alive, though its monotonic clock says the lease runs on."""
    clock = SteppedClock()
    kit = Kit(tmp_path / "broker.db", clock=clock)
    kit.publish("q", b"job")
    with kit.consuming("q", lease_s=30) as (holder, got):
        wait_for(lambda: len(got) == 1)
        assert holder.alive(got[0])
        clock.step(60)  # NTP puts the clock forward a minute: the row is due again for every consumer
        assert not holder.alive(got[0])
        assert holder.extend(got, 30) == got
    kit.close()


def test_consumers_of_one_file_in_one_process_share_the_work_without_duplicates(
    kit: Kit, tmp_path: Path
) -> None:
    bodies = [f"m{i}".encode() for i in range(300)]
    kit.publish("q", *bodies)
    other = Kit(tmp_path / "broker.db")
    with kit.consuming("q", prefetch=7) as (a, got_a), other.consuming("q", prefetch=5) as (b, got_b):

        def settle() -> bool:
            for consumer, got in ((a, got_a), (b, got_b)):
                for delivery in list(got):
                    consumer.ack(delivery)
            return len(got_a) + len(got_b) == 300

        wait_for(settle, what="every message")
        wait_for(lambda: kit.stats("q").messages == 0)
    seen = [d.message.body for d in got_a + got_b]
    assert sorted(seen) == sorted(bodies) and got_a and got_b
    other.close()
