"""Dead letters counted by reason in the telemetry, read side by side with snapshots of older workers that
counted them without one."""

from __future__ import annotations

from tqadmin.telemetry.counters import UNKNOWN_REASON, TaskStats, Telemetry
from tqadmin.telemetry.snapshot import WorkerSnapshot


def _recorded(*reasons: str) -> TaskStats:
    telemetry = Telemetry()
    for reason in reasons:
        telemetry.dead_lettered("q", "t", reason)
    return telemetry.read()[("q", "t")]


def test_each_dead_letter_is_counted_under_its_reason_and_in_the_total() -> None:
    stats = _recorded("malformed", "fatal", "malformed")
    assert stats.dead_lettered == 3
    assert stats.by_reason() == {"malformed": 2, "fatal": 1}


def test_reasons_survive_the_snapshot_and_an_older_snapshot_reads_as_unknown() -> None:
    stats = _recorded("exhausted")
    snapshot = WorkerSnapshot("w", "h", 1, ("q",), 0.0, 1.0, stats={("q", "t"): stats})
    assert WorkerSnapshot.decode(snapshot.encode()).stats[("q", "t")].by_reason() == {"exhausted": 1}
    older = snapshot.to_json()
    del older["tasks"][0]["d"]
    read = WorkerSnapshot.from_json(older).stats[("q", "t")]
    assert read.dead_lettered == 1 and read.by_reason() == {UNKNOWN_REASON: 1}


def test_merged_and_subtracted_reasons_still_add_up_to_the_total() -> None:
    new, old = _recorded("fatal", "fatal"), TaskStats(dead_lettered=2)
    merged = new.copy()
    merged.add(old)
    assert merged.dead_lettered == 4 and merged.by_reason() == {"fatal": 2, UNKNOWN_REASON: 2}
    later = _recorded("fatal", "fatal", "fatal", "malformed")
    assert later.minus(new).by_reason() == {"fatal": 1, "malformed": 1}
