from pathlib import Path

import pytest

from tqadmin.pipeline.cron.schedule import ScheduleError, load_schedules, parse_schedules

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "schedules.toml"


def one(**table: object) -> dict[str, object]:
    base: dict[str, object] = {"name": "s", "cron": "*/5 * * * *", "queue": "q", "task_type": "t"}
    return {"schedule": [{**base, **table}]}


def test_the_example_schedule_file_loads() -> None:
    schedules = load_schedules(EXAMPLE)
    assert [s.name for s in schedules] == ["nightly-report", "cleanup", "heartbeat"]
    assert schedules[0].timezone == "Europe/Paris" and schedules[0].misfire_grace == 900
    assert schedules[1].splay == 30
    assert schedules[2].has_seconds and not schedules[0].has_seconds


def test_defaults_are_utc_no_splay_and_a_minute_of_grace() -> None:
    (schedule,) = parse_schedules(one(), "f")
    assert (schedule.timezone, schedule.splay, schedule.misfire_grace, dict(schedule.job)) == (
        "UTC",
        0,
        60,
        {},
    )


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"cron": "* * * *"}, "has 4 fields"),
        ({"cron": "0 0 * * * 2026 1"}, "has 7 fields"),
        ({"cron": "61 * * * *"}, "not a valid cron expression"),
        ({"cron": "* 61 * * * *"}, "not a valid cron expression"),
        ({"timezone": "Mars/Olympus"}, "unknown timezone"),
        ({"splay": -1}, "splay must be a number"),
        ({"misfire_grace": "soon"}, "misfire_grace must be a number"),
        ({"job": {"id": "x"}}, "job may not set ['id']"),
        ({"job": {"fencing_token": 3}}, "job may not set ['fencing_token']"),
        ({"name": "a:b"}, "may not contain ':'"),
        ({"queue": ""}, "queue is required"),
        ({"qeue": "x"}, "unknown key(s) ['qeue']"),
        ({"task_type": "t" * 201}, "task_type is longer than 200 characters"),
        ({"name": "n" * 201}, "name is longer than 200 characters"),
    ],
)
def test_a_bad_schedule_is_one_clear_line_naming_it(table: dict[str, object], says: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse_schedules(one(**table), "cron.toml")
    message = str(info.value)
    assert says in message and message.startswith("cron.toml: schedule #1") and "\n" not in message


def test_a_name_used_twice_is_refused() -> None:
    doc = one()
    doc["schedule"] = [*doc["schedule"], *doc["schedule"]]  # type: ignore[misc]
    with pytest.raises(ScheduleError, match="used twice"):
        parse_schedules(doc, "f")


def test_a_file_without_schedules_or_not_toml_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[schedule]\n")
    with pytest.raises(ScheduleError, match="no \\[\\[schedule\\]\\] tables"):
        load_schedules(empty)
    with pytest.raises(ScheduleError, match="not valid TOML"):
        load_schedules(broken)
    with pytest.raises(ScheduleError, match="does not exist"):
        load_schedules(tmp_path / "missing.toml")
