"""The demo's cron: its schedule file, its commands, and how the fired jobs are counted from the store."""

import time
from pathlib import Path

from tqadmin.demo.cron import (
    EVERY_S,
    SCHEDULE,
    CronCount,
    CronTally,
    cron_commands,
    namespace,
    write_schedule,
)
from tqadmin.demo.layout import plan
from tqadmin.pipeline.cron.schedule import load_schedules
from tqadmin.store.cron.base import CronStore, TickOutcome
from tqadmin.store.factory import open_cron_store


def store(tmp_path: Path) -> CronStore:
    return open_cron_store(f"sqlite:///{tmp_path / 'tqadmin.db'}", namespace(plan("demo", 4)))


def test_the_schedule_fires_reports_into_the_reports_queue_from_two_instances_of_the_demos_namespace(
    tmp_path: Path,
) -> None:
    layout = plan("demo", 4)
    (schedule,) = load_schedules(write_schedule(layout, tmp_path))
    assert (schedule.name, schedule.queue, schedule.task_type) == (
        SCHEDULE,
        "demo.reports",
        "generate_report",
    )
    commands = cron_commands(layout, tmp_path / "cron.toml")
    assert sorted(commands) == ["cron-1", "cron-2"]
    assert all(c[c.index("--namespace") + 1] == "demo-demo" for c in commands.values())
    assert load_schedules(write_schedule(plan("demo", 2), tmp_path))[0].queue == "demo.tasks"


def test_fired_ticks_are_counted_since_the_start_less_missed_and_pending_ones(tmp_path: Path) -> None:
    cron = store(tmp_path)
    tally = CronTally(cron)
    tally.begin(1001.5)
    assert cron.cursors([SCHEDULE]) == {SCHEDULE: 1000}
    lease = cron.acquire("a", 30)
    assert lease is not None
    for tick in (1002, 1004, 1006):
        cron.claim_tick(lease, SCHEDULE, tick, 60)
        cron.mark_fired(lease, SCHEDULE, tick, 60)
    cron.claim_tick(lease, SCHEDULE, 1008, 60)  # its leader died before the confirm: pending
    assert cron.mark_missed(lease, SCHEDULE, 1012, 2)  # 1010 and 1012 skipped
    cron.claim_tick(lease, SCHEDULE, 1014, 60)
    cron.mark_fired(lease, SCHEDULE, 1014, 60)
    assert tally.read() == CronCount(fired=4, pending=1)
    cron.close()


def test_a_cursor_left_by_an_earlier_run_long_ago_counts_only_what_this_run_fired(tmp_path: Path) -> None:
    cron = store(tmp_path)
    earlier = cron.acquire("a", 1)  # long enough to claim in, on a loaded machine
    assert earlier is not None
    assert cron.claim_tick(earlier, SCHEDULE, 900, 60) is TickOutcome.CLAIMED
    cron.mark_fired(earlier, SCHEDULE, 900, 60)
    time.sleep(1.2)  # that run's leader is gone
    tally = CronTally(cron)
    tally.begin(100_000.0)  # days later: more ticks in between than a leader counts one by one
    assert cron.cursors([SCHEDULE]) == {SCHEDULE: 100_000}
    assert tally.read() == CronCount()
    lease = cron.acquire("b", 30)
    assert lease is not None
    for tick in range(100_002, 100_010, EVERY_S):
        cron.claim_tick(lease, SCHEDULE, tick, 60)
        cron.mark_fired(lease, SCHEDULE, tick, 60)
    assert tally.read() == CronCount(fired=4)
    cron.close()
