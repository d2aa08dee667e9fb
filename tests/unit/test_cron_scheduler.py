"""The scheduler's leadership and firing rules, under a fake clock with an in-memory store."""

import logging
import random
import threading
from collections.abc import Callable

import pytest

from tests.support.cron_fakes import START, FakeClock, MemoryCronStore, Recorder
from tqadmin.errors import Unreachable
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.scheduler import Scheduler
from tqadmin.store.cron.base import TickRecord, TickState

TTL = 3.0
EVERY_SECOND = Schedule("beat", "* * * * * *", "q", "ping", {"zone": "eu"}, misfire_grace=10)


class World:
    """One store, one clock, several cron instances each with its own recorder."""

    def __init__(self, *schedules: Schedule, ttl: float = TTL, broker_on_store: bool = False) -> None:
        self.clock = FakeClock()
        self.store = MemoryCronStore(self.clock)
        self.schedules = schedules or (EVERY_SECOND,)
        self.ttl = ttl
        self.broker_on_store = broker_on_store  # one Redis is both the broker and the state store
        self.recorders: dict[str, Recorder] = {}
        self.instances: dict[str, Scheduler] = {}
        self.last_step = self.clock.time()

    def add(self, name: str) -> Scheduler:
        self.recorders[name] = Recorder(self.store if self.broker_on_store else None, self.clock)
        self.instances[name] = Scheduler(
            self.schedules,
            self.store,
            self.recorders[name],
            instance=name,
            lock_ttl_s=self.ttl,
            clock=self.clock,
            rng=random.Random(7),
            logger=logging.getLogger(f"test.cron.{name}"),
        )
        return self.instances[name]

    def run(self, seconds: float, *names: str) -> None:
        """Step the named instances (all by default) for ``seconds`` of fake time, 0.1 s apart."""
        active = [self.instances[n] for n in (names or self.instances)]
        end = self.clock.time() + seconds
        while self.clock.time() < end:
            for scheduler in active:
                scheduler.step()
            self.last_step = self.clock.time()
            self.clock.advance(0.1)

    def run_until(self, condition: Callable[[], bool], *names: str, limit_s: float = 60) -> None:
        """Step like :meth:`run` until ``condition`` holds (checked after every instance's step)."""
        active = [self.instances[n] for n in (names or self.instances)]
        end = self.clock.time() + limit_s
        while self.clock.time() < end:
            for scheduler in active:
                scheduler.step()
                if condition():
                    self.last_step = self.clock.time()
                    return
            self.last_step = self.clock.time()
            self.clock.advance(0.1)
        raise AssertionError("the condition never held")

    def store_outage(self, seconds: float) -> None:
        """Keep the store down (it already is) for ``seconds`` of stepping, then bring it back."""
        assert self.store.down
        self.run(seconds)
        self.store.down = False

    def every_tick_so_far(self) -> list[str]:
        """Every tick from the first second after the start up to the last step, once each."""
        return [f"cron:beat:{t}" for t in range(int(START) + 1, int(self.last_step) + 1)]

    def ids(self) -> list[str]:
        return [i for r in self.recorders.values() for i in r.ids]

    def leader(self) -> str | None:
        info = self.store.leader()
        return info.instance if info else None


def test_one_instance_fires_each_tick_once_with_the_job_fields() -> None:
    world = World()
    world.add("a")
    world.run(5.05)
    queue, job = world.recorders["a"].published[0]
    assert queue == "q"
    assert job.task_type == "ping" and job.retry_count == 0
    assert dict(job.fields) == {"zone": "eu", "scheduled": START + 1, "fencing_token": 1, "instance": "a"}
    assert world.ids() == world.every_tick_so_far()


def test_a_first_start_fires_no_history() -> None:
    world = World()
    world.clock.advance(0.5)
    world.add("a").step()
    assert world.ids() == []


def test_of_several_instances_only_the_leader_fires() -> None:
    world = World()
    for name in "abc":
        world.add(name)
    world.run(10)
    assert world.leader() == "a"
    assert world.recorders["b"].published == world.recorders["c"].published == []
    assert world.ids() == world.every_tick_so_far()


