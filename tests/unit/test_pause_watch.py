"""What a worker makes of the pause set it reads: its queue's pauses only, the last set kept while the store
cannot be read, an expiry honoured between two reads, and how long a paused job is set aside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tqadmin.errors import Unreachable
from tqadmin.pipeline.pausing import PauseWatch
from tqadmin.store.pauses.base import Pause, PauseStore, Target


class FakePauses(PauseStore):
    url = "fake://"

    def __init__(self) -> None:
        self.now_s = 1000.0
        self.pauses: list[Pause] = []
        self.down = False

    def pause(self, target: Target, *, reason: str, who: str, for_s: float | None) -> Pause:
        until = None if for_s is None else self.now_s + for_s
        self.pauses.append(Pause(target, reason, who, self.now_s, until))
        return self.pauses[-1]

    def resume(self, target: Target) -> Pause | None:
        self.pauses = [p for p in self.pauses if p.target != target]
        return None

    def now(self) -> float:
        return self.now_s

    def standing(self) -> tuple[float, list[Pause]]:
        if self.down:
            raise Unreachable("the store is away")
        return self.now_s, [p for p in self.pauses if not p.expired(self.now_s)]

    def reap(self) -> list[Pause]:
        return []

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.t = 50.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def store() -> FakePauses:
    return FakePauses()


def test_only_this_queues_pauses_hold_and_for_how_long(store: FakePauses) -> None:
    clock = Clock()
    watch = PauseWatch("orders", store, recheck_s=10, clock=clock)
    store.pause(Target("orders", "charge"), reason="psp down", who="a", for_s=None)
    store.pause(Target("other"), reason="", who="a", for_s=None)
    store.pause(Target("orders", "mail"), reason="", who="a", for_s=4)
    assert watch.aside("charge") is None  # nothing read yet
    watch.refresh()
    assert watch.aside("charge") == 10  # until resumed: looked at again after the recheck
    assert watch.aside("mail") == pytest.approx(4)  # back when the pause ends
    assert watch.aside("resize") is None
    clock.t += 3
    assert watch.aside("mail") == pytest.approx(1)
    clock.t += 2  # the pause of mail ran out between two reads
    assert watch.aside("mail") is None


def test_a_whole_queue_pause_covers_every_task_type(store: FakePauses) -> None:
    watch = PauseWatch("orders", store, recheck_s=5, clock=Clock())
    store.pause(Target("orders"), reason="", who="a", for_s=60)
    watch.refresh()
    assert watch.aside("anything") == 5 and watch.aside("other") == 5


def test_the_last_set_stands_while_the_store_cannot_be_read(store: FakePauses) -> None:
    watch = PauseWatch("orders", store, recheck_s=10, clock=Clock())
    store.pause(Target("orders"), reason="", who="a", for_s=None)
    watch.refresh()
    store.down = True
    store.pauses = []
    watch.refresh()
    assert watch.aside("t") == 10
    store.down = False
    watch.refresh()
    assert watch.aside("t") is None


def test_without_a_store_nothing_is_paused() -> None:
    watch = PauseWatch("orders", None)
    watch.refresh()
    assert watch.aside("t") is None


def test_an_expiry_is_reaped_and_audited_once_whichever_worker_reads_first(tmp_path: Path) -> None:
    from tqadmin.store.pauses.audit import PauseAudit
    from tqadmin.store.pauses.sqlite import SQLitePauses

    wall = Clock()
    shared = SQLitePauses(tmp_path / "state.db", clock=wall)
    audit_log = tmp_path / "audit.jsonl"
    watches = [
        PauseWatch("orders", shared, clock=wall, auditor=PauseAudit(audit_log, "prod")) for _ in range(2)
    ]
    shared.pause(Target("orders", "charge"), reason="psp down", who="alice", for_s=5)
    for watch in watches:
        watch.refresh()
    assert not audit_log.exists()
    wall.t += 6
    for watch in watches:
        watch.refresh()
        watch.refresh()
    (record,) = [json.loads(line) for line in audit_log.read_text().splitlines()]
    assert record["action"] == "resume" and record["outcome"] == "expired" and record["who"] == "expiry"
    assert record["reason"] == "resumed by expiry" and record["via"] == "worker"
    assert record["paused_by"] == "alice" and record["paused_for"] == "psp down"
    assert record["target"] == "orders" and record["task_type"] == "charge"
    assert all(w.aside("charge") is None for w in watches)
    shared.close()
