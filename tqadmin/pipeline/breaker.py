"""The breaker: a task type that keeps failing in this worker pauses itself for a while (opt in).

The Oban "QueueBreaker" pattern, written with what the worker already has: after ``after`` consecutive failed
runs of one task type in this worker (fatal, transient or timed out: whatever the retry policy then makes of
them), the breaker writes a pause of that task type of its queue to the state store for ``for_s`` seconds,
through the same pause set on-call uses (:mod:`tqadmin.store.pauses.base`). So every worker of the queue sets
the type's jobs aside (unrun, uncharged) within a heartbeat, every face shows it as a pause whose author is
the breaker (``breaker@<worker>``) and whose reason is the last error (clipped, masked), it is audited once,
and it ends by itself when its time is up (or when on-call resumes it earlier). A success resets the count.

What is counted is this worker's own runs, in the order they end. Runs that started before the breaker tripped
and end after it are not counted again: they are the same trouble, already paid for, and counting them would
trip again at once. A type already paused (by on-call, or by another worker's breaker) is never paused over:
an operator's ``forever`` must not be shortened to the breaker's minutes.

Per task: ``@task("charge", break_after=5, break_for="2m")`` wins over the worker's ``--break-after`` and
``--break-for``; ``break_after=0`` keeps a task out of the worker's breaker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tqadmin.pipeline.pausing import PauseWatch
from tqadmin.pipeline.tasks import TaskSpec
from tqadmin.show.masking import clip_masked, shown
from tqadmin.store.pauses.audit import PauseAudit
from tqadmin.store.pauses.base import PauseStore, Target

log = logging.getLogger("tqadmin.worker")

REASON_CHARS = 300
"""The most a breaker's reason holds: the dashboard's row and ``pauses`` show it whole."""
VIA = "breaker"


@dataclass(frozen=True, slots=True)
class BreakRule:
    """Pause a task type for ``for_s`` seconds after ``after`` consecutive failures (0: a default pause
    length only, for the tasks that name their count)."""

    after: int
    for_s: float

    def __post_init__(self) -> None:
        if self.after < 0 or not 0 < self.for_s < float("inf"):
            raise ValueError("a breaker counts failures and pauses for some time")


def rule_for(spec: TaskSpec, default: BreakRule | None) -> BreakRule | None:
    """The rule of ``spec``'s task type: what its decorator sets, the rest from the worker's ``default``;
    ``None`` when that leaves no count (or ``break_after=0``) or no pause length."""
    after = spec.break_after if spec.break_after is not None else default.after if default else 0
    for_s = spec.break_for_s if spec.break_for_s is not None else default.for_s if default else None
    return BreakRule(after, for_s) if after and for_s is not None else None


class Breaker:
    """Counts one worker's consecutive failures by task type and pauses a type that reaches its rule.

    ``store`` and ``auditor`` are where the pause and its record go; ``watch`` is the worker's own view of
    the pauses, read again at once after a trip so this worker stops at once (the others within a
    heartbeat); ``who`` is the pause's author."""

    def __init__(
        self,
        queue: str,
        default: BreakRule | None,
        *,
        store: PauseStore,
        auditor: PauseAudit | None,
        watch: PauseWatch,
        who: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._queue = queue
        self._default = default
        self._store = store
        self._auditor = auditor
        self._watch = watch
        self._who = who
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._tripped_at: dict[str, float] = {}  # task type -> when its breaker last tripped (clock)

    def ran(self, spec: TaskSpec, started: float, error: BaseException | None) -> None:
        """A run of ``spec`` that started at ``started`` (the clock's) ended, failed with ``error`` or not;
        trips the breaker when that makes the failures in a row reach the type's rule."""
        rule = rule_for(spec, self._default)
        if rule is None:
            return
        name = spec.name
        with self._lock:
            if started < self._tripped_at.get(name, float("-inf")):
                return  # under way when it tripped: the same trouble, already paid for
            if error is None:
                self._failures.pop(name, None)
                return
            count = self._failures.get(name, 0) + 1
            if count < rule.after:
                self._failures[name] = count
                return
            self._failures.pop(name, None)
            self._tripped_at[name] = self._clock()
        self._trip(name, rule, count, error)

    def _trip(self, task_type: str, rule: BreakRule, count: int, error: BaseException) -> None:
        reason = clip_masked(
            f"breaker: {count} failures in a row; last: {type(error).__name__}: {error}", REASON_CHARS
        )
        try:
            # unless a pause of it stands (on-call's, or another worker's breaker's a moment ago): one step
            target = Target(self._queue, task_type)
            pause = self._store.pause_unless_paused(target, reason=reason, who=self._who, for_s=rule.for_s)
        except Exception as exc:  # the store away: the next failure tries again
            with self._lock:
                self._failures[task_type] = rule.after - 1
                self._tripped_at.pop(task_type, None)
            log.warning("breaker: could not pause task type %s: %s", shown(task_type), exc)
            return
        if pause is None:
            log.info(
                "breaker: task type %s failed %d times in a row; paused already", shown(task_type), count
            )
            return
        if self._auditor is not None:
            for warning in self._auditor.record("pause", pause, "ok", who=self._who, via=VIA):
                log.warning("%s", warning)
        log.warning(
            "breaker: task type %s failed %d times in a row; paused for %gs (%s)",
            shown(task_type),
            count,
            rule.for_s,
            reason,
        )
        self._watch.refresh()
