"""The breaker's rule: N failed runs in a row of one task type pause it, through the pause set, once; a
success resets the count; runs under way when it tripped are not counted again; a type already paused is never
paused over; the decorator's rule wins over the worker's. Pauses go to a real SQLite pause set."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tqadmin import task
from tqadmin.errors import UsageError
from tqadmin.pipeline.breaker import Breaker, BreakRule, rule_for
from tqadmin.pipeline.pausing import PauseWatch
from tqadmin.pipeline.tasks import TaskSpec
from tqadmin.store.pauses.audit import PauseAudit
from tqadmin.store.pauses.base import Target
from tqadmin.store.pauses.sqlite import SQLitePauses


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _noop(_ctx: object, _job: object) -> None:
    return None


CHARGE = TaskSpec("charge", _noop)
OTHER = TaskSpec("email", _noop)


class Rig:
    def __init__(self, tmp: Path) -> None:
        self.store = SQLitePauses(tmp / "state.db")
        self.audit_path = tmp / "audit.jsonl"
        self.clock = Clock()
        self.watch = PauseWatch("orders", self.store)
        self.breaker = Breaker(
            "orders",
            BreakRule(3, 60),
            store=self.store,
            auditor=PauseAudit(self.audit_path, "prod"),
            watch=self.watch,
            who="breaker@host:42",
            clock=self.clock,
        )

    def fail(self, spec: TaskSpec = CHARGE, error: Exception | None = None) -> None:
        self.clock.t += 1
        self.breaker.ran(spec, self.clock.t - 0.5, error or RuntimeError("PSP answers 503"))

    def succeed(self, spec: TaskSpec = CHARGE) -> None:
        self.clock.t += 1
        self.breaker.ran(spec, self.clock.t - 0.5, None)

    def standing(self) -> list[tuple[Target, str, str]]:
        return [(p.target, p.who, p.reason) for p in self.store.standing()[1]]

    def audited(self) -> list[dict[str, object]]:
        if not self.audit_path.exists():
            return []
        return [json.loads(line) for line in self.audit_path.read_text().splitlines()]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path)
    yield made
    made.store.close()


def test_n_failures_in_a_row_pause_the_task_type_once_with_the_last_error(rig: Rig) -> None:
    rig.fail()
    rig.fail()
    assert rig.standing() == []
    rig.fail(error=ConnectionError("cannot reach https://bob:hunter2@psp.example/pay"))
    (pause,) = rig.store.standing()[1]
    assert pause.target == Target("orders", "charge")
    assert pause.who == "breaker@host:42"
    assert pause.reason.startswith("breaker: 3 failures in a row; last: ConnectionError: cannot reach")
    assert "hunter2" not in pause.reason
    assert pause.until is not None and 59 <= pause.until - pause.since <= 61
    assert rig.watch.aside("charge") is not None  # this worker stops at once, not a heartbeat later
    assert rig.watch.aside("email") is None  # the queue's other types keep running
    (record,) = rig.audited()
    assert record["action"] == "pause" and record["outcome"] == "ok" and record["target"] == "orders"
    assert record["who"] == "breaker@host:42" and record["via"] == "breaker"
    assert record["task_type"] == "charge" and record["reason"] == pause.reason and record["until"]


def test_a_success_resets_the_count(rig: Rig) -> None:
    rig.fail()
    rig.fail()
    rig.succeed()
    rig.fail()
    rig.fail()
    assert rig.standing() == []
    rig.fail()
    assert [t for t, _, _ in rig.standing()] == [Target("orders", "charge")]


def test_each_task_type_is_counted_on_its_own(rig: Rig) -> None:
    rig.fail()
    rig.fail(OTHER)
    rig.fail()
    rig.fail(OTHER)
    assert rig.standing() == []
    rig.fail()
    assert [t.task_type for t, _, _ in rig.standing()] == ["charge"]


def test_runs_under_way_when_it_tripped_are_not_counted_again(rig: Rig) -> None:
    for _ in range(3):
        rig.fail()
    started_before = rig.clock.t - 0.2
    rig.store.resume(Target("orders", "charge"))  # on-call resumes at once
    rig.watch.refresh()
    for _ in range(3):  # the runs that were under way fail too: no second trip
        rig.breaker.ran(CHARGE, started_before, RuntimeError("still down"))
    assert rig.standing() == [] and len(rig.audited()) == 1
    for _ in range(3):  # runs started after the trip count again
        rig.fail()
    assert len(rig.standing()) == 1 and len(rig.audited()) == 2


def test_a_type_already_paused_is_not_paused_over(rig: Rig) -> None:
    rig.store.pause(Target("orders", "charge"), reason="migration", who="alice", for_s=None)
    rig.watch.refresh()
    for _ in range(3):
        rig.fail()
    assert rig.standing() == [(Target("orders", "charge"), "alice", "migration")]
    assert rig.audited() == []


def test_a_store_that_cannot_take_the_pause_is_tried_again_at_the_next_failure(rig: Rig) -> None:
    for _ in range(2):
        rig.fail()
    real = rig.store.pause_unless_paused

    def away(*_a: object, **_k: object) -> object:
        raise OSError("the store is away")

    rig.store.pause_unless_paused = away  # type: ignore[method-assign]
    rig.fail()
    assert rig.audited() == []
    rig.store.pause_unless_paused = real  # type: ignore[method-assign]
    rig.fail()
    assert [t.task_type for t, _, _ in rig.standing()] == ["charge"]


def test_the_decorator_wins_over_the_worker() -> None:
    worker = BreakRule(5, 600)
    assert rule_for(TaskSpec("a", _noop), worker) == worker
    assert rule_for(TaskSpec("a", _noop), None) is None
    assert rule_for(TaskSpec("a", _noop, break_after=2), worker) == BreakRule(2, 600)
    assert rule_for(TaskSpec("a", _noop, break_after=2, break_for_s=30), worker) == BreakRule(2, 30)
    assert rule_for(TaskSpec("a", _noop, break_after=0), worker) is None  # kept out
    assert rule_for(TaskSpec("a", _noop, break_after=2), None) is None  # no pause length anywhere
    assert rule_for(TaskSpec("a", _noop, break_after=2), BreakRule(0, 60)) == BreakRule(2, 60)
    assert rule_for(TaskSpec("a", _noop, break_for_s=30), worker) == BreakRule(5, 30)


def test_the_decorator_takes_a_duration_and_refuses_nonsense() -> None:
    @task("breaker_unit_a", break_after=2, break_for="2m")
    def a(_ctx: object, _job: object) -> None: ...

    from tqadmin.pipeline.tasks import REGISTRY

    spec = REGISTRY.get("breaker_unit_a")
    assert spec is not None and spec.break_after == 2 and spec.break_for_s == 120
    for bad in ("forever", "soon", -1, 0, True, float("inf")):
        with pytest.raises(UsageError, match="break_for"):
            task("breaker_unit_b", break_after=1, break_for=bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="break_after"):
        task("breaker_unit_c", break_after=-1)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--break-after", "3"], "--break-after needs --break-for"),
        (["--break-after", "3", "--break-for", "forever"], "ends by itself"),
        (["--break-after", "3", "--break-for", "soon"], "--break-for 'soon' is not a duration"),
    ],
)
def test_the_worker_refuses_a_breaker_half_said(
    isolated_env: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    from tqadmin.cli import main

    assert main(["worker", "--queue", "q", "--tasks", "tqadmin_no_such_module", *flags]) == 2
    assert said in capsys.readouterr().err