def test_a_dead_leaders_missed_ticks_are_fired_late_by_the_next_leader_exactly_once() -> None:
    world = World()
    world.add("a")
    world.add("b")
    world.run(3)
    world.run(6, "b")  # "a" is dead: never stepped again; its lease runs out, "b" takes over
    assert world.leader() == "b"
    assert world.store.fencing_token() == 2
    assert world.ids() == world.every_tick_so_far()
    assert world.recorders["b"].published[0][1].fields["fencing_token"] == 2


def test_a_leader_paused_past_its_lease_wakes_up_and_fires_nothing() -> None:
    world = World()
    paused = world.add("a")
    world.add("b")
    world.run(2)
    world.run(6, "b")  # SIGSTOP on "a"
    fired_by_a = list(world.recorders["a"].ids)
    paused.step()  # SIGCONT: its lease deadline has passed
    assert paused.lease is None
    assert world.recorders["a"].ids == fired_by_a
    world.run(3)
    assert world.recorders["a"].ids == fired_by_a
    assert world.ids() == world.every_tick_so_far()


def test_a_stale_token_cannot_claim_even_when_the_local_deadline_is_fooled() -> None:
    world = World()
    stale = world.add("a")
    world.add("b")
    world.run(2)
    world.run(6, "b")
    stale._valid_until = float("inf")  # pretend its own clock lied: the store's fencing check still refuses
    stale._next_renew = float("inf")
    stale._tracks["beat"].next_fire_at = 0
    before = list(world.recorders["a"].ids)
    stale.step()
    assert world.recorders["a"].ids == before
    assert stale.lease is None


def test_a_tick_claimed_by_a_leader_that_died_before_the_publish_is_republished() -> None:
    world = World()
    world.add("a")
    world.add("b")
    world.run(2.05)
    world.recorders["a"].failing = True  # the publish of the next tick never confirms...
    world.clock.advance(1)
    world.instances["a"].step()  # ...and then "a" dies with the tick claimed
    (pending,) = world.store.pending()
    assert pending.state is TickState.CLAIMED and pending.instance == "a"
    world.run(9, "b")  # the takeover, then one lock TTL in which "a" could have marked it published
    assert world.store.pending() == []
    assert pending.id in world.recorders["b"].ids
    assert world.ids() == world.every_tick_so_far()


def test_a_publish_failure_is_retried_by_the_same_leader_without_losing_the_tick() -> None:
    world = World()
    world.add("a")
    world.run(2.05)
    world.recorders["a"].failing = True
    world.run(2)
    world.recorders["a"].failing = False
    world.run(2)
    assert sorted(world.ids()) == world.every_tick_so_far()
    assert world.store.pending() == []


def test_ticks_older_than_the_grace_are_skipped_and_counted_as_missed() -> None:
    short = Schedule("beat", "* * * * * *", "q", "ping", misfire_grace=2)
    world = World(short)
    world.add("a")
    world.add("b")
    world.run(2.05)
    world.run(8, "b")  # takeover takes about ttl + ttl / 3 = 4 s, longer than the grace
    ids = world.ids()
    assert world.store.missed_counts()["beat"] >= 1
    fired = sorted(int(i.rsplit(":", 1)[1]) for i in ids)
    assert len(fired) == len(set(fired))
    gap = set(range(fired[0], fired[-1] + 1)) - set(fired)
    assert len(gap) == world.store.missed_counts()["beat"]


def test_a_graceful_stop_releases_the_lease_so_another_takes_over_at_once() -> None:
    world = World()
    a = world.add("a")
    world.add("b")
    world.run(1)
    stop = threading.Event()
    stop.set()
    a.run(stop)
    assert world.store.leader() is None
    world.run(1.5, "b")
    assert world.leader() == "b"


def test_every_takeover_gets_a_larger_token() -> None:
    world = World()
    for name in "abc":
        world.add(name)
    tokens = []
    for victim in "abc":
        world.run(6)
        assert world.leader() == victim
        tokens.append(world.store.fencing_token())
        world.instances.pop(victim)
    assert tokens == [1, 2, 3]


def test_an_unreachable_store_backs_off_with_jitter_and_steps_down_past_the_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    a = world.add("a")
    world.run(1)
    world.store.down = True
    waits = []
    for _ in range(5):
        waits.append(a.step())
        world.clock.advance(waits[-1])
    assert all(0 < w <= 10 for w in waits)
    world.clock.advance(TTL)
    a.step()
    assert a.lease is None
    assert "cannot reach state store" in caplog.text
    world.store.down = False
    world.run(5)
    assert world.leader() == "a"


