"""The supervisor's watchdog: a child whose intake loop stopped turning is killed and restarted as a dead one,
each kill logged and counted for the next child's heartbeat; a child that has not turned yet, or turns on
time, is left alone."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from tqadmin.pipeline.pulse import Pulse
from tqadmin.pipeline.supervisor import restarts, supervise, watchdog_restarts
from tqadmin.pipeline.watchdog import Watchdog


def test_the_pulse_is_unarmed_until_the_first_turn_and_overdue_only_past_the_limit() -> None:
    pulse = Pulse()
    watchdog = Watchdog(pulse, 0.2)
    assert pulse.last() is None and watchdog.overdue() is None
    pulse.beat()
    assert watchdog.overdue() is None
    time.sleep(0.3)
    quiet = watchdog.overdue()
    assert quiet is not None and quiet > 0.2
    pulse.clear()
    assert watchdog.overdue() is None


def test_a_child_whose_intake_stops_turning_is_killed_restarted_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pulse = Pulse()
    seen = tmp_path / "children"
    deaths: list[int] = []

    def child() -> int:
        with seen.open("a") as out:
            out.write(f"{restarts()},{watchdog_restarts()}\n")
        if watchdog_restarts():
            return 0  # the second child: moves on
        pulse.beat()  # one turn, then stuck for good
        time.sleep(120)
        return 3

    with caplog.at_level(logging.WARNING, "tqadmin.worker"):
        started = time.monotonic()
        assert supervise(child, on_death=lambda: deaths.append(1), watchdog=Watchdog(pulse, 0.5)) == 0
    assert time.monotonic() - started < 60  # killed, not waited for
    assert seen.read_text().split() == ["0,0", "1,1"]  # the next child's heartbeat carries the count
    assert deaths == [1]  # the crash path: its claims given up as a dead child's are
    said = [r.getMessage() for r in caplog.records]
    assert any("intake loop has not turned for" in line and "--watchdog 0.5" in line for line in said), said
    assert any("killed by the watchdog" in line and "restart 1" in line for line in said), said


def test_a_child_that_never_turned_is_not_killed(tmp_path: Path) -> None:
    """Still waiting for its broker at start: the watchdog waits for a first turn."""

    def child() -> int:
        time.sleep(1.0)
        return 0

    assert supervise(child, watchdog=Watchdog(Pulse(), 0.2)) == 0
    assert watchdog_restarts() == 0
