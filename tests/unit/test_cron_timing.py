from collections import Counter
from datetime import UTC, datetime

from tqadmin.pipeline.cron.misfire import MAX_MISSED_COUNTED, plan
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.timing import next_tick, prev_tick, splay_offset


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def schedule(cron: str, **kw: object) -> Schedule:
    return Schedule(name=str(kw.pop("name", "s")), cron=cron, queue="q", task_type="t", **kw)  # type: ignore[arg-type]


def test_six_fields_put_seconds_first() -> None:
    s = schedule("30 */5 * * * *")
    assert next_tick(s, at("2027-01-01T00:00:00")) == at("2027-01-01T00:00:30")
    assert next_tick(s, at("2027-01-01T00:00:30")) == at("2027-01-01T00:05:30")


def test_five_fields_fire_on_the_minute_and_ticks_are_strictly_after() -> None:
    s = schedule("*/5 * * * *")
    assert next_tick(s, at("2027-01-01T00:05:00")) == at("2027-01-01T00:10:00")
    assert prev_tick(s, at("2027-01-01T00:05:00")) == at("2027-01-01T00:05:00")
    assert prev_tick(s, at("2027-01-01T00:09:59")) == at("2027-01-01T00:05:00")


def test_times_are_in_the_schedules_time_zone_across_daylight_saving() -> None:
    paris = schedule("0 2 * * *", timezone="Europe/Paris")
    assert next_tick(paris, at("2027-01-10T12:00:00")) == at("2027-01-11T01:00:00")  # CET = UTC+1
    assert next_tick(paris, at("2027-07-10T12:00:00")) == at("2027-07-11T00:00:00")  # CEST = UTC+2
    assert next_tick(schedule("0 2 * * *"), at("2027-01-10T12:00:00")) == at("2027-01-11T02:00:00")


def test_splay_is_stable_per_name_and_within_bounds() -> None:
    assert splay_offset("report", 30) == splay_offset("report", 30)
    assert splay_offset("report", 0) == 0
    offsets = [splay_offset(f"job-{i}", 30) for i in range(1000)]
    assert all(0 <= o < 30 for o in offsets)
    assert len(set(offsets)) > 900


def test_splay_spreads_200_schedules_of_the_same_second_over_the_window() -> None:
    per_second = Counter(int(splay_offset(f"report-{i}", 20)) for i in range(200))
    assert len(per_second) == 20  # every second of the window is used
    assert max(per_second.values()) <= 25  # none gets the crowd (10 each on average)


def test_due_ticks_fire_late_within_the_grace_and_older_ones_are_missed() -> None:
    s = schedule("* * * * * *", misfire_grace=5)
    now = at("2027-01-01T00:01:00")
    decision = plan(s, now - 9, now)
    assert decision.missed == 3  # -8, -7, -6: more than 5 s late
    assert (decision.missed_first, decision.missed_last) == (now - 8, now - 6)
    assert decision.due == tuple(int(now) + d for d in range(-5, 1))
    assert decision.next_fire_at == now + 1


def test_after_a_day_long_outage_only_the_grace_is_fired_never_a_burst() -> None:
    s = schedule("* * * * * *", misfire_grace=3)
    now = at("2027-01-02T00:00:00")
    decision = plan(s, now - 86_400, now)
    assert decision.missed_at_least and decision.missed >= MAX_MISSED_COUNTED
    assert decision.missed_last == now - 4
    assert decision.due == tuple(int(now) + d for d in range(-3, 1))


def test_splay_delays_when_a_tick_is_due_but_not_its_id() -> None:
    s = schedule("0 * * * *", name="hourly", splay=600)
    offset = splay_offset("hourly", 600)
    tick = at("2027-01-01T01:00:00")
    assert plan(s, tick - 1, tick + offset - 0.5).due == ()
    late = plan(s, tick - 1, tick + offset)
    assert late.due == (tick,)
    assert late.next_fire_at == tick + 3600 + offset