def test_schedules_with_splay_fire_after_their_offset() -> None:
    spread = tuple(
        Schedule(f"report-{i}", "0 * * * * *", "q", "t", splay=20, misfire_grace=30) for i in range(200)
    )
    world = World(*spread)
    world.clock.advance(60 - (START % 60) - 1)  # a second before the minute
    world.add("a")
    fired_at: dict[str, float] = {}

    def publish(queue: str, job: object) -> None:
        fired_at[job.id] = world.clock.time()  # type: ignore[attr-defined]

    world.instances["a"]._publish = publish
    world.run(30)
    assert len(fired_at) == 200
    seconds = {int(t) for t in fired_at.values()}
    assert len(seconds) >= 18  # spread over the 20-second splay window, not all at the top of the minute


def test_a_broker_outage_longer_than_the_lease_keeps_the_leader_and_skips_only_what_is_past_the_grace() -> (
    None
):
    world = World()
    a = world.add("a")
    world.add("b")
    world.run(1.05)
    world.recorders["a"].failing = True
    world.run(30)  # the broker is down for 30 s, three times the grace
    assert world.leader() == "a" and world.store.fencing_token() == 1
    world.recorders["a"].failing = False
    world.run(3)
    fired = sorted(int(i.rsplit(":", 1)[1]) for i in world.ids())
    assert len(fired) == len(set(fired))
    skipped = set(range(fired[0], fired[-1] + 1)) - set(fired)
    assert len(skipped) == world.store.missed_counts()["beat"] > 0
    assert max(fired) == int(world.last_step) and a.lease is not None


def test_a_store_error_right_after_election_neither_loses_the_lease_nor_invents_missed_ticks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    a = world.add("a")
    real_cursors = world.store.cursors
    calls = []

    def flaky_cursors(names: object) -> dict[str, int]:
        calls.append(names)
        if len(calls) == 1:
            raise Unreachable("cannot reach state store memory://")
        return real_cursors(names)  # type: ignore[arg-type]

    monkeypatch.setattr(world.store, "cursors", flaky_cursors)
    world.run(4)
    assert a.lease is not None and world.store.fencing_token() == 1
    assert world.store.missed_counts() == {}
    assert world.ids() == world.every_tick_so_far()


def test_a_pending_tick_of_a_removed_schedule_is_dropped_once_its_record_expired() -> None:
    world = World()
    world.store.pending_ticks.add(("gone", 5))
    world.store.pending_ticks.add(("other", 6))
    world.store.ticks[("gone", 5)] = TickRecord("gone", 5, TickState.CLAIMED, 0, "")
    world.store.ticks[("other", 6)] = TickRecord("other", 6, TickState.CLAIMED, 3, "cron-new")
    world.add("a")
    world.run(1)
    assert world.store.pending_ticks == {("other", 6)}


def test_a_leader_whose_store_is_down_retries_its_renewal_with_backoff_not_in_a_busy_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each failed renewal used to be retried after 10 ms until the lease deadline (about 2,000 attempts
    and log lines with the default TTL), while the log claimed several seconds between them."""
    caplog.set_level(logging.WARNING)
    world = World()
    a = world.add("a")
    world.run(1)
    assert a.lease is not None
    world.store.down = True
    caplog.clear()
    steps, waits = 0, []
    while a.lease is not None:
        waits.append(a.step())
        world.clock.advance(waits[-1])
        steps += 1
        assert steps < 50, "a busy loop"
    assert steps <= 12
    said = [float(m.rsplit("retrying in ", 1)[1].rstrip("s")) for m in caplog.messages if "retrying in" in m]
    assert said == [round(w, 1) for w in waits[: len(said)]]


GRACEFUL = Schedule("beat", "* * * * * *", "q", "ping", misfire_grace=60)
OUTAGES = [  # (lock TTL, seconds the store is down): the leader keeps its lease, the run, it loses it
    pytest.param(5.0, 1.0, id="ttl5-down1s"),
    pytest.param(5.0, 3.0, id="ttl5-down3s"),
    pytest.param(5.0, 8.0, id="ttl5-down8s"),
    pytest.param(2.0, 3.0, id="ttl2-down3s"),
]


def five_instances(world: World) -> str:
    """Five instances, run until one leads and a few ticks fired; the leader's name."""
    for name in "abcde":
        world.add(name)
    world.run(2.05)
    leader = world.leader()
    assert leader is not None
    return leader


