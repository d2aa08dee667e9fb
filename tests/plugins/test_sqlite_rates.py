"""The per-second counters behind the SQLite broker's rates (``tqb_rates``) stay bounded whoever writes:
a file that is only published to (no consumer ever runs) keeps a few minutes of rows per queue, not a row
per queue for every second of its life."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlite_kit import Kit, SteppedClock
from tqadmin_sqlite.database import KEEP_RATES_S, PRUNE_S

HOURS = 1
STEP_S = 2  # broker seconds between two publishes


def rate_rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM tqb_rates").fetchone()[0])


def test_a_publish_only_file_keeps_a_bounded_number_of_rate_rows(tmp_path: Path) -> None:
    clock = SteppedClock()
    kit = Kit(tmp_path / "broker.db", clock=clock)
    kit.transport.declare("q")
    # one queue's rows: those of the kept window and of one interval between two prunings
    bound = (KEEP_RATES_S + PRUNE_S) // STEP_S + 1
    most = 0
    for _ in range(HOURS * 3600 // STEP_S):  # no consumer, ever
        kit.publish("q", b"{}")
        clock.step(STEP_S)
        most = max(most, rate_rows(kit.path))
    assert most <= bound
    assert kit.stats("q").publish_rate > 0  # the counters of the last seconds are still there
    kit.close()
