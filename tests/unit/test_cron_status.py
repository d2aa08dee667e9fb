"""What ``tqadmin schedules`` and the cron screen show, from a frozen clock and an in-memory store."""

import logging

from tests.support.cron_fakes import START, FakeClock, MemoryCronStore, Recorder
from tqadmin.commands.schedules import render
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.scheduler import Scheduler
from tqadmin.pipeline.cron.status import iso, read_status, schedule_rows
from tqadmin.pipeline.cron.timing import splay_offset
from tqadmin.store.cron.base import FiredTick, LeaderInfo

HOURLY = Schedule("hourly", "0 * * * *", "q", "t", splay=120)
BEAT = Schedule("beat", "*/10 * * * * *", "q", "ping")


def test_rows_show_next_and_last_fire_lateness_and_the_leader() -> None:
    offset = splay_offset("hourly", 120)
    fired = {"hourly": FiredTick("hourly", int(START), START + offset + 0.25, 4, "cron-b")}
    now = START + offset + 5
    leader = LeaderInfo("cron-b", 4, now - 35, now - 1, 14.0, now)
    (row,) = schedule_rows([(HOURLY, "file")], leader, fired, {"hourly": 2}, now)
    assert row.next_fire == START + 3600 and row.last_fire == START
    assert row.lateness_s == 0.25
    assert (row.leader, row.fencing_token, row.lease_age_s, row.missed) == ("cron-b", 4, 35.0, 2)
    document = row.to_json()
    assert document["next_fire"] == "2027-01-15T09:00:00Z"
    assert document["last_fire"] == "2027-01-15T08:00:00Z"
    assert document["last_fencing_token"] == 4 and document["source"] == "file"


def test_a_tick_inside_its_splay_window_is_still_the_next_fire() -> None:
    offset = splay_offset("hourly", 120)
    (row,) = schedule_rows([(HOURLY, "file")], None, {}, {}, START + offset / 2)
    assert row.next_fire == START
    assert row.leader is None and row.last_fire is None and row.lateness_s is None


def test_iso_is_utc_with_a_z() -> None:
    assert iso(START) == "2027-01-15T08:00:00Z"
    assert iso(START + 0.5) == "2027-01-15T08:00:00.500Z"
    assert iso(None) is None


def test_status_works_without_the_file_from_what_instances_registered() -> None:
    clock = FakeClock()
    store = MemoryCronStore(clock)
    scheduler = Scheduler(
        [BEAT], store, Recorder(), instance="cron-a", clock=clock, logger=logging.getLogger("test")
    )
    for _ in range(120):
        scheduler.step()
        clock.advance(0.1)
    status = read_status(store)
    (row,) = status.rows
    assert (row.name, row.source, row.leader, row.fencing_token) == ("beat", "store", "cron-a", 1)
    assert row.last_fire == START + 10 and row.next_fire == START + 20
    assert [(i.instance, i.leader, i.schedules) for i in status.instances] == [("cron-a", True, 1)]
    document = status.to_json()
    assert document["leader"]["instance"] == "cron-a" and document["fencing_token"] == 1
    assert [s["name"] for s in document["schedules"]] == ["beat"]


def test_the_file_wins_over_a_registered_schedule_of_the_same_name() -> None:
    store = MemoryCronStore(FakeClock())
    store.register("old", [Schedule("beat", "0 * * * *", "q", "t").to_json()])
    status = read_status(store, [BEAT])
    assert [(r.cron, r.source) for r in status.rows] == [("*/10 * * * * *", "file")]


def test_a_tick_left_claimed_by_an_earlier_leader_is_named_with_its_claimer_and_what_happens_next() -> None:
    clock = FakeClock()
    store = MemoryCronStore(clock)
    recorder = Recorder()
    old = Scheduler(
        [BEAT], store, recorder, instance="cron-a", lock_ttl_s=3, clock=clock, logger=logging.getLogger("t")
    )
    for _ in range(15):
        old.step()
        clock.advance(0.1)
    recorder.then = lambda: setattr(store, "down", True)  # published; the store goes down before the mark
    while not store.down:
        old.step()
        clock.advance(0.1)
    store.down = False
    clock.advance(5)  # "cron-a" is gone (never steps again) and its lease has run out
    new = Scheduler(
        [BEAT], store, Recorder(), instance="cron-b", lock_ttl_s=3, clock=clock, logger=logging.getLogger("t")
    )
    new.step()
    status = read_status(store, [BEAT])
    (_, job) = recorder.published[-1]
    assert status.pending == 1 and status.leader is not None and status.leader.instance == "cron-b"
    assert status.to_json()["pending_claims"] == [
        {
            "id": job.id,
            "schedule": "beat",
            "scheduled": iso(job.fields["scheduled"]),
            "claimed_by": "cron-a",
            "fencing_token": 1,
        }
    ]
    assert (
        f"pending: 1 tick(s) claimed but not yet confirmed: {job.id} by cron-a (token 1, not the leader:"
        " published again one lock TTL after the takeover unless cron-a marks it published)"
    ) in render(status).splitlines()