def assert_every_tick_published_exactly_once(world: World) -> None:
    ids = world.ids()
    assert sorted(ids) == world.every_tick_so_far(), "a tick was lost or published twice"
    assert world.store.pending() == []


@pytest.mark.parametrize(("ttl", "outage_s"), OUTAGES)
def test_a_tick_published_as_the_store_went_down_is_marked_by_its_publisher_and_not_published_again(
    ttl: float, outage_s: float
) -> None:
    """The issue's run: the leader published a tick, the store went down before it could record it, and
    the next leader fired the tick again. Now the publisher marks it published once the store is back,
    before any new leader's wait of one lock TTL is over."""
    world = World(GRACEFUL, ttl=ttl)
    leader = five_instances(world)
    publisher = world.recorders[leader]
    publisher.then = lambda: setattr(world.store, "down", True)
    world.run_until(lambda: world.store.down)
    _, job = publisher.published[-1]
    world.store_outage(outage_s)
    world.run(3 * ttl)
    assert_every_tick_published_exactly_once(world)
    record = world.store.tick("beat", job.fields["scheduled"])
    assert record is not None and record.state is TickState.FIRED
    assert record.token == job.fields["fencing_token"]


@pytest.mark.parametrize(("ttl", "outage_s"), OUTAGES)
def test_a_tick_claimed_as_the_store_went_down_is_published_once_it_is_back(
    ttl: float, outage_s: float
) -> None:
    """One Redis is the broker and the store: it goes down between a tick's claim and its publish."""
    world = World(GRACEFUL, ttl=ttl, broker_on_store=True)
    five_instances(world)
    world.store.down_after = "claim_tick"
    world.run_until(lambda: world.store.down)
    (claimed,) = world.store.pending_ticks
    world.store_outage(outage_s)
    world.run(3 * ttl)
    assert_every_tick_published_exactly_once(world)
    assert f"cron:beat:{claimed[1]}" in world.ids()


@pytest.mark.parametrize(("ttl", "outage_s"), OUTAGES)
def test_a_claim_whose_reply_was_lost_with_the_store_is_published_once_it_is_back(
    ttl: float, outage_s: float
) -> None:
    """The claim was recorded but the store went down before it answered: claimed again, the tick is a
    duplicate of the leader's own claim, which it publishes rather than moving on."""
    world = World(GRACEFUL, ttl=ttl)
    five_instances(world)
    world.store.lose_reply_of = "claim_tick"
    world.run_until(lambda: world.store.down)
    world.store_outage(outage_s)
    world.run(3 * ttl)
    assert_every_tick_published_exactly_once(world)


def test_a_claim_the_driver_sent_again_after_losing_its_reply_is_published() -> None:
    """redis-py sends a command again on reconnect: the second claim of the tick answers duplicate."""
    world = World(GRACEFUL)
    five_instances(world)
    world.store.retry_after_lost_reply = "claim_tick"
    world.run(3)
    assert world.store.retry_after_lost_reply is None
    assert_every_tick_published_exactly_once(world)


def test_a_new_leader_waits_one_lock_ttl_before_republishing_a_tick_an_earlier_token_left_claimed() -> None:
    world = World(GRACEFUL)
    world.add("a")
    world.add("b")
    world.run(2.05)
    world.recorders["a"].failing = True  # the publish of the next tick never confirms...
    world.clock.advance(1)
    world.instances["a"].step()  # ...and then "a" dies with the tick claimed
    (pending,) = world.store.pending()
    world.run_until(lambda: world.leader() == "b", "b")
    took_over = world.clock.time()
    world.run(2 * TTL, "b")
    b = world.recorders["b"]
    republished_at = b.published_at[b.ids.index(pending.id)]
    assert round(republished_at - took_over, 3) >= TTL  # the fake wall clock's float steps
    assert world.ids() == world.every_tick_so_far(), "the later ticks waited with it: still in order"
    assert world.store.pending() == []
