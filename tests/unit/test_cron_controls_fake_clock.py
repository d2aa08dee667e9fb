"""The leader and on-call's controls, under a fake clock: a paused schedule's ticks are skipped under the
leader's token (never fired later, by it or by the next leader, not counted missed), the next tick after the
resume fires; a trigger is fired once by the leader alone, with its own id, and one a dead leader claimed is
finished by the next. Pauses and trigger requests live in a real SQLite file on the fake clock."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cron_fakes import FakeClock, MemoryCronStore, Recorder
from tqadmin.pipeline.cron.control import CronControl
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.scheduler import Scheduler
from tqadmin.store.pauses.audit import PauseAudit
from tqadmin.store.pauses.base import Target
from tqadmin.store.pauses.sqlite import SQLitePauses
from tqadmin.store.triggers.sqlite import SQLiteTriggers

BEAT = Schedule("beat", "* * * * * *", "q", "ping", {"zone": "eu"}, misfire_grace=10)


class Rig:
    def __init__(self, tmp: Path) -> None:
        self.clock = FakeClock()
        self.store = MemoryCronStore(self.clock)
        self.pauses = SQLitePauses(tmp / "state.db", clock=self.clock.time)
        self.triggers = SQLiteTriggers(tmp / "state.db", "default", clock=self.clock.time)
        self.audit_path = tmp / "audit.jsonl"
        self.recorders: dict[str, Recorder] = {}
        self.instances: dict[str, Scheduler] = {}

    def add(self, name: str) -> Scheduler:
        self.recorders[name] = Recorder(clock=self.clock)
        log = logging.getLogger(f"test.cron.{name}")
        control = CronControl(self.pauses, self.triggers, PauseAudit(self.audit_path, "p"), log)
        self.instances[name] = Scheduler(
            (BEAT,),
            self.store,
            self.recorders[name],
            instance=name,
            lock_ttl_s=3.0,
            clock=self.clock,
            rng=random.Random(7),
            logger=log,
            control=control,
        )
        return self.instances[name]

    def run(self, seconds: float, *names: str) -> None:
        active = [self.instances[n] for n in (names or self.instances)]
        end = self.clock.time() + seconds
        while self.clock.time() < end:
            for scheduler in active:
                scheduler.step()
            self.clock.advance(0.1)

    def ids(self) -> list[str]:
        return [i for r in self.recorders.values() for i in r.ids]

    def audit(self) -> list[dict[str, object]]:
        path = self.audit_path
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path)
    yield made
    made.pauses.close()
    made.triggers.close()


def test_a_paused_schedules_ticks_are_skipped_by_every_leader_and_resume_fires_the_next(rig: Rig) -> None:
    rig.add("a")
    rig.run(3)
    fired_before = len(rig.ids())
    assert fired_before >= 2
    rig.pauses.pause(Target(schedule="beat"), reason="dw", who="alice", for_s=None)
    paused_at = rig.clock.time()
    rig.run(4)
    rig.instances["a"].shutdown()  # a new leader takes over while the pause stands
    rig.add("b")
    rig.run(4, "b")
    late = [i for i in rig.ids() if int(i.rsplit(":", 1)[1]) > paused_at + 0.5]
    assert late == []
    assert rig.store.missed_counts().get("beat", 0) == 0  # skipped, not missed
    rig.pauses.resume(Target(schedule="beat"))
    resumed_at = rig.clock.time()
    rig.run(3, "b")
    after = sorted(int(i.rsplit(":", 1)[1]) for i in rig.ids() if int(i.rsplit(":", 1)[1]) > paused_at + 0.5)
    assert after and after[0] >= resumed_at  # the ticks due while paused never fire, late or not
    skips = [r for r in rig.audit() if r["action"] == "skip"]
    assert sum(int(str(r["count"])) for r in skips) >= 7
    assert {r["paused_by"] for r in skips} == {"alice"}


def test_a_trigger_fires_once_with_its_own_id_through_the_leader_only(rig: Rig) -> None:
    rig.add("a")
    rig.add("b")
    rig.run(1)
    request = rig.triggers.request("beat", "alice")
    rig.run(2)
    triggered = [i for i in rig.ids() if ":trigger:" in i]
    assert triggered == [f"cron:beat:trigger:{request.ident}"]
    assert rig.triggers.waiting() == []
    job = next(j for r in rig.recorders.values() for _, j in r.published if j.id == triggered[0])
    assert job.fields["triggered_by"] == "alice" and job.fields["zone"] == "eu"
    record = rig.store.tick(request.tick_name, request.ident)
    assert record is not None and record.token == job.fields["fencing_token"]


def test_a_trigger_of_a_schedule_no_instance_runs_is_dropped_and_said(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.add("a")
    rig.triggers.request("nightly", "alice")
    with caplog.at_level(logging.WARNING):
        rig.run(1)
    assert rig.triggers.waiting() == [] and not [i for i in rig.ids() if ":trigger:" in i]
    assert "names no schedule this cron runs" in caplog.text


def test_a_trigger_a_dead_leader_claimed_is_fired_by_the_next(rig: Rig) -> None:
    rig.add("a")
    rig.run(1)
    request = rig.triggers.request("beat", "alice")
    rig.recorders["a"].failing = True  # its publish fails: claimed, not fired
    rig.run(0.5, "a")
    assert rig.triggers.waiting() == [request]
    del rig.instances["a"]  # dies holding the lease; the next leader waits it out
    rig.add("b")
    rig.run(6, "b")
    assert [i for i in rig.recorders["b"].ids if ":trigger:" in i] == [request.job_id]
    assert rig.triggers.waiting() == []
