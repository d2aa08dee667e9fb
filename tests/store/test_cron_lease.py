"""The cron store's contract on every state store (Redis and the SQLite file): lease, fencing, tick
records, registry."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cron_redis import RestartableCronStore, redis_cron_store
from tqadmin.store.cron.base import CronStore, Lease, TickOutcome, TickState
from tqadmin.store.factory import open_cron_store


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
def store(request: pytest.FixtureRequest, unique: str, tmp_path: Path) -> Iterator[CronStore]:
    if request.param == "redis":
        with redis_cron_store(f"t-{unique}") as redis_store:
            yield redis_store
        return
    sqlite_store = open_cron_store(f"sqlite:///{tmp_path / 'tqadmin.db'}", f"t-{unique}")
    yield sqlite_store
    sqlite_store.close()


def test_one_instance_holds_the_lease_and_each_acquisition_gets_a_larger_token(store: CronStore) -> None:
    first = store.acquire("a", 10)
    assert first is not None and first.token == 1
    assert store.acquire("b", 10) is None
    store.release(first)
    second = store.acquire("b", 10)
    assert second is not None and second.token == 2
    assert store.fencing_token() == 2
    leader = store.leader()
    assert leader is not None
    assert (leader.instance, leader.token) == ("b", 2)
    assert 0 <= leader.lease_age_s <= 10 and 0 < leader.expires_in_s <= 10  # still within its 10 s lease


def test_a_lease_not_renewed_expires_and_the_next_holder_gets_a_new_token(store: CronStore) -> None:
    old = store.acquire("a", 0.2)
    assert old is not None
    time.sleep(0.3)
    assert store.leader() is None
    new = store.acquire("b", 10)
    assert new is not None and new.token == old.token + 1
    assert not store.renew(old), "renewal is a compare-and-set: the old holder cannot extend the new lease"
    store.release(old)
    assert store.leader() is not None, "nor release it"


def test_renewal_extends_the_holders_lease(store: CronStore) -> None:
    lease = store.acquire("a", 3)  # each renewal comes a second on: 2 s to spare for a loaded machine's turn
    assert lease is not None
    for _ in range(4):  # past the first lease
        time.sleep(1)
        assert store.renew(lease)
    leader = store.leader()
    assert leader is not None and leader.token == lease.token
    assert leader.renewed_at >= leader.acquired_at


def test_a_tick_is_claimed_once_and_only_with_the_current_token(store: CronStore) -> None:
    lease = store.acquire("a", 10)
    assert lease is not None
    assert store.claim_tick(lease, "s", 100, 60) is TickOutcome.CLAIMED
    assert store.claim_tick(lease, "s", 100, 60) is TickOutcome.DUPLICATE
    forged = Lease("a", lease.token - 1, 10)
    assert store.claim_tick(forged, "s", 101, 60) is TickOutcome.STALE
    store.release(lease)
    assert store.claim_tick(lease, "s", 101, 60) is TickOutcome.STALE, "a lease that is gone claims nothing"
    assert store.tick("s", 101) is None


def test_a_claimed_tick_is_pending_until_fired_and_a_new_leader_can_take_it_over(
    store: CronStore,
) -> None:
    old = store.acquire("a", 10)
    assert old is not None
    assert store.claim_tick(old, "s", 100, 60) is TickOutcome.CLAIMED
    (pending,) = store.pending()
    assert (pending.id, pending.state, pending.token, pending.instance) == (
        "cron:s:100",
        TickState.CLAIMED,
        old.token,
        "a",
    )
    store.release(old)  # "a" dies between claim and confirmed publish
    new = store.acquire("b", 10)
    assert new is not None
    assert store.reclaim_tick(old, "s", 100, 60) is TickOutcome.STALE
    assert store.reclaim_tick(new, "s", 100, 60) is TickOutcome.CLAIMED
    store.mark_fired(new, "s", 100, 60)
    assert store.pending() == []
    record = store.tick("s", 100)
    assert record is not None and (record.state, record.token, record.instance) == (
        TickState.FIRED,
        new.token,
        "b",
    )
    assert store.reclaim_tick(new, "s", 100, 60) is TickOutcome.DUPLICATE
    assert store.claim_tick(new, "s", 100, 60) is TickOutcome.DUPLICATE


def test_a_stale_leaders_late_confirm_does_not_overwrite_the_new_leaders_record(
    store: CronStore,
) -> None:
    old = store.acquire("a", 10)
    assert old is not None
    store.claim_tick(old, "s", 100, 60)
    store.release(old)  # "a" is paused inside its publish; "b" takes the tick over
    new = store.acquire("b", 10)
    assert new is not None
    assert store.reclaim_tick(new, "s", 100, 60) is TickOutcome.CLAIMED
    store.mark_fired(old, "s", 100, 60)  # "a" wakes: its publish was confirmed after all
    assert store.pending() == [], "it was published, so nobody needs to publish it again"
    record = store.tick("s", 100)
    assert record is not None and (record.state, record.token) == (TickState.CLAIMED, new.token)
    store.mark_fired(new, "s", 100, 60)
    record = store.tick("s", 100)
    assert record is not None and (record.state, record.token, record.instance) == (
        TickState.FIRED,
        new.token,
        "b",
    )


def test_firing_records_the_last_fire_on_the_store_clock_and_the_cursor_only_moves_forward(
    store: CronStore,
) -> None:
    lease = store.acquire("a", 10)
    assert lease is not None
    before = store.now()
    for tick in (200, 100):
        store.claim_tick(lease, "s", tick, 60)
        store.mark_fired(lease, "s", tick, 60)
    last = store.last_fired()["s"]
    assert (last.scheduled, last.token, last.instance) == (200, lease.token, "a")
    assert before <= last.fired_at <= store.now()
    assert store.cursors(["s", "other"]) == {"s": 200}


def test_missed_ticks_are_counted_only_by_the_current_leader(store: CronStore) -> None:
    lease = store.acquire("a", 10)
    assert lease is not None
    assert store.mark_missed(lease, "s", 50, 3)
    assert not store.mark_missed(Lease("a", lease.token + 1, 10), "s", 60, 3)
    assert store.missed_counts() == {"s": 3}
    assert store.cursors(["s"]) == {"s": 50}


def test_arming_sets_a_cursor_only_once(store: CronStore) -> None:
    assert store.arm("s", 10) == 10
    assert store.arm("s", 20) == 10


def test_instances_register_their_schedules_and_old_ones_are_forgotten(store: CronStore) -> None:
    store.register("a", [{"name": "s", "cron": "* * * * *"}])
    store.register("b", [])
    store.heartbeat("a")
    registrations = store.registrations()
    assert [r.instance for r in registrations] == ["a", "b"]
    assert registrations[0].schedules == ({"name": "s", "cron": "* * * * *"},)
    assert store.forget_instances(registrations[1].last_seen + 1e-6) == 1
    assert [r.instance for r in store.registrations()] == ["a"]


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
def restartable(
    request: pytest.FixtureRequest, unique: str, tmp_path: Path
) -> Iterator[RestartableCronStore]:
    server = RestartableCronStore(request.param, tmp_path, f"t-{unique}")
    yield server
    server.close()


def test_the_lease_the_token_and_a_claimed_tick_outlive_a_restart_of_the_store(
    restartable: RestartableCronStore,
) -> None:
    lease = restartable.store.acquire("a", 30)
    assert lease is not None
    assert restartable.store.claim_tick(lease, "s", 100, 60) is TickOutcome.CLAIMED
    restartable.restart()
    store = restartable.store
    (pending,) = store.pending()
    assert (pending.id, pending.state, pending.token, pending.instance) == (
        "cron:s:100",
        TickState.CLAIMED,
        lease.token,
        "a",
    )
    assert store.fencing_token() == lease.token
    assert store.acquire("b", 30) is None
    assert store.renew(lease), "the leader goes on leading once the store is back"


def test_a_tick_published_as_the_store_went_down_is_marked_by_its_publisher_after_a_takeover(
    restartable: RestartableCronStore,
) -> None:
    """The publisher's mark comes after the restart, with a token that is no longer current: it still
    records the tick as published, so the new leader finds nothing to publish again."""
    old = restartable.store.acquire("a", 2)  # long enough to claim in, on a loaded machine
    assert old is not None
    assert restartable.store.claim_tick(old, "s", 100, 60) is TickOutcome.CLAIMED
    restartable.restart()  # "a" has published the tick; the store went down before it was marked
    store = restartable.store
    time.sleep(2.5)  # past a's lease
    new = store.acquire("b", 10)
    assert new is not None and new.token == old.token + 1
    store.mark_fired(old, "s", 100, 60)
    assert store.pending() == []
    assert store.reclaim_tick(new, "s", 100, 60) is TickOutcome.DUPLICATE
    assert store.claim_tick(new, "s", 100, 60) is TickOutcome.DUPLICATE
    record = store.tick("s", 100)
    assert record is not None and (record.state, record.token, record.instance) == (
        TickState.FIRED,
        old.token,
        "a",
    )
    last = store.last_fired()["s"]
    assert (last.scheduled, last.token, last.instance) == (100, old.token, "a")


def test_a_tick_claimed_as_the_store_went_down_and_never_published_is_taken_over_after_the_restart(
    restartable: RestartableCronStore,
) -> None:
    old = restartable.store.acquire("a", 2)  # long enough to claim in, on a loaded machine
    assert old is not None
    assert restartable.store.claim_tick(old, "s", 100, 60) is TickOutcome.CLAIMED
    restartable.restart()  # the store went down before "a" could publish; "a" stepped down
    store = restartable.store
    time.sleep(2.5)  # past a's lease
    new = store.acquire("b", 10)
    assert new is not None
    assert store.reclaim_tick(old, "s", 100, 60) is TickOutcome.STALE
    assert store.reclaim_tick(new, "s", 100, 60) is TickOutcome.CLAIMED
    store.mark_fired(new, "s", 100, 60)
    assert store.pending() == []
    record = store.tick("s", 100)
    assert record is not None and (record.state, record.token) == (TickState.FIRED, new.token)
